#include "jobs/fit_setup.h"

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
#include "data/transform.h"
#include "jobs/model_setup.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "model/weights.h"
#include "optim/param_groups.h"
#include "optim/schedule.h"
#include "train/step_graphs.h"

namespace kg::jobs {
FitSetup::FitSetup(const JobOptions& opts, const std::string& command, std::vector<std::string> initial_weights)
    : o(opts), initial_weights(std::move(initial_weights)) {
  run = o.recipe.get<train::RunOptions>();
  topt = o.recipe.get<train::TrainOptions>();
  copt = o.recipe.get<train::CheckpointOptions>();
  dopt = o.recipe.get<data::DataOptions>();
  cv = o.recipe.get<data::CvOptions>();
  dev_opts = o.recipe.get<device::DeviceOptions>();
  if (o.dist.active()) dev_opts = device::for_local_rank(dev_opts, o.dist.local_rank, o.dist.local_world_size);
  dev = device::setup(dev_opts);
  if (o.dist.active()) {
    // The rendezvous first: a rank that cannot join fails before the data is read.
    group = device::ProcessGroup::connect(o.dist, dev.device, std::chrono::seconds(dev_opts.dist_timeout_s));
    log(o, "  ranks   " + std::to_string(o.dist.world_size) + " processes (" + group->backend_name() +
               "), global batch " + std::to_string(topt.batch_size * o.dist.world_size) + " = " +
               std::to_string(o.dist.world_size) + " x " + std::to_string(topt.batch_size) +
               (dev_opts.sync_batchnorm ? ", SyncBatchNorm" : "") +
               (dev_opts.dist_overlap ? ", gradients summed during backward" : ", gradients summed after backward") +
               "; rank 0 writes the outputs");
  }
  seed = static_cast<uint64_t>(run.seed);
  threads = std::max<int>(1, static_cast<int>(dopt.num_workers));
  classes = data::infer_classes(dopt);
  task = data::task_name(classes.task);
  recipe = o.recipe;  // validation filled loss.name with data.task's default loss when no layer set it
  log(o, "kgtrain " + command + ": " + dev.description + ", env " + o.env_name + "; checking data...");
  const auto cache_bytes = static_cast<size_t>(dopt.cache_max_gb * (1ull << 30));
  stages = data::size_schedule(dopt);
  geom = data::geometry(dopt);
  // data.cache = "device" normalizes on the device, as uint8_transfer does.
  const bool on_device = dopt.cache == "device", u8 = dopt.uint8_transfer || on_device;
  for (auto& st : stages)
    train_pipes.push_back(std::make_unique<data::Pipeline>(dopt.augment, st.size, true, u8, dopt.reduced_decode));
  eval_pipe = std::make_unique<data::Pipeline>(dopt.augment, geom, false, u8, dopt.reduced_decode);
  if (on_device) data::ResidentImages::check_pipeline(*train_pipes.front(), stages.size());

  if (dopt.cache != "none") cache = std::make_unique<data::ImageCache>(cache_bytes);
  // Nothing else runs yet: the scan decodes on every core, and with data.cache = "ram" its images
  // stay cached, so the first epoch does not decode them again ("device" moves them to the device).
  table = data::load_split(dopt, data::Split::train, classes, /*scan=*/true, std::max(threads, dev.threads),
                           data::fold_columns(cv), cache.get());
  folds = data::assign_folds(table, cv, seed);
  if (on_device) {
    resident = std::make_unique<data::ResidentImages>(table, geom, dev.device, cache_bytes,
                                                      std::max(threads, dev.threads), cache.get());
    cache.reset();
    log(o, "  cache   device: " + std::to_string(resident->size()) + " images, " +
               format_significant(static_cast<double>(resident->bytes()) / (1 << 20), 3) + " MiB uint8 on " +
               dev.device.str() + "; batches are gathered, augmented and normalized there");
  }
  pin = dopt.pin_memory && dev.device.is_cuda();
  if (dev_opts.cuda_graphs) {
    const std::string why = train::graphs_blocker(recipe, group != nullptr);
    cuda_graphs = why.empty();
    if (!cuda_graphs) log(o, "  cuda graphs: off (" + why + ")");
  }
  mix = recipe.get<data::MixupOptions>();
  mixing_possible = classes.task != data::Task::regression;
  KG_CHECK(mixing_possible || !(mix.mixup_alpha > 0 || mix.cutmix_alpha > 0 || mix.cutmix_minmax.has_value()),
           ConfigError,
           "mixup / cutmix mix class labels, and data.task = \"regression\" has none: set mixup.mixup_alpha and "
           "mixup.cutmix_alpha to 0 (and leave mixup.cutmix_minmax unset)");
  K = classes.outputs();

  // Smoke runs: two optimizer updates (each of train.accum_steps micro-batches).
  max_batches = o.smoke ? 2 * topt.accum_steps : -1;
  epochs = o.smoke ? 1 : topt.epochs;
  if (o.smoke) fit_warmup_to_smoke_run();
  metrics = std::make_unique<metric::MetricSet>(recipe, task, K);
  loss = loss::build(recipe, {K, task});
  monitor = metrics->monitor();

  log(o, data_line());
  for (auto& b : table.dropped) log(o, "  bad row skipped: " + b.where + ": id " + b.id + ": " + b.reason);
}

FitSetup::~FitSetup() = default;

void FitSetup::fit_warmup_to_smoke_run() {
  auto positive = [&](const char* key) {
    const config::Entry* e = recipe.find(key);
    return e && e->value.is_number() && e->value.get<double>() > 0;
  };
  if (topt.mode == "fine_tune" || !(positive("schedule.warmup_steps") || positive("schedule.warmup_epochs"))) return;
  const auto n_train = static_cast<int64_t>(split_of(cv.run_folds.front()).first.size());
  int64_t total = 0, per_epoch = 1;
  for (int64_t e = 0; e < topt.epochs; ++e) total += per_epoch = updates_in_epoch(n_train, e, topt.epochs, -1);
  (void)optim::build_schedule(recipe, {1e-3, total, per_epoch});  // the real run's errors
  recipe = recipe.with({{"schedule.warmup_steps", 1}, {"schedule.warmup_epochs", 0.0}}, config::Origin::command_line());
  log(o, "  smoke   the warm-up is cut to 1 update (the real run's warm-up fits its " + std::to_string(total) +
             " updates)");
}

int64_t FitSetup::batch_at(int64_t epoch, int64_t n_epochs) const {
  auto& st = stages[data::stage_at(stages, epoch, n_epochs)];
  return st.batch_size > 0 ? st.batch_size : topt.batch_size;
}

std::pair<std::vector<int64_t>, std::vector<int64_t>> FitSetup::split_of(int64_t k) const {
  std::pair<std::vector<int64_t>, std::vector<int64_t>> s;
  for (int64_t i = 0; i < table.size(); ++i) (folds[static_cast<size_t>(i)] == k ? s.second : s.first).push_back(i);
  KG_CHECK(!s.first.empty() && !s.second.empty(), DataError, "fold ", k, " of ", cv.folds, " leaves ", s.first.size(),
           " training and ", s.second.size(), " validation rows; both need at least one");
  return s;
}

int64_t FitSetup::updates_in_epoch(int64_t n_train, int64_t epoch, int64_t n_epochs, int64_t batch_cap) const {
  // Data parallel: one update per global batch (every rank's batch of the same step).
  const int64_t b = data::num_batches(n_train, batch_at(epoch, n_epochs) * o.dist.world_size, true, batch_cap);
  return (b + topt.accum_steps - 1) / topt.accum_steps;
}

std::function<int64_t(int64_t, int64_t)> FitSetup::steps_of(int64_t n_train) const {
  return [this, n_train](int64_t epoch, int64_t n_epochs) {
    return updates_in_epoch(n_train, epoch, n_epochs, max_batches);
  };
}

std::shared_ptr<model::Network> FitSetup::build_net(const std::vector<int64_t>& train_rows) {
  torch::manual_seed(seed);
  auto net = model::build(recipe, model_context(geom, classes, table.feature_dim, dopt.target_transform));
  weight_notes.clear();
  if (auto& r = net->pretrained_report())
    weight_notes.push_back("model.pretrained " + recipe.get<model::ModelOptions>().pretrained + ": " + r->str());
  if (net->target_scale().active())
    fit_target_scale(*net, train_rows.empty() ? split_of(cv.run_folds.front()).first : train_rows);
  for (auto& f : initial_weights)
    weight_notes.push_back("--weights " + f + ": " +
                           model::load_weights(*net, model::read_safetensors(f), {}, f).str());
  return net;
}

void FitSetup::fit_target_scale(model::Network& net, const std::vector<int64_t>& rows) {
  auto& ts = net.target_scale();
  const int64_t K = table.value_dim;
  KG_ASSERT(K == net.num_outputs() && !rows.empty(), "target scale: ", K, " target columns for ", net.num_outputs(),
            " outputs");
  const bool log1p = dopt.target_transform == "log1p";
  std::vector<float> v;
  v.reserve(rows.size() * static_cast<size_t>(K));
  for (int64_t r : rows)
    for (int64_t k = 0; k < K; ++k) {
      const float x = table.values[static_cast<size_t>(r * K + k)];
      const auto& row = table.rows[static_cast<size_t>(r)];
      KG_CHECK(std::isfinite(x) && (!log1p || x > -1.0f), DataError, row.where, ": id ", row.id, ": target ",
               classes.names[static_cast<size_t>(k)], " = ", x,
               log1p ? "; data.target_transform = \"log1p\" needs finite values above -1"
                     : "; data.target_transform needs finite targets");
      v.push_back(x);
    }
  ts.fit(torch::from_blob(v.data(), {static_cast<int64_t>(rows.size()), K}, at::kFloat).clone());
  target_note =
      ts.describe() + (ts.fitted_buffers() ? ", fitted on " + std::to_string(rows.size()) + " training rows" : "");
}

std::unique_ptr<data::Loader> FitSetup::train_loader(const std::vector<int64_t>& rows, int64_t epoch, int64_t n_epochs,
                                                     int64_t start) const {
  data::LoaderOptions lo{batch_at(epoch, n_epochs),
                         true,
                         true,
                         static_cast<int>(dopt.num_workers),
                         static_cast<int>(dopt.prefetch),
                         seed,
                         epoch,
                         max_batches,
                         cache.get(),
                         pin};
  lo.resident = resident.get();
  lo.start_batch = start;
  lo.shard_rank = o.dist.rank;
  lo.shard_count = o.dist.world_size;
  const auto& pipe = *train_pipes[data::stage_at(stages, std::min(epoch, n_epochs - 1), n_epochs)];
  return std::make_unique<data::Loader>(table, rows, pipe, lo);
}

bool FitSetup::shards_validation(size_t valid_rows) const {
  // --smoke evaluates 2 batches: not a share of anything.
  return group && max_batches < 0 && valid_rows >= static_cast<size_t>(o.dist.world_size);
}

std::unique_ptr<data::Loader> FitSetup::valid_loader(const std::vector<int64_t>& all_rows) const {
  const auto rows =
      shards_validation(all_rows.size()) ? data::shard_rows(all_rows, o.dist.rank, o.dist.world_size) : all_rows;
  data::LoaderOptions vo{train::eval_batch_size(topt),
                         false,
                         false,
                         static_cast<int>(dopt.num_workers),
                         static_cast<int>(dopt.prefetch),
                         seed,
                         0,
                         max_batches,
                         cache.get(),
                         pin};
  vo.resident = resident.get();
  return std::make_unique<data::Loader>(table, rows, *eval_pipe, vo);
}

std::function<void(at::Tensor&, at::Tensor&, int64_t, int64_t)> FitSetup::mix_fn() const {
  if (!mixing_possible || !(data::mixup_enabled(mix, 0) || mix.off_epoch > 0)) return {};
  return [this](at::Tensor& x, at::Tensor& y, int64_t epoch, int64_t index) {
    if (data::mixup_enabled(mix, epoch)) data::apply_mixup(mix, x, y, K, seed, epoch, index);
  };
}

std::string FitSetup::data_line() const {
  const auto first_split = split_of(cv.run_folds.front());
  std::string sizes;
  for (auto& st : stages)
    sizes += (sizes.empty() ? "" : ", ") + std::to_string(st.size.height) + "x" + std::to_string(st.size.width) +
             (stages.size() > 1 ? " from " + format_significant(st.start * 100, 3) + "%" : "");
  std::string fold_text;
  for (auto k : cv.run_folds) fold_text += (fold_text.empty() ? "" : ",") + std::to_string(k);
  return "  data    " + table.csv_path + " (" + data::resolve_format(dopt) + "): " + std::to_string(table.size()) +
         " rows" + (table.dropped.empty() ? "" : " (" + std::to_string(table.dropped.size()) + " bad rows skipped)") +
         ", " + task + ", " + std::to_string(classes.size()) +
         (task == "regression" ? (classes.size() == 1 ? " target" : " targets") : " classes") + "; fold" +
         (cv.run_folds.size() > 1 ? "s " : " ") + fold_text + " of " + std::to_string(cv.folds) + " (" + cv.strategy +
         "): " + std::to_string(first_split.first.size()) + " train, " + std::to_string(first_split.second.size()) +
         " valid; input " + std::to_string(geom.channels) + "x" + sizes;
}

}  // namespace kg::jobs
