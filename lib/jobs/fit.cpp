// `kgtrain fit`: split, then for each fold of cv.fold (one, a list, or "all"): build the model,
// optimizer, plan and callbacks, train (resuming from a checkpoint when asked), predict the fold's
// validation rows with the best weights (oof_fold.csv). Several folds are merged into oof.csv + cv.json.
#include "jobs/fit_run.h"

#include <torch/torch.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <iostream>

#include "config/flags.h"
#include "config/resolve.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/run_lock.h"
#include "core/strings.h"
#include "data/csv.h"
#include "data/loader.h"
#include "data/mixup.h"
#include "data/source.h"
#include "data/collator.h"
#include "jobs/fit_resume.h"
#include "jobs/lr_find.h"
#include "model/model.h"
#include "model/summary.h"
#include "loss/loss.h"
#include "optim/optimizer.h"
#include "report/lr_curve.h"
#include "report/plot.h"
#include "session/auto_batch.h"
#include "session/effective_recipe.h"
#include "session/latest_run.h"
#include "session/oof.h"
#include "session/session.h"
#include "session/modality.h"
#include "session/training.h"
#include "train/callback.h"
#include "train/engine.h"
#include "train/lr_finder.h"
#include "train/options.h"
#include "train/plan.h"

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace kg::jobs {
namespace {

// Whether a fit trained or wrote results in `dir` (a checkpoint, a fold's folder, metrics, a summary).
bool has_fit_output(const std::string& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const auto name = e.path().filename().string();
    if (name == "checkpoints" || name.rfind("fold_", 0) == 0 || name == "metrics.jsonl" || name == "summary.json")
      return true;
  }
  return false;
}

// --weights FILE as the training context takes initial weights: none, or that one file.
std::vector<std::string> weights_files(const FitFlags& f) {
  if (f.weights.empty()) return {};
  return {f.weights};
}

}  // namespace

const config::Fields<FitFlags>& fit_flags() {
  static const config::Fields<FitFlags> f = [] {
    using F = FitFlags;
    config::Fields<F> t;
    t.field(
        "weights", &F::weights,
        "initial weights (safetensors or torch.save's .pth; timm/torchvision names), as model.pretrained: a head of "
        "another shape is re-initialised");
    t.field("resume", &F::resume,
            "auto (the newest unfinished run of run.name, or --run-dir), a run directory, latest (<paths.runs>/latest, "
            "the newest fit), or a checkpoint directory: continue exactly where it stopped (RECIPE optional: the run's "
            "recipe.toml is used when none is given)");
    t.field("plot_schedule", &F::plot_schedule,
            "draw the planned learning rate (and momentum) per update to this PNG and exit");
    t.field("nproc", &F::nproc,
            "train on N processes of this machine (data parallel, torch.distributed: Gloo on the CPU, NCCL on GPUs; "
            "one GPU each), as torchrun --no-python --nproc-per-node N would")
        .min(1);
    t.field("multirun", &F::multirun,
            "sweep (Hydra's grammar): key=a,b,c, key=range(start,stop[,step]), key=choice(a,b); one fit run per "
            "combination in a sweep folder (--run-dir), sweep.csv + a ranked table; --resume SWEEP_DIR continues a "
            "stopped sweep")
        .alias('m');
    t.field("jobs", &F::jobs, "with -m: runs at once (CPU threads split between them; one GPU each)").min(1);
    return t;
  }();
  return f;
}

int run_fit(const FitRequest& given) {
  config::check_flags(fit_flags(), given.flags);
  if (given.dist.active()) {
    KG_CHECK(!train::batch_size_is_auto(given.recipe), UsageError,
             "train.batch_size = \"auto\" is found by one process; with ", given.dist.world_size,
             " processes give a number (run kgtrain fit --dry-run or bench with \"auto\" on one GPU first)");
    KG_CHECK(!optim::lr_is_find(given.recipe), UsageError, "optim.lr = \"find\" runs the finder in one process; with ",
             given.dist.world_size, " processes give a number (kgtrain lr-find RECIPE prints the suggestion)");
  }
  FitRun run(given);
  return run.run();
}

// --- FitRun ------------------------------------------------------------------------------------------

FitRequest FitRun::with_auto_batch(const FitRequest& request) {
  FitRequest o = request;
  session::resolve_auto_batch(o);  // train.batch_size = "auto" becomes a number before anything reads it
  return o;
}

FitRun::FitRun(const FitRequest& request)
    : t_start_(Clock::now()),
      o_(with_auto_batch(request)),
      s_(o_, "fit", weights_files(o_.flags)),
      recipe_(s_.session.recipe),
      writer_(o_.dist.writer()),
      multi_(s_.opt.cv.run_folds.size() > 1),
      scratch_(writer_ ? std::string() : "kgtrain-rank" + std::to_string(o_.dist.rank)) {}

double FitRun::elapsed() const { return std::chrono::duration<double>(Clock::now() - t_start_).count(); }

void FitRun::log(const std::string& line) const { o_.log(line); }

int FitRun::run() {
  if (optim::lr_is_find(recipe_)) {
    (void)recipe_.get<train::LrFindOptions>();  // lr_find.start_lr < end_lr before anything is built
    KG_CHECK(o_.flags.plot_schedule.empty(), UsageError,
             "--plot-schedule needs a number in optim.lr; with optim.lr = \"find\" the ",
             "lr is only known after the finder runs: run kgtrain lr-find first, then --plot-schedule with "
             "optim.lr=<its lr>");
  }
  if (preview()) return kExitOk;
  if (o_.dry_run || o_.check_data) {
    const auto& table = s_.data.table;
    log(std::string(o_.check_data ? "check-data" : "dry run") + ": recipe valid, every component built, " +
        std::to_string(table.size()) + " rows usable" +
        (table.dropped.empty() ? "" : ", " + std::to_string(table.dropped.size()) + " bad rows skipped") +
        "; nothing trained");
    return kExitOk;
  }
  open_run_dir();
  summary_ = {{"command", "fit"},
              {"run_dir", run_dir_},
              {"folds", json::array()},
              {"metric", s_.monitor},
              {"model", model_info_}};
  lr_from_finder();
  if (!o_.auto_batch.is_null()) summary_["auto_batch"] = o_.auto_batch;
  double best_single = NAN;
  const auto& folds = s_.opt.cv.run_folds;
  for (size_t fi = 0; fi < folds.size(); ++fi) {
    auto r = train_fold(fi, folds[fi]);
    summary_["folds"].push_back(r.summary);
    if (r.summary.contains("best") && r.summary["best"]["value"].is_number())
      best_single = r.summary["best"]["value"].get<double>();
    if (r.status == "interrupted") {
      summary_.update({{"status", "interrupted"},
                       {"wall_s", elapsed()},
                       {"epochs_completed", r.summary["epochs_completed"]},
                       {"best", r.summary["best"]}});
      session::write_summary(run_dir_, summary_);
      int code = r.signal == SIGTERM ? kExitSigterm : kExitSigint;
      throw Interrupted(code, "stopped by signal " + std::to_string(r.signal) + " in fold " +
                                  std::to_string(folds[fi]) +
                                  "; everything is saved: continue with kgtrain fit ... --resume " + run_dir_);
    }
  }
  return finish(best_single);
}

bool FitRun::preview() {
  const bool lr_find = optim::lr_is_find(recipe_);
  const auto& recipe = recipe_;
  const auto& topt = s_.opt.train;
  const auto& table = s_.data.table;
  auto built = s_.build_net();
  auto& net = built.net;
  auto msum =
      model::summarize(*net, s_.model_context(),
                       s_.data.stages.back().batch_size > 0 ? s_.data.stages.back().batch_size : topt.batch_size);
  // optim.lr = "find": any number shows the plan's shape; the finder sets the real one before training.
  const config::Recipe shown = optim::with_numeric_lr(recipe);
  const auto first_split = s_.split_of(s_.opt.cv.run_folds.front());
  train::Plan plan(shown, s_.epochs, s_.steps_of(first_split.first), net->group_names());
  auto opt = optim::build(shown, *net);
  msum.set_optimizer(opt->name(), opt->state_slots());
  log("  model   " + model::model_name(recipe) + ", " + std::to_string(model::count_parameters(*net)) + " parameters" +
      (table.feature_dim ? ", " + std::to_string(table.feature_dim) + " numeric features into the head" : "") +
      (s_.dev.channels_last ? ", channels_last" : "") + (net->grad_checkpointing() ? ", gradient checkpointing" : "") +
      "; groups " + join(net->group_names(), ", "));
  for (auto& n : s_.session.preprocessing_notes) log("  data    " + n);
  for (auto& n : built.weight_notes) log("  weights " + n);
  if (!built.target_note.empty()) log("  target  " + built.target_note);
  model_info_ = msum.to_json();
  model_info_["name"] = model::model_name(recipe);
  model_info_["channels_last"] = s_.dev.channels_last;  // net is summarized before each fold sets the layout
  std::istringstream lines(msum.str());
  for (std::string l; std::getline(lines, l);) log("          " + l);
  std::vector<std::string> cbs;
  for (auto& cb : train::build_callbacks(recipe)) cbs.push_back(cb->name());
  std::string optim_line = opt->describe();
  if (lr_find) {  // "adamw lr 1, wd ..." -> "adamw lr = find (the lr finder runs first), wd ..."
    const auto at = optim_line.find(" lr 1,");
    if (at != std::string::npos) optim_line.replace(at, 6, " lr = find (the lr finder runs first),");
  }
  log("  optim   " + optim_line);
  log("  plan    " + plan.describe() + "; batch " + std::to_string(topt.batch_size) +
      (topt.accum_steps > 1 ? " x " + std::to_string(topt.accum_steps) + " accumulated" : "") + ", " +
      (s_.opt.data.cache == "device" ? std::string("device-resident data")
                                     : std::to_string(s_.opt.data.num_workers) + " workers") +
      "; loss " + loss::loss_name(recipe, s_.data.task) + "; metrics " + join(s_.metrics->names(), ", ") +
      " (monitor " + s_.monitor + ")" +
      (s_.mixing_possible && data::mixup_enabled(s_.opt.mixup, 0) ? "; mixup/cutmix on" : "") + "; callbacks " +
      join(cbs, ", "));
  if (o_.flags.plot_schedule.empty()) return false;
  plot_schedule(plan);
  return true;
}

void FitRun::plot_schedule(const train::Plan& plan) const {
  KG_CHECK(report::can_plot(), UsageError,
           "--plot-schedule draws a PNG with OpenCV, which this kgtrain was built without; "
           "kgtrain show RECIPE prints the plan, and metrics.jsonl records the lr of every epoch");
  report::LrCurveOptions lo;
  lo.steps_per_epoch = plan.steps_in_epoch(0);  // clamped to >= 1 inside
  lo.title = "learning rate: " + plan.describe();
  lo.momentum_file = true;  // <stem>_momentum.png (docs/commands.md)
  const auto drawn = report::plot_lr_curve(o_.flags.plot_schedule, plan, plan.total_steps(), lo);
  std::cout << "wrote " << drawn.lr_png << (drawn.momentum_png.empty() ? "" : " and " + drawn.momentum_png) << " ("
            << plan.total_steps() << " updates, peak lr " << format_significant(drawn.peak_lr, 4) << ")\n";
}

void FitRun::open_run_dir() {
  // Data parallel: rank 0 decides (and alone writes into) the run directory; the other ranks read the
  // same checkpoints to resume and write their copies of everything into a private scratch folder
  // that is removed when they end.
  if (writer_) target_ = resume_target(o_);
  if (s_.group) {
    std::vector<std::string> shared{target_.run_dir, target_.checkpoint};
    s_.group->broadcast_strings(shared);
    target_.run_dir = shared[0];
    target_.checkpoint = shared[1];
  }
  if (!target_.note.empty()) log("  " + target_.note);
  resuming_ = !target_.run_dir.empty();
  const auto& table = s_.data.table;
  if (!writer_) {
    run_dir_ = scratch_.path();
  } else if (resuming_) {
    run_dir_ = target_.run_dir;
    const bool made_by_kgtrain = fs::exists(fs::path(run_dir_) / ".kgtrain.lock");  // before the lock makes one
    lock_run_dir(run_dir_, "fit --resume");  // refused at once while another process writes it
    if (!fs::exists(fs::path(run_dir_) / "folds.csv")) {
      // A fit killed, or stopped by a full disk, while it prepared its folder has trained nothing: finish
      // preparing it and start from the beginning. Any other folder without folds.csv is not a fit run.
      KG_CHECK(made_by_kgtrain && !has_fit_output(run_dir_), UsageError, "--resume: ", run_dir_,
               " is not a kgtrain fit run (no folds.csv)");
      log("  resume  " + run_dir_ + ": it stopped before its first update; starting it from the beginning");
      write_split_files();
      return;  // still resuming: every fold finds no checkpoint and starts fresh, on every rank alike
    }
    if (fs::exists(fs::path(run_dir_) / "recipe.toml")) {
      auto diff = changed_lines(read_file((fs::path(run_dir_) / "recipe.toml").string()),
                                config::to_toml(o_.recipe.tree(), false));
      if (!diff.empty())
        log("  warning: the recipe differs from the run's recipe.toml; resuming with the new values: " +
            join(diff, " | "));
    }
    std::vector<std::string> ids;
    for (const auto& row : table.rows) ids.push_back(row.id);
    check_same_split(run_dir_, ids, s_.data.folds);
    log("  resume  " + run_dir_);
  } else {
    run_dir_ = session::prepare_run_dir(o_);
    log("  run dir " + run_dir_);
    // A folder fit named itself becomes <paths.runs>/latest (not an explicit --run-dir, e.g. a sweep's runs).
    if (o_.run_dir.empty()) {
      const auto w = session::point_latest(o_.recipe.get<train::PathsOptions>().runs, run_dir_);
      if (!w.empty()) log("  warning: " + w);
    }
    write_split_files();
  }
}

void FitRun::write_split_files() const {
  const auto& table = s_.data.table;
  write_file_atomic((fs::path(run_dir_) / "classes.json").string(), s_.data.classes.to_json().dump(2) + "\n");
  std::string f = data::csv_line({"id", "fold"});
  for (int64_t i = 0; i < table.size(); ++i)
    f += data::csv_line({table.rows[static_cast<size_t>(i)].id, std::to_string(s_.data.folds[static_cast<size_t>(i)])});
  write_file_atomic((fs::path(run_dir_) / "folds.csv").string(), f);
  if (!table.dropped.empty())
    write_file_atomic((fs::path(run_dir_) / "bad_rows.csv").string(), data::bad_rows_csv(table.dropped));
}

void FitRun::lr_from_finder() {
  // The finder on the first fold's freshly built network (its state is restored, and every fold builds its
  // own network anyway), then every fold trains with its suggestion. A resumed run reuses the lr its
  // finder chose.
  if (!optim::lr_is_find(recipe_)) return;
  const fs::path found = fs::path(run_dir_) / "lr_find.json";
  json lf;
  // Rank 0's lr_find.json, on every rank (a non-writing rank's own folder is scratch, its disk may not hold the run).
  const std::string saved =
      rank0_text(s_.group, resuming_ && writer_ && fs::exists(found) ? read_file(found.string()) : std::string());
  if (!saved.empty()) {
    lf = json::parse(saved);
    KG_CHECK(lf.contains("lr") && lf["lr"].is_number(), DataError, found.string(),
             " holds no \"lr\": remove it to run the finder again");
    log("  lr find reused from " + found.string());
  } else {
    auto net = s_.build_net().net;
    net->to(s_.dev.device);
    if (s_.dev.channels_last) net->set_channels_last(true);
    lf = run_lr_finder(s_, *net, s_.opt.cv.run_folds.front(), run_dir_);
  }
  {
    session::Resolutions found_lr;
    found_lr.lr = lf["lr"].get<double>();
    recipe_ = session::effective_recipe(recipe_, found_lr).recipe;
  }
  summary_["lr_find"] = {{"lr", lf["lr"]},
                         {"chosen", lf["chosen"]},
                         {"suggestions", lf["suggestions"]},
                         {"steps", lf["steps"]},
                         {"stopped_early", lf["stopped_early"]},
                         {"fold", s_.opt.cv.run_folds.front()},
                         {"seconds", lf["seconds"]}};
  log("  optim   lr = " + json(lf["lr"]).dump() + " (lr finder, " + lf["chosen"].get<std::string>() + ")");
}

void FitRun::smoke_predict() {
  // Lightning's fast_dev_run also exercises prediction: two batches of the test table.
  data::Table test = data::load_split(s_.opt.data, data::Split::test, s_.data.classes, false, s_.data.threads);
  std::vector<int64_t> rows(static_cast<size_t>(test.size()));
  for (int64_t i = 0; i < test.size(); ++i) rows[static_cast<size_t>(i)] = i;
  data::LoaderOptions po{
      train::eval_batch_size(s_.opt.train),   false,   false, static_cast<int>(s_.opt.data.num_workers),
      static_cast<int>(s_.opt.data.prefetch), s_.seed, 0,     2};
  const auto collator = session::modality_of(recipe_).collator(recipe_, test, s_.data.threads);
  po.collator = collator.get();
  data::Loader ploader(test, rows, *s_.data.eval_pipe, po);
  auto net = s_.build_net().net;
  net->to(s_.dev.device);
  auto pred = train::predict(*net, ploader, s_.dev.device, nullptr, s_.data.task, s_.dev.precision);
  summary_["smoke_predictions"] = pred.images;
  log("smoke: predicted " + std::to_string(pred.images) + " test rows");
}

int FitRun::finish(double best_single) {
  if (multi_) {
    auto cvj = session::merge_oof({run_dir_}, run_dir_);
    summary_["cv"] = cvj;
    log("cv " + cvj["metric"].get<std::string>() + ": oof " + format_significant(cvj["oof"].get<double>(), 4) +
        ", folds mean " + format_significant(cvj["mean"].get<double>(), 4) + " +- " +
        format_significant(cvj["std"].get<double>(), 4));
  }
  if (o_.smoke) smoke_predict();
  std::string finish = "completed";  // or why a fold ended early: early_stopped, time_budget
  for (auto& f : summary_["folds"])
    if (f["status"] != "completed") finish = f["status"].get<std::string>();
  const auto& last = summary_["folds"].back();
  summary_.update({{"status", "completed"},
                   {"finish", finish},
                   {"smoke", o_.smoke},
                   {"best", last["best"]},
                   {"epochs_completed", last["epochs_completed"]},
                   {"train_images_per_s", last["train_images_per_s"]},
                   {"wall_s", elapsed()},
                   {"device", s_.dev.description}});
  session::write_summary(run_dir_, summary_);
  if (!writer_) return kExitOk;  // its outputs were scratch; rank 0 reports
  const auto& folds = s_.opt.cv.run_folds;
  std::cout << "fit completed: " << folds.size() << (multi_ ? " folds" : " fold") << ", " << s_.monitor << " ";
  if (multi_)
    std::cout << "oof " << format_significant(summary_["cv"]["oof"].get<double>(), 4) << " (folds mean "
              << format_significant(summary_["cv"]["mean"].get<double>(), 4) << ")";
  else
    std::cout << "best " << (std::isnan(best_single) ? std::string("n/a") : format_significant(best_single, 4))
              << " (epoch " << last["best"]["epoch"] << ")";
  std::cout << ", " << format_significant(last["train_images_per_s"].get<double>(), 5)
            << (s_.data.table.is_text() ? " train texts/s, " : " train img/s, ") << format_significant(elapsed(), 4)
            << " s\n"
            << "run dir: " << run_dir_ << "\n";
  return kExitOk;
}

}  // namespace kg::jobs
