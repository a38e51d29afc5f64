// `kgtrain fit`: split, train, validate every epoch, keep checkpoints/last and checkpoints/best.
#include <torch/torch.h>

#include <chrono>
#include <csignal>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "config/resolve.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/stop.h"
#include "core/strings.h"
#include "data/csv.h"
#include "data/folds.h"
#include "data/loader.h"
#include "data/mixup.h"
#include "data/options.h"
#include "data/source.h"
#include "data/table.h"
#include "device/device.h"
#include "jobs/job.h"
#include "jobs/model_setup.h"
#include "loss/loss.h"
#include "metric/metric.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "model/summary.h"
#include "model/weights.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"
#include "train/checkpoint.h"
#include "train/engine.h"
#include "train/options.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kg::jobs {
namespace {

std::string fmt(double v, int prec = 4) {
  std::ostringstream os;
  os.precision(prec);
  os << v;
  return os.str();
}

json state_json(const std::string& model_name, const data::ClassList& classes, const data::ImageGeometry& g,
                int64_t epoch, int64_t step, const std::string& metric, double value) {
  return {{"schema_version", train::kCheckpointSchema},
          {"kgtrain", "fit"},
          {"model", model_name},
          {"classes", classes.to_json()},
          {"input", {{"channels", g.channels}, {"height", g.height}, {"width", g.width}}},
          {"epoch", epoch},
          {"step", step},
          {"metric", {{"name", metric}, {"value", value}}}};
}

}  // namespace

int run_fit(const JobOptions& o) {
  const auto& recipe = o.recipe;
  auto run = train::load_run_options(recipe);
  auto topt = train::load_train_options(recipe);
  auto dopt = data::load_data_options(recipe);
  auto cv = data::load_cv_options(recipe);
  auto dev = device::setup(device::load_options(recipe));
  torch::manual_seed(static_cast<uint64_t>(run.seed));
  const auto seed = static_cast<uint64_t>(run.seed);

  const int threads = std::max<int>(1, static_cast<int>(dopt.num_workers));
  data::ClassList classes = data::infer_classes(dopt);
  // The table, every image decoded once, bad rows handled by data.on_bad_row before the first step.
  log(o, "kgtrain fit: " + dev.description + ", env " + o.env_name + "; checking data...");
  data::Table table = data::load_split(dopt, data::Split::train, classes, /*scan=*/true, threads, data::fold_columns(cv));
  auto split = data::split_folds(table, cv, seed);
  const auto& folds = split.fold;
  const auto& train_rows = split.train;
  const auto& valid_rows = split.valid;
  KG_CHECK(!valid_rows.empty() && !train_rows.empty(), DataError, "fold ", cv.fold, " of ", cv.folds, " leaves ",
           train_rows.size(), " training and ", valid_rows.size(), " validation rows; both need at least one");

  const auto stages = data::size_schedule(dopt);
  const auto geom = data::geometry(dopt);
  std::vector<std::unique_ptr<data::Pipeline>> train_pipes;
  const bool u8 = dopt.uint8_transfer;
  for (auto& st : stages) train_pipes.push_back(std::make_unique<data::Pipeline>(dopt.augment, st.size, true, u8));
  data::Pipeline eval_pipe(dopt.augment, geom, false, u8);
  const bool pin = dopt.pin_memory && dev.device.is_cuda();
  const auto mix = data::load_mixup_options(recipe);
  const bool trainable = classes.task == data::Task::multiclass;
  auto net = model::build(recipe, model_context(geom, classes, table.feature_dim));
  std::vector<std::string> weight_notes;
  if (auto& r = net->pretrained_report()) weight_notes.push_back("model.pretrained " + model::load_options(recipe).pretrained + ": " + r->str());
  for (auto& f : o.weights)
    weight_notes.push_back("--weights " + f + ": " + model::load_weights(*net, model::read_safetensors(f), {}, f).str());
  // Measured on the CPU before the move, at the final (largest) size and its batch: FLOPs from the
  // dispatched operators, memory from a training-mode forward.
  const auto msum = model::summarize(*net, geom.channels, geom.height, geom.width,
                                     stages.back().batch_size > 0 ? stages.back().batch_size : topt.batch_size,
                                     table.feature_dim);
  net->to(dev.device);
  if (dev.channels_last) net->set_channels_last(true);
  auto optimizer = optim::build(recipe, *net);
  auto loss = loss::build(recipe, {classes.outputs()});
  auto metric = metric::create(topt.metric, {classes.outputs()});
  std::unique_ptr<data::ImageCache> cache;
  if (dopt.cache == "ram") cache = std::make_unique<data::ImageCache>(static_cast<size_t>(dopt.cache_max_gb * (1ull << 30)));

  const int64_t max_batches = o.smoke ? 2 : -1;
  const int64_t epochs = o.smoke ? 1 : topt.epochs;
  // Updates per epoch follow the stage's batch size; the schedule sees the true total.
  auto batch_at = [&](int64_t epoch) {
    auto& st = stages[data::stage_at(stages, epoch, epochs)];
    return st.batch_size > 0 ? st.batch_size : topt.batch_size;
  };
  int64_t total_steps = 0;
  for (int64_t e = 0; e < epochs; ++e)
    total_steps += data::num_batches(static_cast<int64_t>(train_rows.size()), batch_at(e), true, max_batches);
  const int64_t steps_per_epoch = data::num_batches(static_cast<int64_t>(train_rows.size()), batch_at(epochs - 1), true, max_batches);
  auto schedule = optim::build_schedule(recipe, {optim::load_options(recipe).lr, total_steps, steps_per_epoch});

  std::string sizes;
  for (auto& st : stages)
    sizes += (sizes.empty() ? "" : ", ") + std::to_string(st.size.height) + "x" + std::to_string(st.size.width) +
             (stages.size() > 1 ? " from " + fmt(st.start * 100, 3) + "%" : "");
  log(o, "  data    " + table.csv_path + " (" + data::resolve_format(dopt) + "): " + std::to_string(table.size()) + " rows" +
             (table.dropped.empty() ? "" : " (" + std::to_string(table.dropped.size()) + " bad rows skipped)") + ", " +
             data::task_name(classes.task) + ", " + std::to_string(classes.size()) + " classes; fold " + std::to_string(cv.fold) +
             "/" + std::to_string(cv.folds) + " (" + cv.strategy + "): " + std::to_string(train_rows.size()) + " train, " +
             std::to_string(valid_rows.size()) + " valid; input " + std::to_string(geom.channels) + "x" + sizes);
  for (auto& b : table.dropped) log(o, "  bad row skipped: " + b.where + ": id " + b.id + ": " + b.reason);
  log(o, "  model   " + model::model_name(recipe) + ", " + std::to_string(model::count_parameters(*net)) + " parameters" +
             (table.feature_dim ? ", " + std::to_string(table.feature_dim) + " numeric features into the head" : "") +
             (dev.channels_last ? ", channels_last" : "") + (net->grad_checkpointing() ? ", gradient checkpointing" : ""));
  for (auto& n : weight_notes) log(o, "  weights " + n);
  {
    std::istringstream lines(msum.str());
    for (std::string l; std::getline(lines, l);) log(o, "          " + l);
  }
  log(o, "  train   " + std::to_string(epochs) + " epochs, " + std::to_string(total_steps) + " steps, batch " +
             std::to_string(topt.batch_size) + ", " + std::to_string(dopt.num_workers) + " workers; metric " + topt.metric +
             (data::mixup_enabled(mix, 0) ? "; mixup/cutmix on" : ""));
  // Not yet trainable here: say so before any work, rather than train on a silently wrong loss.
  KG_CHECK(trainable || o.check_data, ConfigError, "data.task = \"", data::task_name(classes.task),
           "\": the table loads (fit --check-data validates it), but this version trains multiclass tasks only; "
           "the task's loss and metrics arrive with the training-engine work");
  if (o.dry_run || o.check_data) {
    log(o, std::string(o.check_data ? "check-data" : "dry run") + ": recipe valid, every component built, " +
               std::to_string(table.size()) + " rows usable" +
               (table.dropped.empty() ? "" : ", " + std::to_string(table.dropped.size()) + " bad rows skipped") +
               "; nothing trained");
    return kExitOk;
  }

  const std::string run_dir = prepare_run_dir(o);
  log(o, "  run dir " + run_dir);
  write_file_atomic((fs::path(run_dir) / "classes.json").string(), classes.to_json().dump(2) + "\n");
  {
    std::string f = data::csv_line({"id", "fold"});
    for (int64_t i = 0; i < table.size(); ++i)
      f += data::csv_line({table.rows[static_cast<size_t>(i)].id, std::to_string(folds[static_cast<size_t>(i)])});
    write_file_atomic((fs::path(run_dir) / "folds.csv").string(), f);
  }
  if (!table.dropped.empty())
    write_file_atomic((fs::path(run_dir) / "bad_rows.csv").string(), data::bad_rows_csv(table.dropped));
  const std::string recipe_toml = config::to_toml(recipe, false);
  const json prov = provenance(o);

  train::ProgressStyle style{o.quiet, o.tty, topt.log_every_s};
  std::string metrics_log;
  json best = {{"metric", topt.metric}, {"value", nullptr}, {"epoch", nullptr}};
  double best_value = metric->higher_is_better() ? -INFINITY : INFINITY;
  int64_t step = 0, epochs_done = 0, train_images = 0;
  double train_seconds = 0;
  auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  json summary = {{"command", "fit"}, {"run_dir", run_dir}, {"model", msum.to_json()}};

  for (int64_t epoch = 0; epoch < epochs; ++epoch) {
    data::LoaderOptions lo{batch_at(epoch), true, true, static_cast<int>(dopt.num_workers), static_cast<int>(dopt.prefetch),
                           seed, epoch, max_batches, cache.get(), pin};
    train::EpochResult er;
    {
      const auto& pipe = *train_pipes[data::stage_at(stages, epoch, epochs)];
      data::Loader loader(table, train_rows, pipe, lo);
      train::Progress progress(style, "epoch " + std::to_string(epoch + 1) + "/" + std::to_string(epochs), loader.size());
      train::BatchHook mixing;
      if (data::mixup_enabled(mix, epoch))
        mixing = [&](at::Tensor& x, at::Tensor& y, int64_t index) {
          data::apply_mixup(mix, x, y, classes.outputs(), seed, epoch, index);
        };
      er = train::train_epoch(*net, *optimizer, *schedule, *loss, loader, dev.device, step, progress, mixing);
    }
    train_images += er.images;
    train_seconds += er.seconds;
    if (er.stopped) {
      int sig = stop_signal().load();
      train::save_checkpoint((fs::path(run_dir) / "checkpoints" / "last").string(), model::state_dict(*net),
                             state_json(model::model_name(recipe), classes, geom, epoch, step, topt.metric, NAN), recipe_toml, prov);
      summary.update({{"status", "interrupted"}, {"epochs_completed", epochs_done}, {"best", best}, {"wall_s", elapsed()},
                      {"train_images_per_s", train_seconds > 0 ? train_images / train_seconds : 0.0}});
      write_summary(run_dir, summary);
      int code = sig == SIGTERM ? kExitSigterm : kExitSigint;
      throw Interrupted(code, "stopped by signal " + std::to_string(sig) + " in epoch " + std::to_string(epoch + 1) +
                                  "; weights saved to " + run_dir + "/checkpoints/last");
    }
    data::LoaderOptions vo{train::eval_batch_size(topt), false, false, static_cast<int>(dopt.num_workers),
                           static_cast<int>(dopt.prefetch), seed, 0, max_batches, cache.get(), pin};
    data::Loader vloader(table, valid_rows, eval_pipe, vo);
    auto pred = train::predict(*net, vloader, dev.device, loss.get());
    metric->reset();
    metric->update(pred.probs, pred.targets);
    double value = metric->compute();
    ++epochs_done;
    json line = {{"epoch", epoch + 1}, {"step", step}, {"lr", er.lr}, {"train_loss", er.loss}, {"valid_loss", pred.loss},
                 {topt.metric, value}, {"train_images_per_s", er.seconds > 0 ? er.images / er.seconds : 0.0},
                 {"elapsed_s", elapsed()}};
    metrics_log += line.dump() + "\n";
    write_file_atomic((fs::path(run_dir) / "metrics.jsonl").string(), metrics_log);
    auto state = state_json(model::model_name(recipe), classes, geom, epoch + 1, step, topt.metric, value);
    auto weights = model::state_dict(*net);
    train::save_checkpoint((fs::path(run_dir) / "checkpoints" / "last").string(), weights, state, recipe_toml, prov);
    bool improved = metric->higher_is_better() ? value > best_value : value < best_value;
    if (improved) {
      best_value = value;
      best = {{"metric", topt.metric}, {"value", value}, {"epoch", epoch + 1}};
      train::save_checkpoint((fs::path(run_dir) / "checkpoints" / "best").string(), weights, state, recipe_toml, prov);
    }
    log(o, "epoch " + std::to_string(epoch + 1) + "/" + std::to_string(epochs) + "  train_loss " + fmt(er.loss) +
               "  valid_loss " + fmt(pred.loss) + "  " + topt.metric + " " + fmt(value) + (improved ? " *" : "") + "  " +
               fmt(er.seconds > 0 ? er.images / er.seconds : 0.0, 5) + " img/s  " + fmt(er.seconds, 3) + " s");
  }

  if (o.smoke) {
    // Lightning's fast_dev_run also exercises prediction: two batches of the test table.
    data::Table test = data::load_split(dopt, data::Split::test, classes, false, threads);
    std::vector<int64_t> rows(static_cast<size_t>(test.size()));
    for (int64_t i = 0; i < test.size(); ++i) rows[static_cast<size_t>(i)] = i;
    data::LoaderOptions po{train::eval_batch_size(topt), false, false, static_cast<int>(dopt.num_workers),
                           static_cast<int>(dopt.prefetch), seed, 0, 2};
    data::Loader ploader(test, rows, eval_pipe, po);
    auto pred = train::predict(*net, ploader, dev.device, nullptr);
    summary["smoke_predictions"] = pred.images;
    log(o, "smoke: predicted " + std::to_string(pred.images) + " test rows");
  }

  double ips = train_seconds > 0 ? train_images / train_seconds : 0.0;
  summary.update({{"status", "completed"}, {"smoke", o.smoke}, {"epochs_completed", epochs_done}, {"best", best},
                  {"train_images_per_s", ips}, {"wall_s", elapsed()}, {"device", dev.description}});
  write_summary(run_dir, summary);
  std::cout << "fit completed: " << epochs_done << " epochs, best " << topt.metric << " "
            << (best["value"].is_null() ? std::string("n/a") : fmt(best["value"].get<double>())) << " (epoch "
            << (best["epoch"].is_null() ? std::string("-") : std::to_string(best["epoch"].get<int64_t>())) << "), "
            << fmt(ips, 5) << " train img/s, " << fmt(elapsed(), 4) << " s\n"
            << "run dir: " << run_dir << "\n";
  return kExitOk;
}

}  // namespace kg::jobs
