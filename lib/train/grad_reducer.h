// Data parallel's gradient all-reduce overlapped with backward (what DDP's Reducer does): the
// parameters that take a gradient are packed, last first (about the order backward produces their
// gradients), into buckets of at most `bucket_bytes` of one dtype and device. A hook on each parameter
// copies its gradient into its bucket as soon as autograd has it, and a full bucket is summed over the
// ranks while backward goes on computing the layers below. Buckets start in one fixed order, the same
// on every rank, whatever order the gradients come in. After the first reduced backward the buckets are
// laid out again in the order its gradients arrived on rank 0 (DDP's bucket rebuild): a model whose
// layers are registered in another order than they run then fills its buckets one after another.
//
// Only the last backward of an update is reduced (arm()): earlier micro-batches of gradient
// accumulation communicate nothing, and the bucket gets what they accumulated plus the last one's.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "device/distributed.h"

namespace kg::train {

class GradReducer {
 public:
  GradReducer(device::ProcessGroupPtr group, int64_t bucket_bytes);
  ~GradReducer();
  GradReducer(const GradReducer&) = delete;
  GradReducer& operator=(const GradReducer&) = delete;

  // The parameters to reduce (those that require a gradient, in the model's order, the same on every
  // rank); replaces the hooks and buckets of an earlier, different set. Unarmed.
  void set_params(const std::vector<at::Tensor>& params);
  // The next backward is the update's last: reduce its gradients as they arrive.
  void arm();
  // After the armed backward: starts the buckets still waiting (a parameter that got no gradient adds
  // zeros), waits for every bucket and leaves the average over the ranks in each parameter's .grad
  // (parameters without a .grad on this rank stay without). Disarms.
  void finish();
  // The armed backward failed (out of memory): disarms; true when no bucket had started, so the update
  // can be retried, false when a collective is in flight (the ranks would disagree on a retry).
  bool abandon();

  size_t buckets() const { return buckets_.size(); }
  // The parameters (indexes into set_params' list) of each bucket, in start order (for tests).
  std::vector<std::vector<size_t>> layout() const;
  // Buckets of the last finish() that had started before backward ended (the overlap; for tests/logs).
  size_t started_during_backward() const { return started_during_backward_; }

 private:
  struct Slot {
    size_t bucket = 0;
    int64_t offset = 0;
    bool arrived = false;
  };
  struct Bucket {
    at::Tensor flat;
    std::vector<size_t> params;  // indexes into params_
    size_t pending = 0;
    std::unique_ptr<device::ProcessGroup::Work> work;
  };
  void on_grad(size_t i, const at::Tensor& g);
  void start_ready();  // starts buckets in order while the next one is complete
  void start(Bucket& b);
  void remove_hooks();
  void reset();
  // Buckets over params_ taken in `order` (indexes into params_).
  void plan(const std::vector<size_t>& order);
  // After the first reduced backward: rank 0's arrival order, the layout from then on.
  void rebuild_from_arrivals();

  device::ProcessGroupPtr group_;
  int64_t bucket_bytes_;
  std::vector<at::Tensor> params_;
  std::vector<std::pair<size_t, unsigned>> hooks_;  // (parameter, hook handle)
  std::vector<Slot> slots_;
  std::vector<Bucket> buckets_;
  size_t next_ = 0;               // the next bucket to start
  std::vector<size_t> arrivals_;  // parameters in the order their gradients first arrived (until the rebuild)
  bool rebuilt_ = false;
  bool armed_ = false;
  size_t started_during_backward_ = 0;
  std::mutex mu_;  // hooks run on autograd's threads
};

}  // namespace kg::train
