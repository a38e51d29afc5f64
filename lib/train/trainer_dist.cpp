// The trainer's data-parallel collectives (one process: not called, or a no-op).
#include "train/trainer.h"

#include <torch/torch.h>

namespace kg::train {

void broadcast_weights(model::Network& net, device::ProcessGroup& group) {
  std::vector<at::Tensor> t = net.parameters();
  for (auto& b : net.buffers()) t.push_back(b);
  group.broadcast(t, 0);
}

void Trainer::broadcast_model() {
  if (p_.group) broadcast_weights(*p_.net, *p_.group);
}

bool Trainer::any_rank(bool flag) {
  if (!p_.group) return flag;
  std::vector<at::Tensor> t{torch::full({1}, flag ? 1.0f : 0.0f)};
  p_.group->all_reduce_sum(t);
  return t[0].item<float>() > 0;
}

at::Tensor Trainer::all_reduce_update(std::vector<at::Tensor>& grads, const at::Tensor& group_loss_sum, bool stop_here,
                                      bool* any_stop) {
  // One collective for the gradients, the loss (every rank then agrees on a non-finite skip) and the
  // stop flag. Gradients of the ranks' mean losses, averaged: the gradient of the global batch's mean.
  at::Tensor extra = torch::stack({group_loss_sum.detach().to(torch::kFloat).reshape({}),
                                   torch::full({}, stop_here ? 1.0f : 0.0f, group_loss_sum.options().dtype(torch::kFloat))});
  std::vector<at::Tensor> t(grads);
  t.push_back(extra);
  p_.group->all_reduce_sum(t, p_.dist_bucket_bytes);
  const double w = static_cast<double>(p_.group->world_size());
  torch::NoGradGuard ng;
  for (auto& g : grads) g.div_(w);
  *any_stop = extra[1].item<float>() > 0;
  return extra[0] / w;
}

}  // namespace kg::train
