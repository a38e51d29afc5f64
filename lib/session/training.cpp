#include "session/training.h"

#include <chrono>
#include <cmath>

#include <torch/torch.h>

#include <sstream>

#include "core/error.h"
#include "core/strings.h"
#include "data/folds.h"
#include "data/loader.h"
#include "data/resident.h"
#include "data/source.h"
#include "data/collator.h"
#include "data/transform.h"
#include "model/model.h"
#include "model/weights/safetensors.h"
#include "model/weights/weights.h"
#include "optim/param_groups.h"
#include "optim/schedule.h"
#include "session/effective_recipe.h"
#include "session/modality.h"
#include "session/model_input.h"
#include "session/same_job.h"
#include "session/teacher.h"
#include "train/step_graphs.h"

namespace kg::session {
namespace {

// --smoke trains 2 updates: a warm-up is cut to 1 (fine_tune's phases have their own).
Session smoke_session(const Session& given) {
  if (!given.smoke || given.recipe.get<train::TrainOptions>().mode == "fine_tune" || !has_warmup(given.recipe))
    return given;
  Resolutions smoke;
  smoke.smoke_warmup = true;
  Session s = given;
  s.recipe = effective_recipe(given.recipe, smoke).recipe;
  return s;
}

TrainingOptions read_options(const Session& s) {
  TrainingOptions opt;
  opt.run = s.recipe.get<train::RunOptions>();
  opt.train = s.recipe.get<train::TrainOptions>();
  opt.checkpoint = s.recipe.get<train::CheckpointOptions>();
  opt.data = s.recipe.get<data::DataOptions>();
  opt.cv = s.recipe.get<data::CvOptions>();
  opt.mixup = s.recipe.get<data::MixupOptions>();
  opt.device = s.recipe.get<device::DeviceOptions>();
  if (s.dist.active()) opt.device = device::for_local_rank(opt.device, s.dist.local_rank, s.dist.local_world_size);
  return opt;
}

// The rendezvous first: a rank that cannot join fails before the data is read.
device::ProcessGroupPtr join_ranks(const Session& s, const TrainingOptions& opt, const device::DeviceInfo& dev) {
  if (!s.dist.active()) return nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  auto group = device::ProcessGroup::connect(s.dist, dev.device, std::chrono::seconds(opt.device.dist_timeout_s));
  const double met = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  check_same_job(*group, job_fingerprint(s.recipe, binary_identity()));
  s.log("  ranks   " + std::to_string(s.dist.world_size) + " processes (" + group->backend_name() +
        (s.dist.launcher == "slurm" ? ", srun's tasks" : "") + "), met in " + format_significant(met, 2) +
        " s; global batch " + std::to_string(opt.train.batch_size * s.dist.world_size) + " = " +
        std::to_string(s.dist.world_size) + " x " + std::to_string(opt.train.batch_size) +
        (opt.device.sync_batchnorm ? ", SyncBatchNorm" : "") +
        (opt.device.dist_overlap ? ", gradients summed during backward" : ", gradients summed after backward") +
        "; rank 0 writes the outputs");
  return group;
}

// The image pipelines: one per progressive-resizing stage, and the evaluation one.
void build_pipelines(const data::DataOptions& d, TrainingData& data) {
  data.stages = data::size_schedule(d);
  data.geom = data::geometry(d);
  // data.cache = "device" normalizes on the device, as uint8_transfer does.
  const bool u8 = d.uint8_transfer || d.cache == "device";
  for (auto& st : data.stages)
    data.train_pipes.push_back(std::make_unique<data::Pipeline>(d.augment, st.size, true, u8, d.reduced_decode));
  data.eval_pipe = std::make_unique<data::Pipeline>(d.augment, data.geom, false, u8, d.reduced_decode);
  if (d.cache == "device") data::ResidentImages::check_pipeline(*data.train_pipes.front(), data.stages.size());
}

// Mixing would blend the images but not the teacher's predictions of them.
void check_distill_mixing(const config::Recipe& recipe, const data::MixupOptions& m) {
  const std::string teacher = loss::loss_options(recipe).distill_teacher;
  KG_CHECK(
      teacher.empty() || !(m.mixup_alpha > 0 || m.cutmix_alpha > 0 || m.cutmix_minmax.has_value()), ConfigError,
      "loss.distill.teacher = \"", teacher,
      "\" with mixup / cutmix: the mixed images would be scored against the unmixed teacher's predictions; set "
      "mixup.mixup_alpha and mixup.cutmix_alpha to 0 (and leave mixup.cutmix_minmax unset), or unset loss.distill");
}

TrainingData load_training_data(const Session& s, const TrainingOptions& opt, const device::DeviceInfo& dev,
                                const std::string& command) {
  TrainingData data;
  data.threads = std::max<int>(1, static_cast<int>(opt.data.num_workers));
  const int scan_threads = std::max(data.threads, dev.threads);
  modality_of(opt.data).check(s.recipe, command);
  check_distill_mixing(s.recipe, opt.mixup);
  data.classes = data::infer_classes(opt.data);
  data.task = data.classes.task;
  s.log("kgtrain " + command + ": " + dev.description + ", env " + s.env_name + "; checking data...");
  const auto cache_bytes = static_cast<size_t>(opt.data.cache_max_gb * (1ull << 30));
  build_pipelines(opt.data, data);
  if (opt.data.cache != "none") data.cache = std::make_unique<data::ImageCache>(cache_bytes);
  // Nothing else runs yet: the scan decodes on every core, and with data.cache = "ram" its images
  // stay cached, so the first epoch does not decode them again ("device" moves them to the device).
  data.table = data::load_split(opt.data, data::Split::train, data.classes, /*scan=*/true, scan_threads,
                                data::fold_columns(opt.cv), data.cache.get());
  data.folds = data::assign_folds(data.table, opt.cv, static_cast<uint64_t>(opt.run.seed));
  data.collator = modality_of(opt.data).collator(s.recipe, data.table, scan_threads);
  if (data.collator) s.log("  " + data.collator->describe());
  if (opt.data.cache == "device") {
    data.resident = std::make_unique<data::ResidentImages>(data.table, data.geom, dev.device, cache_bytes, scan_threads,
                                                           data.cache.get());
    data.cache.reset();
    s.log("  cache   device: " + std::to_string(data.resident->size()) + " images, " +
          format_significant(static_cast<double>(data.resident->bytes()) / (1 << 20), 3) + " MiB uint8 on " +
          dev.device.str() + "; batches are gathered, augmented and normalized there");
  }
  data.pin = opt.data.pin_memory && dev.device.is_cuda();
  const std::string teacher = loss::loss_options(s.recipe).distill_teacher;
  if (!teacher.empty() && data.task != Task::regression) {                     // regression: loss::distill says why not
    std::vector<bool> trained(static_cast<size_t>(data.table.size()), false);  // by some run fold
    for (size_t r = 0; r < trained.size(); ++r)
      for (auto k : opt.cv.run_folds) trained[r] = trained[r] || data.folds[r] != k;
    data.teacher = load_teacher(teacher, data.table, data.classes, opt.data.id_col, trained);
    s.log("  teacher " + teacher + ": logits for " + std::to_string(data.table.size()) + " rows, " +
          std::to_string(data.teacher.size(1)) + " outputs");
  }
  return data;
}

bool cuda_graphs_in_effect(const Session& s, const TrainingOptions& opt, bool multi_process) {
  if (!opt.device.cuda_graphs) return false;
  const std::string why = train::graphs_blocker(s.recipe, multi_process);
  if (!why.empty()) s.log("  cuda graphs: off (" + why + ")");
  return why.empty();
}

bool mixing_allowed(const data::MixupOptions& m, Task task) {
  const bool possible = task != data::Task::regression;
  KG_CHECK(possible || !(m.mixup_alpha > 0 || m.cutmix_alpha > 0 || m.cutmix_minmax.has_value()), ConfigError,
           "mixup / cutmix mix class labels, and data.task = \"regression\" has none: set mixup.mixup_alpha and "
           "mixup.cutmix_alpha to 0 (and leave mixup.cutmix_minmax unset)");
  return possible;
}

}  // namespace

TrainingContext::TrainingContext(const Session& given, const std::string& command,
                                 std::vector<std::string> initial_weights)
    : session(smoke_session(given)),
      opt(read_options(session)),
      dev(device::setup(opt.device)),
      group(join_ranks(session, opt, dev)),
      data(load_training_data(session, opt, dev, command)),
      seed(static_cast<uint64_t>(opt.run.seed)),
      outputs(data.classes.outputs()),
      max_batches(session.smoke ? 2 * opt.train.accum_steps : -1),  // smoke runs: two optimizer updates
      epochs(session.smoke ? 1 : opt.train.epochs),
      cuda_graphs(cuda_graphs_in_effect(session, opt, group != nullptr)),
      mixing_possible(mixing_allowed(opt.mixup, data.task)),
      metrics(std::make_unique<metric::MetricSet>(session.recipe, data.task, outputs)),
      loss(loss::build(session.recipe, {outputs, data.task})),
      monitor(metrics->monitor()),
      initial_weights_(std::move(initial_weights)) {
  if (session.smoke && opt.train.mode != "fine_tune" && has_warmup(given.recipe)) check_real_warmup(given.recipe);
  session.log(data_line());
  for (auto& b : data.table.dropped) session.log("  bad row skipped: " + b.where + ": id " + b.id + ": " + b.reason);
}

TrainingContext::~TrainingContext() = default;

void TrainingContext::check_real_warmup(const config::Recipe& real) const {
  const int64_t n_train = samples_in(split_of(opt.cv.run_folds.front()).first);
  int64_t total = 0, per_epoch = 1;
  for (int64_t e = 0; e < opt.train.epochs; ++e)
    total += per_epoch = updates_in_epoch(n_train, e, opt.train.epochs, -1);
  (void)optim::build_schedule(real, {1e-3, total, per_epoch});  // the real run's errors
  session.log("  smoke   the warm-up is cut to 1 update (the real run's warm-up fits its " + std::to_string(total) +
              " updates)");
}

int64_t TrainingContext::batch_at(int64_t epoch, int64_t n_epochs) const {
  auto& st = data.stages[data::stage_at(data.stages, epoch, n_epochs)];
  return st.batch_size > 0 ? st.batch_size : opt.train.batch_size;
}

std::pair<std::vector<int64_t>, std::vector<int64_t>> TrainingContext::split_of(int64_t k) const {
  std::pair<std::vector<int64_t>, std::vector<int64_t>> s;
  for (int64_t i = 0; i < data.table.size(); ++i)
    (data.folds[static_cast<size_t>(i)] == k ? s.second : s.first).push_back(i);
  KG_CHECK(!s.first.empty() && !s.second.empty(), DataError, "fold ", k, " of ", opt.cv.folds, " leaves ",
           s.first.size(), " training and ", s.second.size(), " validation rows; both need at least one");
  return s;
}

int64_t TrainingContext::updates_in_epoch(int64_t n_train, int64_t epoch, int64_t n_epochs, int64_t batch_cap) const {
  // Data parallel: one update per global batch (every rank's batch of the same step).
  const int64_t b = data::num_batches(n_train, batch_at(epoch, n_epochs) * session.dist.world_size, true, batch_cap);
  return (b + opt.train.accum_steps - 1) / opt.train.accum_steps;
}

int64_t TrainingContext::samples_in(const std::vector<int64_t>& rows) const {
  return static_cast<int64_t>(data.collator ? data.collator->samples(rows).size() : rows.size());
}

std::function<int64_t(int64_t, int64_t)> TrainingContext::steps_of(const std::vector<int64_t>& train_rows) const {
  return [this, n_train = samples_in(train_rows)](int64_t epoch, int64_t n_epochs) {
    return updates_in_epoch(n_train, epoch, n_epochs, max_batches);
  };
}

model::ModelContext TrainingContext::model_context() const {
  return session::model_context(data.geom, data.classes, data.table.feature_dim, opt.data.target_transform,
                                modality_of(opt.data).seq_len(opt.data));
}

BuiltNet TrainingContext::build_net(const std::vector<int64_t>& train_rows) const {
  torch::manual_seed(seed);
  BuiltNet out{model::build(session.recipe, model_context()), {}, {}};
  auto& net = *out.net;
  if (auto& r = net.pretrained_report())
    out.weight_notes.push_back("model.pretrained " + session.recipe.get<model::ModelOptions>().pretrained + ": " +
                               r->str());
  if (net.target_scale().active())
    out.target_note = fit_target_scale(net, train_rows.empty() ? split_of(opt.cv.run_folds.front()).first : train_rows);
  for (auto& f : initial_weights_) {
    auto w = model::read_weights_for(f, model::model_name(session.recipe));
    out.weight_notes.push_back("--weights " + w.source + ": " +
                               model::load_weights(net, std::move(w.tensors), {}, w.source).str());
  }
  return out;
}

std::string TrainingContext::fit_target_scale(model::Network& net, const std::vector<int64_t>& rows) const {
  auto& ts = net.target_scale();
  const int64_t cols = data.table.value_dim;
  KG_ASSERT(cols == net.num_outputs() && !rows.empty(), "target scale: ", cols, " target columns for ",
            net.num_outputs(), " outputs");
  const bool log1p = opt.data.target_transform == "log1p";
  std::vector<float> v;
  v.reserve(rows.size() * static_cast<size_t>(cols));
  for (int64_t r : rows)
    for (int64_t k = 0; k < cols; ++k) {
      const float x = data.table.values[static_cast<size_t>(r * cols + k)];
      const auto& row = data.table.rows[static_cast<size_t>(r)];
      KG_CHECK(std::isfinite(x) && (!log1p || x > -1.0f), DataError, row.where, ": id ", row.id, ": target ",
               data.classes.names[static_cast<size_t>(k)], " = ", x,
               log1p ? "; data.target_transform = \"log1p\" needs finite values above -1"
                     : "; data.target_transform needs finite targets");
      v.push_back(x);
    }
  ts.fit(torch::from_blob(v.data(), {static_cast<int64_t>(rows.size()), cols}, at::kFloat).clone());
  return ts.describe() + (ts.fitted_buffers() ? ", fitted on " + std::to_string(rows.size()) + " training rows" : "");
}

std::unique_ptr<data::Loader> TrainingContext::train_loader(const std::vector<int64_t>& rows, int64_t epoch,
                                                            int64_t n_epochs, int64_t start) const {
  data::LoaderOptions lo{batch_at(epoch, n_epochs),
                         true,
                         true,
                         static_cast<int>(opt.data.num_workers),
                         static_cast<int>(opt.data.prefetch),
                         seed,
                         epoch,
                         max_batches,
                         data.cache.get(),
                         data.pin};
  lo.resident = data.resident.get();
  lo.start_batch = start;
  lo.shard_rank = session.dist.rank;
  lo.shard_count = session.dist.world_size;
  lo.collator = data.collator.get();
  lo.group_by_length = opt.data.group_by_length;
  lo.teacher = data.teacher;
  const auto& pipe = *data.train_pipes[data::stage_at(data.stages, std::min(epoch, n_epochs - 1), n_epochs)];
  return std::make_unique<data::Loader>(data.table, rows, pipe, lo);
}

bool TrainingContext::shards_validation(size_t valid_rows) const {
  // --smoke evaluates 2 batches: not a share of anything.
  return group && max_batches < 0 && valid_rows >= static_cast<size_t>(session.dist.world_size);
}

std::unique_ptr<data::Loader> TrainingContext::valid_loader(const std::vector<int64_t>& all_rows,
                                                            int64_t batch_cap) const {
  const auto rows = shards_validation(all_rows.size())
                        ? data::shard_rows(all_rows, session.dist.rank, session.dist.world_size)
                        : all_rows;
  data::LoaderOptions vo{train::eval_batch_size(opt.train),
                         false,
                         false,
                         static_cast<int>(opt.data.num_workers),
                         static_cast<int>(opt.data.prefetch),
                         seed,
                         0,
                         batch_cap >= 0 ? batch_cap : max_batches,
                         data.cache.get(),
                         data.pin};
  vo.resident = data.resident.get();
  vo.collator = data.collator.get();
  return std::make_unique<data::Loader>(data.table, rows, *data.eval_pipe, vo);
}

std::function<void(at::Tensor&, at::Tensor&, int64_t, int64_t)> TrainingContext::mix_fn() const {
  if (!mixing_possible || !(data::mixup_enabled(opt.mixup, 0) || opt.mixup.off_epoch > 0)) return {};
  return [this](at::Tensor& x, at::Tensor& y, int64_t epoch, int64_t index) {
    if (data::mixup_enabled(opt.mixup, epoch)) data::apply_mixup(opt.mixup, x, y, outputs, seed, epoch, index);
  };
}

std::string TrainingContext::data_line() const {
  const auto first_split = split_of(opt.cv.run_folds.front());
  std::string fold_text;
  for (auto k : opt.cv.run_folds) fold_text += (fold_text.empty() ? "" : ",") + std::to_string(k);
  return "  data    " + data.table.csv_path + " (" + data::resolve_format(opt.data) +
         "): " + std::to_string(data.table.size()) + " rows" +
         (data.table.dropped.empty() ? "" : " (" + std::to_string(data.table.dropped.size()) + " bad rows skipped)") +
         ", " + task_name(data.task) + ", " + std::to_string(data.classes.size()) +
         (data.task == Task::regression ? (data.classes.size() == 1 ? " target" : " targets") : " classes") + "; fold" +
         (opt.cv.run_folds.size() > 1 ? "s " : " ") + fold_text + " of " + std::to_string(opt.cv.folds) + " (" +
         opt.cv.strategy + "): " + std::to_string(first_split.first.size()) + " train, " +
         std::to_string(first_split.second.size()) + " valid; input " + modality_of(opt.data).describe_input(opt.data);
}

}  // namespace kg::session
