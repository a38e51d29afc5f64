// The trainer's data-parallel collectives (one process: not called, or a no-op).
#include "train/trainer.h"

#include "train/grad_reducer.h"

#include <torch/torch.h>

#include <cmath>

#include "core/stop.h"

namespace kg::train {

void broadcast_weights(model::Network& net, device::ProcessGroup& group) {
  std::vector<at::Tensor> t = net.parameters();
  for (auto& b : net.buffers()) t.push_back(b);
  group.broadcast(t, 0);
}

void Trainer::broadcast_model() {
  if (p_.group) broadcast_weights(*p_.net, *p_.group);
}

Trainer::StopVote Trainer::read_vote(float stop_sum, float signal_sum, float signalled) {
  StopVote v;
  v.any = stop_sum > 0;
  if (signalled > 0) v.signal = static_cast<int>(std::lround(signal_sum / signalled));
  return v;
}

std::array<double, 3> Trainer::epoch_sums() {
  std::array<double, 3> s{s_.epoch_loss_sum, static_cast<double>(s_.epoch_loss_count),
                          static_cast<double>(s_.epoch_images)};
  if (!p_.group) return s;
  at::Tensor t = torch::tensor({s[0], s[1], s[2]}, torch::kDouble);
  std::vector<at::Tensor> v{t};
  p_.group->all_reduce_sum(v);
  return {t[0].item<double>(), t[1].item<double>(), t[2].item<double>()};
}

Trainer::StopVote Trainer::vote_stop(bool stop, int signal) {
  if (!p_.group) return {stop || signal != 0, signal};
  at::Tensor t =
      torch::tensor({stop || signal != 0 ? 1.0f : 0.0f, static_cast<float>(signal), signal != 0 ? 1.0f : 0.0f});
  std::vector<at::Tensor> v{t};
  p_.group->all_reduce_sum(v);
  return read_vote(t[0].item<float>(), t[1].item<float>(), t[2].item<float>());
}

void Trainer::reduce_params_of_epoch() {
  if (!reducer_) return;
  std::vector<at::Tensor> trainable;
  for (auto& p : params_)
    if (p.requires_grad()) trainable.push_back(p);
  reducer_->set_params(trainable);
}

bool Trainer::abandon_reduction() { return !reducer_ || reducer_->abandon(); }

at::Tensor Trainer::all_reduce_update(std::vector<at::Tensor>& grads, const at::Tensor& group_loss_sum, bool stop_here,
                                      bool* any_stop, int* any_signal) {
  // The loss (every rank then agrees on a non-finite skip) and the stop vote go with the gradients.
  // Gradients of the ranks' mean losses, averaged: the gradient of the global batch's mean.
  const int signal = stop_signal().load();  // may have arrived since stop_here was decided: it stops too
  const auto scalar = [&](float x) { return torch::full({}, x, group_loss_sum.options().dtype(torch::kFloat)); };
  at::Tensor extra = torch::stack({group_loss_sum.detach().to(torch::kFloat).reshape({}),
                                   scalar(stop_here || signal != 0 ? 1.0f : 0.0f), scalar(static_cast<float>(signal)),
                                   scalar(signal != 0 ? 1.0f : 0.0f)});
  const double w = static_cast<double>(p_.group->world_size());
  if (reducer_) {
    // The buckets went out during backward: wait for them (averaged in place), then the loss and the votes.
    reducer_->finish();
    std::vector<at::Tensor> t{extra};
    p_.group->all_reduce_sum(t);
  } else {
    std::vector<at::Tensor> t(grads);
    t.push_back(extra);
    p_.group->all_reduce_sum(t, p_.dist_bucket_bytes);
    torch::NoGradGuard ng;
    for (auto& g : grads) g.div_(w);
  }
  at::Tensor votes = extra.slice(0, 1).to(torch::kCPU);  // one device read for the three
  const StopVote v = read_vote(votes[0].item<float>(), votes[1].item<float>(), votes[2].item<float>());
  *any_stop = v.any;
  *any_signal = v.signal;
  return extra[0] / w;
}

}  // namespace kg::train
