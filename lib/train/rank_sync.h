// The trainer's data-parallel collaborator: everything the ranks of a process group agree on during
// training. Gradients averaged before every update (in buckets during backward with device.dist_overlap,
// else after it), the update's loss and the stop votes carried along, the epoch's sums, rank 0's weights.
// With one process (no group) every call is a no-op or returns this process's own values.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

#include "device/distributed.h"
#include "model/model.h"

namespace kg::train {

class GradReducer;

// Rank 0's parameters and buffers on every rank of `group`, in place.
void broadcast_weights(model::Network& net, device::ProcessGroup& group);

// Whether any rank wants to stop, and the signal one of them received (0 for none; the ranks' common
// one when several did).
struct StopVote {
  bool any = false;
  int signal = 0;
};

class RankSync {
 public:
  // `overlap`: buckets summed while backward runs (GradReducer); off with CUDA graphs, whose replays
  // run backward without the reducer's hooks.
  RankSync(device::ProcessGroupPtr group, int64_t bucket_bytes, bool overlap);
  ~RankSync();

  bool active() const { return group_ != nullptr; }
  int world_size() const;
  // Rank 0's parameters and buffers on every rank (DDP's constructor does the same).
  void broadcast_weights(model::Network& net);
  // Rank 0's buffers (BatchNorm running statistics, DDP's broadcast_buffers).
  void broadcast_buffers(model::Network& net);
  // The parameters that take a gradient this epoch (the overlapped reducer's buckets).
  void set_trainable(const std::vector<at::Tensor>& params);
  // The next backward is the update's last: the overlapped reducer sends its buckets during it.
  void arm_last_backward();
  // An update failed (out of memory) after its gradients began to be reduced: false when a retry is unsafe.
  bool abandon();

  struct Update {
    at::Tensor loss_sum;  // the ranks' loss sums, averaged
    StopVote vote;
  };
  // The update's gradients and loss averaged over the ranks, with the stop vote (this rank's `stop_here`
  // or a signal that arrived).
  Update all_reduce_update(std::vector<at::Tensor>& grads, const at::Tensor& group_loss_sum, bool stop_here);
  // Every rank at once: whether any wants to stop, and the signal.
  StopVote vote(bool stop, int signal);
  // `local` summed over the ranks (the epoch's loss sum, loss count and images).
  std::array<double, 3> sum(std::array<double, 3> local);

 private:
  static StopVote read_vote(float stop_sum, float signal_sum, float signalled);
  device::ProcessGroupPtr group_;
  int64_t bucket_bytes_;
  std::unique_ptr<GradReducer> reducer_;
};

}  // namespace kg::train
