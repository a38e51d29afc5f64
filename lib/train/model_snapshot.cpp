#include "train/model_snapshot.h"

#include <torch/torch.h>

#include "core/error.h"
#include "train/rng_state.h"

namespace kg::train {

void ModelSnapshot::take(model::Network& net) {
  torch::NoGradGuard ng;
  const auto buffers = net.buffers();
  groups_.clear();
  buffers_ = buffers.size();
  std::vector<std::vector<at::Tensor>> parts;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const auto& b = buffers[i];
    if (!b.defined()) continue;
    size_t g = 0;
    while (g < groups_.size() && !(buffers[groups_[g].members.front()].options().dtype() == b.options().dtype() &&
                                   buffers[groups_[g].members.front()].device() == b.device()))
      ++g;
    if (g == groups_.size()) {
      groups_.emplace_back();
      parts.emplace_back();
    }
    groups_[g].members.push_back(i);
    parts[g].push_back(b.detach().reshape({-1}));
  }
  for (size_t g = 0; g < groups_.size(); ++g) groups_[g].flat = torch::cat(parts[g]);  // a new tensor: a copy
  rng_ = capture_rng();
}

void ModelSnapshot::restore(model::Network& net) const {
  torch::NoGradGuard ng;
  auto now = net.buffers();
  KG_ASSERT(now.size() == buffers_, "model snapshot of ", buffers_, " buffers restored into ", now.size());
  for (const auto& g : groups_) {
    int64_t offset = 0;
    for (size_t i : g.members) {
      const int64_t n = now[i].numel();
      now[i].copy_(g.flat.narrow(0, offset, n).view(now[i].sizes()));
      offset += n;
    }
  }
  restore_rng(rng_);
}

}  // namespace kg::train
