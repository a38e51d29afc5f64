// The training loop: optimizer updates made of `train.accum_steps` micro-batches, the plan's lr /
// momentum / freezing, clipping and the non-finite policy, validation every epoch, "best" selection,
// callbacks at fixed hooks, checkpoints that hold everything an exact resume needs.
//
// fp16: the loss is multiplied by the dynamic loss scale before backward; the gradients are unscaled
// before on_grads_ready/clipping, and an update whose gradients overflowed is skipped with the scale
// backed off (device/loss_scaler.h). The scaler's state is in every checkpoint.
#pragma once
#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include "core/tasks.h"
#include "data/loader.h"
#include "device/distributed.h"
#include "device/loss_scaler.h"
#include "loss/loss.h"
#include "metric/metric_set.h"
#include "model/model.h"
#include "optim/optimizer.h"
#include "train/callback.h"
#include "train/checkpoint_store.h"
#include "train/engine.h"
#include "train/options.h"
#include "train/plan.h"
#include "train/oom_backoff.h"
#include "train/progress.h"
#include "train/rank_sync.h"
#include "train/step.h"
#include "train/trainer_state.h"

namespace kg::train {

class GraphedSteps;
class Adversary;

struct Evaluation {
  std::map<std::string, double> values;  // valid_loss and every metric
  Predictions pred;
};

struct TrainerParts {
  model::Network* net = nullptr;
  optim::Optimizer* opt = nullptr;
  const loss::Loss* loss = nullptr;
  const metric::MetricSet* metrics = nullptr;
  c10::Device device = c10::Device(c10::kCPU);
  Task task = Task::multiclass;
  device::Precision precision = device::Precision::fp32;  // device.precision: the forward pass under autocast
  device::LossScaler scaler;  // fp16: enabled (DeviceInfo::make_scaler); a pass-through otherwise
  // Data parallel: the process group (nullptr = one process). Weights start from rank 0's, gradients are
  // averaged over the ranks before every update (in dist_bucket_bytes buckets), BatchNorm buffers and the
  // validation metrics are rank 0's, and every stop decision is shared.
  device::ProcessGroupPtr group;
  int64_t dist_bucket_bytes = 25 << 20;
  bool dist_overlap = true;  // device.dist_overlap: buckets summed while backward runs (GradReducer)
  // The validation loader yields this rank's data::shard_rows share: evaluate() gathers the predictions.
  bool shard_validation = false;
  // device.cuda_graphs (the job checked graphs_blocker): micro-batches replayed from CUDA graphs
  // (train/step_graphs.h); in data parallel runs the gradients are then summed after backward.
  bool cuda_graphs = false;  // emulated on any device under the KGTRAIN_EMULATE_CUDA_GRAPHS test hook
};

struct TrainerIO {
  std::string dir;    // run dir or fold dir: checkpoints/, metrics.jsonl, plots
  std::string label;  // "fold 2/5" for progress lines ("" = none)
  std::string recipe_toml;
  nlohmann::json provenance;
  nlohmann::json state_fields;  // copied into every state.json (model, classes, input, fold, ...)
  ProgressStyle progress;
  std::function<void(const std::string&)> log;
  // run.time_limit: when this fit (or fold) must be done, final checkpoint and predictions included.
  std::optional<std::chrono::steady_clock::time_point> deadline;
};

// The training loader of `epoch` starting at micro-batch `start_batch`; the validation loader.
using TrainLoaderFn = std::function<std::unique_ptr<data::Loader>(int64_t epoch, int64_t start_batch)>;
using ValidLoaderFn = std::function<std::unique_ptr<data::Loader>()>;
// Changes a micro-batch's input and targets on the device (mixup/cutmix); empty = none.
using MixFn = std::function<void(at::Tensor& x, at::Tensor& y, int64_t epoch, int64_t batch_index)>;

// The last optimizer update, for loggers (read at no extra device sync: the loop reads these anyway).
struct UpdateInfo {
  int64_t step = 0;                                             // updates so far, this one included
  double loss = 0;                                              // the update's mean training loss
  double grad_norm = std::numeric_limits<double>::quiet_NaN();  // before clipping; NaN when not measured
  double lr = 0;
  int64_t images = 0;  // images in the update (this process)
  bool applied = false;
};

struct FitOutcome {
  std::string status;  // completed | early_stopped | time_budget | interrupted
  int signal = 0;      // interrupted: the signal number
};

class Trainer {
 public:
  Trainer(TrainerParts parts, Plan& plan, const TrainOptions& topt, const CheckpointOptions& copt,
          TrainLoaderFn train_loader, ValidLoaderFn valid_loader, MixFn mix, std::vector<CallbackPtr> callbacks,
          TrainerIO io);
  ~Trainer();

  // Restores model, optimizer, plan, RNG, callbacks and the loop's position from a checkpoint;
  // CheckpointError for a state.json that does not hold what kgtrain writes.
  void resume(const Checkpoint& c);
  // Runs the remaining epochs. On a stop signal it saves checkpoints/last at the step boundary and
  // returns status "interrupted" (the job turns it into exit 130/143).
  FitOutcome fit();

  // --- for callbacks and jobs ---
  model::Network& net() { return *p_.net; }
  optim::Optimizer& optimizer() { return *p_.opt; }
  Plan& plan() { return plan_; }
  TrainState& state() { return s_; }
  const TrainerIO& io() const { return io_; }
  const TrainOptions& options() const { return topt_; }
  const metric::MetricSet& metrics() const { return *p_.metrics; }
  const c10::Device& device() const { return p_.device; }
  const device::LossScaler& scaler() const { return p_.scaler; }
  const GraphedSteps* graphs() const { return graphs_.get(); }  // nullptr without device.cuda_graphs
  std::unique_ptr<data::Loader> train_loader(int64_t epoch) { return train_loader_(epoch, 0); }
  // Validation of `weights` (nullptr = the model as it is); the model's weights are restored afterwards.
  Evaluation evaluate(const model::TensorMap* weights = nullptr);
  // Ends the run after the current step (mid-epoch) or epoch; `reason` goes to the log and summary,
  // `status` to the fit outcome (early_stopped, time_budget).
  void request_stop(const std::string& reason, bool mid_epoch = false, const std::string& status = "early_stopped");
  void log(const std::string& line) const;

  // Checkpoint writing (the checkpoint callback and the loop call these).
  CheckpointFiles checkpoint_files(const model::TensorMap* model_weights = nullptr);
  CheckpointStore& store() { return store_; }
  // The monitored value and variant of the epoch's best candidate ("best" selection ran already).
  const UpdateInfo& last_update() const { return last_update_; }

 private:
  void restore(const Checkpoint& c);  // resume() without its checks of the state it reads
  bool run_epoch(int64_t epoch);      // false when stopped mid-epoch
  void end_epoch(int64_t epoch);
  void apply_plan_for_epoch(int64_t epoch);
  // `stop_here`: this rank wants to stop after the update (shared with the others in data parallel runs).
  // One update's loader batches in progress (train/trainer.cpp).
  struct UpdateGroup;
  bool finish_update(const UpdateGroup& g, bool stop_here);
  // Sets the update's lr, momentum and gradients; `first`: its first loader batch.
  void begin_update(UpdateGroup& g, const data::Loader& loader, int64_t first);
  // Runs loaded batch `b` of the update; under train.oom_backoff an out-of-memory error restores the
  // weights the update started from, halves the micro-batch and runs the update's batches again.
  void run_in_update(UpdateGroup& g, const data::Batch& b, int64_t epoch, int64_t full);
  // Forward + backward of `b` in micro-batches of the current size (after OOM back-offs); each
  // micro-batch's mean loss weighs 1 / the group's micro-batches. `last_of_group`: b is the update's last
  // loaded batch (its last micro-batch's backward is reduced).
  void run_loaded_batch(const data::Batch& b, int64_t epoch, int64_t full_batch, bool last_of_group, UpdateGroup& g);
  // Drops the update's work, halves the micro-batch (DeviceError when it cannot shrink), logs it.
  void retry_smaller(UpdateGroup& g, int64_t epoch, int64_t full, const std::string& what);
  void select_best(EpochReport& r);
  // The epoch's training loss sum, loss count and images so far: the whole job's with several processes
  // (a collective: every rank calls it at the same update).
  std::array<double, 3> epoch_sums();
  void save_last();
  MicroStep micro_step() const;

  TrainerParts p_;
  Plan& plan_;
  TrainOptions topt_;
  CheckpointOptions copt_;
  TrainLoaderFn train_loader_;
  ValidLoaderFn valid_loader_;
  MixFn mix_;
  std::vector<CallbackPtr> callbacks_;
  TrainerIO io_;
  TrainState s_;
  GradientPolicy policy_;
  LayerFreezer freezer_;
  CheckpointStore store_;
  std::vector<at::Tensor> params_;
  std::unique_ptr<OomBackoff> backoff_;
  std::unique_ptr<RankSync> ranks_;       // data parallel: what the ranks agree on (no-ops for one process)
  std::unique_ptr<GraphedSteps> graphs_;  // device.cuda_graphs
  std::unique_ptr<Adversary> adversary_;  // train.adversarial (fgm, awp)
  std::unique_ptr<EpochReport> last_report_;
  UpdateInfo last_update_;
  bool stop_requested_ = false, stop_mid_epoch_ = false;
  bool dist_stop_ = false;  // data parallel: a rank asked to stop at the last update
  int dist_signal_ = 0;     // data parallel: the signal a rank received (so every rank ends as interrupted)
  // Data parallel, during a mid-epoch save every rank makes together: the epoch's loss sum, loss count
  // and images summed over the ranks, which the checkpoint stores (a resume gives them to rank 0 alone).
  std::optional<std::array<double, 3>> job_partials_;
  std::string stop_reason_, stop_status_;
  std::chrono::steady_clock::time_point last_mark_ = std::chrono::steady_clock::now();
};

}  // namespace kg::train
