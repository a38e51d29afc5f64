#include "train/rank_sync.h"

#include <cmath>

#include <torch/torch.h>

#include "core/stop.h"
#include "train/grad_reducer.h"

namespace kg::train {

void broadcast_weights(model::Network& net, device::ProcessGroup& group) {
  std::vector<at::Tensor> t = net.parameters();
  for (auto& b : net.buffers()) t.push_back(b);
  group.broadcast(t, 0);
}

RankSync::RankSync(device::ProcessGroupPtr group, int64_t bucket_bytes, bool overlap)
    : group_(std::move(group)), bucket_bytes_(bucket_bytes) {
  if (group_ && overlap) reducer_ = std::make_unique<GradReducer>(group_, bucket_bytes_);
}

RankSync::~RankSync() = default;

int RankSync::world_size() const { return group_ ? group_->world_size() : 1; }

void RankSync::broadcast_weights(model::Network& net) {
  if (group_) train::broadcast_weights(net, *group_);
}

void RankSync::broadcast_buffers(model::Network& net) {
  if (!group_) return;
  std::vector<at::Tensor> bufs = net.buffers();
  group_->broadcast(bufs, 0);
}

void RankSync::set_trainable(const std::vector<at::Tensor>& params) {
  if (!reducer_) return;
  std::vector<at::Tensor> trainable;
  for (auto& p : params)
    if (p.requires_grad()) trainable.push_back(p);
  reducer_->set_params(trainable);
}

void RankSync::arm_last_backward() {
  if (reducer_) reducer_->arm();
}

bool RankSync::abandon() { return !reducer_ || reducer_->abandon(); }

StopVote RankSync::read_vote(float stop_sum, float signal_sum, float signalled) {
  StopVote v;
  v.any = stop_sum > 0;
  if (signalled > 0) v.signal = static_cast<int>(std::lround(signal_sum / signalled));
  return v;
}

std::array<double, 3> RankSync::sum(std::array<double, 3> local) {
  if (!group_) return local;
  at::Tensor t = torch::tensor({local[0], local[1], local[2]}, torch::kDouble);
  std::vector<at::Tensor> v{t};
  group_->all_reduce_sum(v);
  return {t[0].item<double>(), t[1].item<double>(), t[2].item<double>()};
}

StopVote RankSync::vote(bool stop, int signal) {
  if (!group_) return {stop || signal != 0, signal};
  at::Tensor t =
      torch::tensor({stop || signal != 0 ? 1.0f : 0.0f, static_cast<float>(signal), signal != 0 ? 1.0f : 0.0f});
  std::vector<at::Tensor> v{t};
  group_->all_reduce_sum(v);
  return read_vote(t[0].item<float>(), t[1].item<float>(), t[2].item<float>());
}

RankSync::Update RankSync::all_reduce_update(std::vector<at::Tensor>& grads, const at::Tensor& group_loss_sum,
                                             bool stop_here) {
  // The loss (every rank then agrees on a non-finite skip) and the stop vote go with the gradients.
  // Gradients of the ranks' mean losses, averaged: the gradient of the global batch's mean.
  const int signal = stop_signal().load();  // may have arrived since stop_here was decided: it stops too
  const auto scalar = [&](float x) { return torch::full({}, x, group_loss_sum.options().dtype(torch::kFloat)); };
  at::Tensor extra = torch::stack({group_loss_sum.detach().to(torch::kFloat).reshape({}),
                                   scalar(stop_here || signal != 0 ? 1.0f : 0.0f), scalar(static_cast<float>(signal)),
                                   scalar(signal != 0 ? 1.0f : 0.0f)});
  const double w = static_cast<double>(group_->world_size());
  if (reducer_) {
    // The buckets went out during backward: wait for them (averaged in place), then the loss and the votes.
    reducer_->finish();
    std::vector<at::Tensor> t{extra};
    group_->all_reduce_sum(t);
  } else {
    std::vector<at::Tensor> t(grads);
    t.push_back(extra);
    group_->all_reduce_sum(t, bucket_bytes_);
    torch::NoGradGuard ng;
    for (auto& g : grads) g.div_(w);
  }
  at::Tensor votes = extra.slice(0, 1).to(torch::kCPU);  // one device read for the three
  return {extra[0] / w, read_vote(votes[0].item<float>(), votes[1].item<float>(), votes[2].item<float>())};
}

}  // namespace kg::train
