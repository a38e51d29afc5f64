// How many nodes of the autograd graph behind t carry `name` in theirs (a custom node's name is its C++ type's).
#pragma once
#include <string>
#include <unordered_set>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/csrc/autograd/function.h>

namespace kg::test {

inline int count_nodes(const at::Tensor& t, const std::string& name) {
  std::vector<torch::autograd::Node*> todo{t.grad_fn().get()};
  std::unordered_set<torch::autograd::Node*> seen;
  int n = 0;
  while (!todo.empty()) {
    auto* node = todo.back();
    todo.pop_back();
    if (!node || !seen.insert(node).second) continue;
    n += node->name().find(name) != std::string::npos;
    for (auto& e : node->next_edges()) todo.push_back(e.function.get());
  }
  return n;
}

}  // namespace kg::test
