// Multi-process data parallel over torch.distributed's c10d (Gloo on the CPU; NCCL on CUDA builds
// that have it). torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT)
// says where this process stands; `kgtrain fit --nproc N` sets the same for N local processes.
// c10d's headers stay in distributed.cpp: this header is cheap to include.
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace kg::device {

// Gradient buckets (DDP's bucket_cap_mb): `tensors` in the given order, each bucket of one dtype and
// device and at most `bucket_bytes` (a larger tensor gets a bucket of its own); undefined and empty
// tensors are left out. Each bucket lists indexes into `tensors`; the same tensors give the same
// buckets on every rank.
std::vector<std::vector<size_t>> plan_buckets(const std::vector<at::Tensor>& tensors, int64_t bucket_bytes);

// One process's place in the job. world_size 1 = a plain single-process run.
struct DistEnv {
  int rank = 0, world_size = 1, local_rank = 0;
  int local_world_size = 1;  // ranks on this machine (LOCAL_WORLD_SIZE; WORLD_SIZE when unset)
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string launcher;  // "torchrun" (torchrun, fit --nproc), "slurm" (srun's tasks); "" for one process
  // torchrun's agent serves the store at MASTER_PORT (TORCHELASTIC_USE_AGENT_STORE=True: its c10d rendezvous store,
  // shared with the workers), so rank 0 connects to it as the others do; each restart's keys live under
  // /worker/attempt_<TORCHELASTIC_RESTART_COUNT>, as torch.distributed's env:// rendezvous keeps them.
  bool agent_store = false;
  int restart = 0;
  bool active() const { return world_size > 1; }
  bool writer() const { return rank == 0; }
};

// Reads torchrun's variables from `environ` (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT), else srun's (SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_LOCALID, SLURM_STEP_TASKS_PER_NODE at
// SLURM_NODEID; MASTER_ADDR or the node list's first host, MASTER_PORT or 15000 + the job id's last 4 digits:
// device/slurm.h). Neither, or a world of 1 = single process; a missing or malformed variable of a multi-process
// launch is a UsageError naming it.
DistEnv dist_env_from(const std::map<std::string, std::string>& environ);

// A connected process group. Every collective is a blocking call of all ranks in the same order; a
// peer that died or stopped answering within `timeout` ends the call with a DeviceError (exit 4)
// naming the rank and the operation, never a hang.
class ProcessGroup {
 public:
  // Rendezvous through a TCP store at master_addr:master_port (rank 0 serves it).
  static std::shared_ptr<ProcessGroup> connect(const DistEnv& env, const c10::Device& device,
                                               std::chrono::seconds timeout);
  virtual ~ProcessGroup() = default;

  int rank() const { return env_.rank; }
  int world_size() const { return env_.world_size; }
  const std::string& backend_name() const { return backend_; }

  // Sum over ranks, in place. Tensors are packed into flat buckets of at most `bucket_bytes` per dtype
  // (DDP's bucket_cap_mb), one collective per bucket.
  virtual void all_reduce_sum(std::vector<at::Tensor>& tensors, int64_t bucket_bytes = 25 << 20) = 0;
  // A collective in flight; wait() returns once its result is in place (a DeviceError, exit 4, when a
  // rank failed or did not answer in time).
  class Work {
   public:
    virtual ~Work() = default;
    virtual void wait() = 0;
  };
  // Starts the sum over ranks of one contiguous tensor, in place, and returns at once (the gradient
  // buckets overlapped with backward). Every rank must start the same collectives in the same order.
  virtual std::unique_ptr<Work> start_all_reduce_sum(at::Tensor flat) = 0;
  // rank `root`'s values everywhere, in place.
  virtual void broadcast(std::vector<at::Tensor>& tensors, int root = 0) = 0;
  virtual void barrier() = 0;
  // rank `root`'s strings everywhere (any lengths).
  void broadcast_strings(std::vector<std::string>& values, int root = 0);
  // all_reduce_sum of one tensor that autograd differentiates through (the backward is the same sum
  // of the gradients): SyncBatchNorm's statistics.
  at::Tensor differentiable_sum(const at::Tensor& t);

 protected:
  ProcessGroup(DistEnv env, std::string backend) : env_(std::move(env)), backend_(std::move(backend)) {}
  DistEnv env_;
  std::string backend_;
};

using ProcessGroupPtr = std::shared_ptr<ProcessGroup>;

}  // namespace kg::device
