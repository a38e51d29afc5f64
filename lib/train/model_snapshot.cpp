#include "train/model_snapshot.h"

#include <torch/torch.h>

#include "train/rng_state.h"

namespace kg::train {

void ModelSnapshot::take(model::Network& net) {
  buffers.clear();
  for (auto& t : net.buffers()) buffers.push_back(t.detach().clone());
  rng = capture_rng();
}

void ModelSnapshot::restore(model::Network& net) const {
  torch::NoGradGuard ng;
  auto now = net.buffers();
  for (size_t i = 0; i < now.size() && i < buffers.size(); ++i) now[i].copy_(buffers[i]);
  restore_rng(rng);
}

}  // namespace kg::train
