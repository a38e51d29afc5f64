#include "device/backend.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"
#include "device/graph.h"

namespace kg::device {
namespace {
struct Table {
  std::vector<std::unique_ptr<Backend>> items;
  std::vector<std::string> duplicates;
};
Table& table() {
  static Table t;
  return t;
}
}  // namespace

std::string DeviceDescription::str() const {
  if (!is_cuda()) return name.empty() ? "cpu" : name;
  char mem[32];
  std::snprintf(mem, sizeof mem, "%.1f GiB", static_cast<double>(total_memory) / (1024.0 * 1024.0 * 1024.0));
  return name + " (compute capability " + std::to_string(cc_major) + "." + std::to_string(cc_minor) + ", " + mem + ")";
}

std::unique_ptr<GraphCapturer> Backend::graph_capturer(int, std::string* why) const {
  if (why) *why = "CUDA graphs need a CUDA device (this run is on " + name() + ")";
  return nullptr;
}

bool register_backend(std::unique_ptr<Backend> b) {
  auto& t = table();
  for (auto& x : t.items)
    if (x->name() == b->name()) {
      t.duplicates.push_back(b->name());
      return false;
    }
  t.items.push_back(std::move(b));
  std::stable_sort(t.items.begin(), t.items.end(),
                   [](const auto& a, const auto& c) { return a->priority() > c->priority(); });
  return true;
}

std::vector<const Backend*> backends() {
  auto& t = table();
  KG_ASSERT(t.duplicates.empty(), "device backend registered twice: ", t.duplicates.front());
  std::vector<const Backend*> out;
  for (auto& b : t.items) out.push_back(b.get());
  return out;
}

const Backend* find_backend(const std::string& name) {
  for (auto* b : backends())
    if (b->name() == name) return b;
  return nullptr;
}

const Backend& backend_for(c10::DeviceType type) {
  const Backend* b = find_backend(type == c10::kCUDA ? "cuda" : "cpu");
  KG_ASSERT(b != nullptr, "no device backend for ", c10::DeviceTypeName(type));
  return *b;
}

}  // namespace kg::device
