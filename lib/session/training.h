// What `fit` and `lr-find` build before they train anything: the table and its classes, the folds, the
// pipelines (one per progressive-resizing stage), the RAM cache, the loss, the metrics, mixup, and how
// a fold's network and loaders are made. One place, so the lr finder sweeps exactly the stream fit trains on.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "config/recipe.h"
#include "data/mixup.h"
#include "data/options.h"
#include "data/table.h"
#include "device/device.h"
#include "device/distributed.h"
#include "loss/loss.h"
#include "model/model.h"
#include "metric/metric_set.h"
#include "session/session.h"
#include "train/options.h"

namespace kg::data {
class Pipeline;
class ImageCache;
class Loader;
class ResidentImages;
class Collator;
}  // namespace kg::data

namespace kg::session {

// The recipe's sections a training run reads, decoded once.
struct TrainingOptions {
  train::RunOptions run;
  train::TrainOptions train;
  train::CheckpointOptions checkpoint;
  data::DataOptions data;
  data::CvOptions cv;
  data::MixupOptions mixup;
  device::DeviceOptions device;  // the recipe's [device], with this rank's GPU and thread share
};

// The training table and what reads it: classes, folds, the pipelines, the caches.
struct TrainingData {
  data::ClassList classes;
  Task task = Task::multiclass;  // classes.task
  data::Table table;
  std::vector<int> folds;  // fold of every table row
  std::vector<data::SizeStage> stages;
  data::ImageGeometry geom;                                  // the evaluation size (the last stage)
  std::vector<std::unique_ptr<data::Pipeline>> train_pipes;  // one per stage
  std::unique_ptr<data::Pipeline> eval_pipe;
  std::unique_ptr<data::ImageCache> cache;         // data.cache = "ram"
  std::unique_ptr<data::ResidentImages> resident;  // data.cache = "device": the table's images on the device
  std::unique_ptr<data::Collator> collator;        // the modality's batches (text's tokens); null: the pipelines'
  bool pin = false;                                // pinned host batches (data.pin_memory on a GPU)
  int threads = 1;                                 // data.num_workers, at least 1 (table scan)
  at::Tensor teacher;  // loss.distill: the teacher's logits [table rows, K] (session/teacher.h); undefined: none
};

// A network built for a fold, with what its weights and output scale say about it (fit's and lr-find's log lines).
struct BuiltNet {
  std::shared_ptr<model::Network> net;
  std::vector<std::string> weight_notes;  // what model.pretrained / --weights loaded into it
  std::string target_note;                // its output scale ("" when none)
};

// Everything fit, lr-find, bench, interpret and show-batch set up before they train or look at anything. Built
// once, in the member order below, each part by one builder (training.cpp); read-only afterwards. What a job
// decides later (fit's lr from the finder) lives in the job, not here.
class TrainingContext {
 public:
  // Reads the recipe's sections, sets up the device (and joins the other ranks), loads and checks the training table
  // (logging the "data" line), assigns the folds, builds the pipelines, the loss and the metrics. `command` names the
  // job in the first log line ("fit", "lr-find"). `initial_weights`: fit --weights files, loaded into every fold's
  // new network.
  TrainingContext(const Session& session, const std::string& command, std::vector<std::string> initial_weights = {});
  ~TrainingContext();
  TrainingContext(const TrainingContext&) = delete;
  TrainingContext& operator=(const TrainingContext&) = delete;

  // The session trained in: its recipe is the effective one (session/effective_recipe.h), with --smoke's warm-up cut
  // to one update (the real run's warm-up checked first).
  const Session session;
  const TrainingOptions opt;
  const device::DeviceInfo dev;
  const device::ProcessGroupPtr group;  // multi-process runs (session.dist): connected here; nullptr for one process
  const TrainingData data;
  const uint64_t seed;         // run.seed
  const int64_t outputs;       // model outputs (classes, or regression targets)
  const int64_t max_batches;   // --smoke: 2 updates' worth of micro-batches per epoch; -1 = all
  const int64_t epochs;        // train.epochs (1 with --smoke)
  const bool cuda_graphs;      // device.cuda_graphs in effect (when asked but blocked, the reason was logged)
  const bool mixing_possible;  // not for regression
  const std::unique_ptr<metric::MetricSet> metrics;
  const loss::LossPtr loss;
  const std::string monitor;

  // Micro-batch size in `epoch` of `n_epochs` (progressive resizing may change it).
  int64_t batch_at(int64_t epoch, int64_t n_epochs) const;
  // Table rows of fold k: (train, valid); DataError when either side is empty.
  std::pair<std::vector<int64_t>, std::vector<int64_t>> split_of(int64_t k) const;
  // Optimizer updates per epoch for training on table rows `train_rows` (a Plan's StepsOf): their samples (text's
  // windows with data.stride) in batches.
  std::function<int64_t(int64_t, int64_t)> steps_of(const std::vector<int64_t>& train_rows) const;
  // The samples the loader makes of `rows`: the rows, or with text's data.stride their windows.
  int64_t samples_in(const std::vector<int64_t>& rows) const;
  // The model's context: the data's input (image size or data.max_length), outputs, numeric features.
  model::ModelContext model_context() const;
  // The recipe's network, seeded with run.seed (every fold starts from the same weights), with model.pretrained /
  // --weights applied. On the CPU. Regression with data.target_transform / model.y_range: the output scale is fitted
  // on `train_rows` (default: the first fold's training rows).
  BuiltNet build_net(const std::vector<int64_t>& train_rows = {}) const;
  // fit's training loader of `epoch` (of a plan of `n_epochs`) over `rows`, from micro-batch `start`.
  std::unique_ptr<data::Loader> train_loader(const std::vector<int64_t>& rows, int64_t epoch, int64_t n_epochs,
                                             int64_t start = 0) const;
  // Under data parallel (when every rank gets a row; not --smoke) this rank's data::shard_rows share of `rows`:
  // train::gather_predictions joins the shares. At most `batch_cap` batches (-1: max_batches).
  std::unique_ptr<data::Loader> valid_loader(const std::vector<int64_t>& rows, int64_t batch_cap = -1) const;
  bool shards_validation(size_t valid_rows) const;
  // Mixup/cutmix on a micro-batch (epoch, batch index); empty when the recipe never mixes.
  std::function<void(at::Tensor&, at::Tensor&, int64_t, int64_t)> mix_fn() const;
  // "  data    train.csv (csv): 96 rows, multiclass, 2 classes; fold 1 of 4 (auto): 72 train, 24 valid; input 1x12x12"
  std::string data_line() const;

 private:
  // Optimizer updates in `epoch` for `n_train` rows, at most `batch_cap` micro-batches (-1 = all).
  int64_t updates_in_epoch(int64_t n_train, int64_t epoch, int64_t n_epochs, int64_t batch_cap) const;
  // --smoke trains 2 updates, fewer than any warm-up given in epochs: the session's recipe has it cut to 1 update;
  // `real` (the recipe as given) is checked here against the real run (a warm-up longer than train.epochs still
  // fails), and the cut logged.
  void check_real_warmup(const config::Recipe& real) const;
  // Fits the network's target scale on the targets of `rows` (DataError naming a row log1p cannot map).
  std::string fit_target_scale(model::Network& net, const std::vector<int64_t>& rows) const;

  const std::vector<std::string> initial_weights_;
};

}  // namespace kg::session
