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
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

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
#include "train/progress.h"

namespace kg::train {

class GradReducer;
class GraphedSteps;
struct MicroStep;

// Where the loop stands; saved in every checkpoint (state.json "trainer").
struct TrainState {
  int64_t epoch = 0;            // epochs completed
  int64_t batch = 0;            // micro-batches consumed in the current epoch
  int64_t step = 0;             // optimizer updates so far (skipped ones included: the schedule's index)
  int64_t skipped_updates = 0;  // non-finite updates skipped so far
  int64_t nan_streak = 0;       // consecutive skipped updates
  double epoch_loss_sum = 0;    // training loss summed over the epoch's micro-batches so far
  int64_t epoch_loss_count = 0;
  int64_t epoch_images = 0;
  double epoch_seconds = 0;  // training time of the epoch so far (resumed epochs add up)
  int64_t train_images = 0;  // whole run
  double train_seconds = 0;
  double elapsed_seconds = 0;  // wall time of completed epochs (validation included), across resumes
  std::optional<double> best;  // monitored value of checkpoints/best
  int64_t best_epoch = 0;
  std::string best_from;                             // "model" or a variant ("ema", "swa")
  nlohmann::json history = nlohmann::json::array();  // one object per completed epoch (metrics.jsonl)
  std::string stop_reason;                           // set when a callback ends the run early
  int64_t oom_halvings = 0;  // out-of-memory back-offs: micro-batches are loader batches / 2^this
  nlohmann::json oom_events = nlohmann::json::array();  // one object per back-off (epoch, update, from, to)
  int64_t world_size = 1;  // processes that trained (batch counts global batches of batch_size * world_size)

  nlohmann::json to_json() const;
  static TrainState from_json(const nlohmann::json& j);
};

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
  std::string task = "multiclass";
  device::Precision precision = device::Precision::fp32;  // device.precision: the forward pass under autocast
  device::LossScaler scaler;  // fp16: enabled (DeviceInfo::make_scaler); a pass-through otherwise
  int64_t fake_oom_above =
      -1;  // test hook KGTRAIN_FAKE_OOM_ABOVE: micro-batches above this many images "run out of memory" (-1 = off)
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
  bool cuda_graphs = false;
  bool emulate_graphs =
      false;  // test hook KGTRAIN_EMULATE_CUDA_GRAPHS: graphs emulated by re-running the step (any device)
};

// Rank 0's parameters and buffers on every rank of `group`, in place.
void broadcast_weights(model::Network& net, device::ProcessGroup& group);

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
  const EpochReport* last_report() const { return last_report_.get(); }

 private:
  void restore(const Checkpoint& c);  // resume() without its checks of the state it reads
  bool run_epoch(int64_t epoch);      // false when stopped mid-epoch
  void end_epoch(int64_t epoch);
  void apply_plan_for_epoch(int64_t epoch);
  // `stop_here`: this rank wants to stop after the update (shared with the others in data parallel runs).
  bool finish_update(const at::Tensor& group_loss_sum, bool stop_here);
  // Forward + backward of loaded batch `b` in micro-batches of the current size (after OOM back-offs);
  // each micro-batch's mean loss weighs 1 / `group_chunks`. Adds to the group's loss sums.
  struct GroupSums;
  // `last_of_group`: b is the update's last loaded batch (its last micro-batch's backward is reduced).
  void run_loaded_batch(const data::Batch& b, int64_t epoch, int64_t full_batch, int64_t group_chunks,
                        bool last_of_group, GroupSums& g);
  // train.oom_backoff: on CUDA, or with the fake-OOM test hook.
  bool oom_backoff_enabled() const;
  // Halves the micro-batch after an out-of-memory error (DeviceError at one image); logs and records it.
  void back_off(int64_t epoch, int64_t full_batch, const std::string& what);
  void select_best(EpochReport& r);
  // Data parallel helpers (no-ops for one process).
  void broadcast_model();
  // Gradients and the group's loss averaged over the ranks; the loss sum returned.
  at::Tensor all_reduce_update(std::vector<at::Tensor>& grads, const at::Tensor& group_loss_sum, bool stop_here,
                               bool* any_stop, int* any_signal);
  // Data parallel, every rank at once: whether any rank wants to stop (`stop`), and the signal one of
  // them received (0 for none; the ranks' common one when several did). Without a group: its own.
  struct StopVote {
    bool any = false;
    int signal = 0;
  };
  StopVote vote_stop(bool stop, int signal);
  // The epoch's training loss sum, loss count and images so far: the whole job's with several processes
  // (a collective: every rank calls it at the same update).
  std::array<double, 3> epoch_sums();
  // [stop, signal number, ranks with a signal], summed over the ranks, as a vote.
  static StopVote read_vote(float stop_sum, float signal_sum, float signalled);
  // The overlapped reducer's parameters: those that take a gradient this epoch.
  void reduce_params_of_epoch();
  // An update failed (out of memory) after its gradients began to be reduced: false when a retry is unsafe.
  bool abandon_reduction();
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
  CheckpointStore store_;
  std::vector<std::vector<at::Tensor>> group_params_;  // per layer group
  std::vector<bool> norm_param_;                       // parallel to net parameters: inside a normalization layer
  std::vector<at::Tensor> params_;
  std::unique_ptr<GradReducer> reducer_;  // data parallel with device.dist_overlap
  std::unique_ptr<GraphedSteps> graphs_;  // device.cuda_graphs
  bool has_batch_norm_ = false;           // the OOM back-off stops at two images per micro-batch
  std::unique_ptr<EpochReport> last_report_;
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
