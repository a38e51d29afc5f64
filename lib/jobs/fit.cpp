// `kgtrain fit`: split, then for each fold of cv.fold (one, a list, or "all"): build the model,
// optimizer, plan and callbacks, train (resuming from a checkpoint when asked), predict the fold's
// validation rows with the best weights (oof_fold.csv). Several folds are merged into oof.csv + cv.json.
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <csignal>
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
#include "jobs/auto_batch.h"
#include "jobs/fit_resume.h"
#include "jobs/fit_setup.h"
#include "jobs/job.h"
#include "jobs/model_setup.h"
#include "jobs/oof.h"
#include "loss/loss.h"
#include "metric/metric.h"
#include "metric/metric_set.h"
#include "model/batchnorm.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "model/summary.h"
#include "model/weights.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"
#include "report/plot.h"
#include "train/callback.h"
#include "train/checkpoint.h"
#include "train/engine.h"
#include "train/lr_finder.h"
#include "train/options.h"
#include "train/plan.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace kg::jobs {
namespace {

std::string fmt(double v, int prec = 4) { return format_significant(v, prec); }

struct FoldOutcome {
  std::string status;
  int signal = 0;
  json summary;
};

}  // namespace

int run_merge_oof(const std::vector<std::string>& dirs, const std::string& out_dir) {
  auto cv = merge_oof(dirs, out_dir);
  std::cout << "cv " << cv["metric"].get<std::string>() << ": oof " << fmt(cv["oof"].get<double>()) << ", mean "
            << fmt(cv["mean"].get<double>()) << " +- " << fmt(cv["std"].get<double>()) << " over " << cv["folds"].size()
            << " folds (" << cv["rows"].get<int64_t>() << " rows"
            << (cv["complete"].get<bool>() ? "" : "; not every fold present") << ")\n";
  for (auto& f : cv["folds"])
    std::cout << "  fold " << f["fold"].get<int64_t>() << ": " << fmt(f["value"].get<double>()) << "\n";
  std::cout << "wrote " << (fs::path(out_dir) / "oof.csv").string() << " and cv.json\n";
  return kExitOk;
}

int run_fit(const JobOptions& given) {
  const auto t_start = Clock::now();
  if (given.dist.active()) {
    KG_CHECK(!train::batch_size_is_auto(given.recipe), UsageError,
             "train.batch_size = \"auto\" is found by one process; with ", given.dist.world_size,
             " processes give a number (run kgtrain fit --dry-run or bench with \"auto\" on one GPU first)");
    KG_CHECK(!lr_is_find(given.recipe), UsageError, "optim.lr = \"find\" runs the finder in one process; with ",
             given.dist.world_size, " processes give a number (kgtrain lr-find RECIPE prints the suggestion)");
  }
  // train.batch_size = "auto" becomes a number before anything reads it.
  const JobOptions o = resolve_auto_batch(given);
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - t_start).count(); };
  FitSetup s(o, "fit");
  const FitSetup& setup = s;  // inside a fold, `s` is the trainer's state
  const auto& run = s.run;
  const auto& topt = s.topt;
  const auto& copt = s.copt;
  const auto& dopt = s.dopt;
  const auto& cv = s.cv;
  const auto& dev = s.dev;
  const auto& classes = s.classes;
  const std::string& task = s.task;
  // optim.lr = "find" is replaced in s.recipe by the finder's suggestion before any fold trains.
  const config::Tree& recipe = s.recipe;
  const bool lr_find = lr_is_find(recipe);
  const auto& table = s.table;
  const auto& stages = s.stages;
  const auto& geom = s.geom;
  const auto& mix = s.mix;
  const bool mixing_possible = s.mixing_possible;
  const int64_t epochs = s.epochs;
  const metric::MetricSet& metrics = *s.metrics;
  const std::string& monitor = s.monitor;
  auto split_of = [&](int64_t k) { return s.split_of(k); };
  const auto first_split = split_of(cv.run_folds.front());
  // Builds fold k's model (seeded the same for every fold: a fold trained alone equals the same fold in "all").
  auto build_net = [&] { return s.build_net(); };
  const auto& weight_notes = s.weight_notes;
  if (lr_find) {
    (void)train::load_lr_find_options(recipe);  // lr_find.start_lr < end_lr before anything is built
    KG_CHECK(o.plot_schedule.empty(), UsageError,
             "--plot-schedule needs a number in optim.lr; with optim.lr = \"find\" the ",
             "lr is only known after the finder runs: run kgtrain lr-find first, then --plot-schedule with "
             "optim.lr=<its lr>");
  }
  json model_info;  // summary.json "model": what the log's model summary says
  {
    auto net = build_net();
    const auto msum =
        model::summarize(*net, geom.channels, geom.height, geom.width,
                         stages.back().batch_size > 0 ? stages.back().batch_size : topt.batch_size, table.feature_dim);
    // optim.lr = "find": any number shows the plan's shape; the finder sets the real one before training.
    const config::Tree shown = lr_find ? with_lr(recipe, 1.0) : recipe;
    train::Plan plan(shown, epochs, s.steps_of(static_cast<int64_t>(first_split.first.size())), net->group_names());
    auto opt = optim::build(shown, *net);
    log(o, "  model   " + model::model_name(recipe) + ", " + std::to_string(model::count_parameters(*net)) +
               " parameters" +
               (table.feature_dim ? ", " + std::to_string(table.feature_dim) + " numeric features into the head" : "") +
               (dev.channels_last ? ", channels_last" : "") +
               (net->grad_checkpointing() ? ", gradient checkpointing" : "") + "; groups " +
               join(net->group_names(), ", "));
    for (auto& n : weight_notes) log(o, "  weights " + n);
    model_info = msum.to_json();
    model_info["name"] = model::model_name(recipe);
    std::istringstream lines(msum.str());
    for (std::string l; std::getline(lines, l);) log(o, "          " + l);
    std::vector<std::string> cbs;
    for (auto& cb : train::build_callbacks(recipe)) cbs.push_back(cb->name());
    std::string optim_line = opt->describe();
    if (lr_find) {  // "adamw lr 1, wd ..." -> "adamw lr = find (the lr finder runs first), wd ..."
      const auto at = optim_line.find(" lr 1,");
      if (at != std::string::npos) optim_line.replace(at, 6, " lr = find (the lr finder runs first),");
    }
    log(o, "  optim   " + optim_line);
    log(o, "  plan    " + plan.describe() + "; batch " + std::to_string(topt.batch_size) +
               (topt.accum_steps > 1 ? " x " + std::to_string(topt.accum_steps) + " accumulated" : "") + ", " +
               (dopt.cache == "device" ? std::string("device-resident data")
                                       : std::to_string(dopt.num_workers) + " workers") +
               "; loss " + recipe.at("loss.name").value.get<std::string>() + "; metrics " +
               join(metrics.names(), ", ") + " (monitor " + monitor + ")" +
               (mixing_possible && data::mixup_enabled(mix, 0) ? "; mixup/cutmix on" : "") + "; callbacks " +
               join(cbs, ", "));
    if (!o.plot_schedule.empty()) {
      KG_CHECK(report::can_plot(), UsageError,
               "--plot-schedule draws a PNG with OpenCV, which this kgtrain was built without; "
               "kgtrain show RECIPE prints the plan, and metrics.jsonl records the lr of every epoch");
      report::Series lr{"lr", {}, {}, false}, mom{"momentum", {}, {}, false};
      const double spe = static_cast<double>(std::max<int64_t>(1, plan.steps_in_epoch(0)));
      bool has_mom = false;
      for (int64_t st = 0; st < plan.total_steps(); ++st) {
        lr.x.push_back(static_cast<double>(st) / spe);
        lr.y.push_back(plan.lr_at(st));
        if (auto m = plan.momentum_at(st)) {
          mom.x.push_back(static_cast<double>(st) / spe);
          mom.y.push_back(*m);
          has_mom = true;
        }
      }
      report::line_plot(o.plot_schedule, {lr}, {"learning rate: " + plan.describe(), "epoch", "lr"});
      std::string mom_png;
      if (has_mom) {
        mom_png = fs::path(o.plot_schedule).replace_extension("").string() + "_momentum.png";
        report::line_plot(mom_png, {mom}, {"momentum / beta1", "epoch", "momentum"});
      }
      std::cout << "wrote " << o.plot_schedule << (mom_png.empty() ? "" : " and " + mom_png) << " ("
                << plan.total_steps() << " updates, peak lr " << fmt(*std::max_element(lr.y.begin(), lr.y.end()))
                << ")\n";
      return kExitOk;
    }
  }
  if (o.dry_run || o.check_data) {
    log(o, std::string(o.check_data ? "check-data" : "dry run") + ": recipe valid, every component built, " +
               std::to_string(table.size()) + " rows usable" +
               (table.dropped.empty() ? "" : ", " + std::to_string(table.dropped.size()) + " bad rows skipped") +
               "; nothing trained");
    return kExitOk;
  }

  // --- the run directory: fresh, or the run being resumed ---
  // Data parallel: rank 0 decides (and alone writes into) the run directory; the other ranks read the
  // same checkpoints to resume and write their copies of everything into a private scratch folder
  // that is removed when they end.
  const bool writer = o.dist.writer();
  ResumeTarget target;
  if (writer) target = resume_target(o);
  if (s.group) {
    std::vector<std::string> shared{target.run_dir, target.checkpoint};
    s.group->broadcast_strings(shared);
    target.run_dir = shared[0];
    target.checkpoint = shared[1];
  }
  if (!target.note.empty()) log(o, "  " + target.note);
  const bool resuming = !target.run_dir.empty();
  ScratchDir scratch(writer ? std::string() : "kgtrain-rank" + std::to_string(o.dist.rank));
  std::string run_dir;
  if (!writer) {
    run_dir = scratch.path();
  } else if (resuming) {
    run_dir = target.run_dir;
    KG_CHECK(fs::exists(fs::path(run_dir) / "folds.csv"), UsageError, "--resume: ", run_dir,
             " is not a kgtrain fit run (no folds.csv)");
    if (fs::exists(fs::path(run_dir) / "recipe.toml")) {
      auto diff =
          changed_lines(read_file((fs::path(run_dir) / "recipe.toml").string()), config::to_toml(o.recipe, false));
      if (!diff.empty())
        log(o, "  warning: the recipe differs from the run's recipe.toml; resuming with the new values: " +
                   join(diff, " | "));
    }
    std::vector<std::string> ids;
    for (const auto& row : table.rows) ids.push_back(row.id);
    check_same_split(run_dir, ids, s.folds);
    log(o, "  resume  " + run_dir);
  } else {
    run_dir = prepare_run_dir(o);
    log(o, "  run dir " + run_dir);
    write_file_atomic((fs::path(run_dir) / "classes.json").string(), classes.to_json().dump(2) + "\n");
    std::string f = data::csv_line({"id", "fold"});
    for (int64_t i = 0; i < table.size(); ++i)
      f += data::csv_line({table.rows[static_cast<size_t>(i)].id, std::to_string(s.folds[static_cast<size_t>(i)])});
    write_file_atomic((fs::path(run_dir) / "folds.csv").string(), f);
    if (!table.dropped.empty())
      write_file_atomic((fs::path(run_dir) / "bad_rows.csv").string(), data::bad_rows_csv(table.dropped));
  }
  // optim.lr = "find": the finder on the first fold's freshly built network (its state is restored, and
  // every fold builds its own network anyway), then every fold trains with its suggestion. A resumed
  // run reuses the lr its finder chose.
  json lr_find_summary;
  if (lr_find) {
    const fs::path found = fs::path(run_dir) / "lr_find.json";
    json lf;
    if (resuming && fs::exists(found)) {
      lf = json::parse(read_file(found.string()));
      KG_CHECK(lf.contains("lr") && lf["lr"].is_number(), DataError, found.string(),
               " holds no \"lr\": remove it to run the finder again");
      log(o, "  lr find reused from " + found.string());
    } else {
      auto net = build_net();
      net->to(dev.device);
      if (dev.channels_last) net->set_channels_last(true);
      lf = run_lr_finder(s, *net, cv.run_folds.front(), run_dir);
    }
    s.recipe = with_lr(s.recipe, lf["lr"].get<double>());
    lr_find_summary = {{"lr", lf["lr"]},
                       {"chosen", lf["chosen"]},
                       {"suggestions", lf["suggestions"]},
                       {"steps", lf["steps"]},
                       {"stopped_early", lf["stopped_early"]},
                       {"fold", cv.run_folds.front()},
                       {"seconds", lf["seconds"]}};
    log(o, "  optim   lr = " + json(lf["lr"]).dump() + " (lr finder, " + lf["chosen"].get<std::string>() + ")");
  }
  const std::string recipe_toml = config::to_toml(recipe, false);
  const json prov = provenance(o);
  const double budget = train::parse_duration(run.time_limit);
  const bool multi = cv.run_folds.size() > 1;
  json summary = {
      {"command", "fit"}, {"run_dir", run_dir}, {"folds", json::array()}, {"metric", monitor}, {"model", model_info}};
  if (lr_find) summary["lr_find"] = lr_find_summary;
  if (!o.auto_batch.is_null()) summary["auto_batch"] = o.auto_batch;
  train::ProgressStyle style{o.quiet, o.tty, topt.log_every_s};

  auto train_fold = [&](size_t fi, int64_t k) -> FoldOutcome {
    FoldOutcome out;
    const fs::path dir = multi ? fs::path(run_dir) / ("fold_" + std::to_string(k)) : fs::path(run_dir);
    make_directories(dir.string());
    // Where a resume reads from: the run itself (a non-writing rank's own outputs are scratch).
    const fs::path src =
        resuming ? (multi ? fs::path(target.run_dir) / ("fold_" + std::to_string(k)) : fs::path(target.run_dir)) : dir;
    if (resuming && fs::exists(src / "fold.json") && fs::exists(src / "oof_fold.csv")) {
      log(o, "fold " + std::to_string(k) + ": already finished in " + src.string() + "; skipped");
      out.status = "completed";
      out.summary = json::parse(read_file((src / "fold.json").string()));
      return out;
    }
    auto [train_rows, valid_rows] = split_of(k);
    auto net = build_net();
    net->to(dev.device);
    if (dev.channels_last) net->set_channels_last(true);
    auto opt = optim::build(recipe, *net);
    train::Plan plan(recipe, epochs, s.steps_of(static_cast<int64_t>(train_rows.size())), net->group_names());
    auto train_loader = [&, rows = train_rows](int64_t epoch, int64_t start) {
      return s.train_loader(rows, epoch, plan.epochs(), start);
    };
    auto valid_loader = [&, rows = valid_rows]() { return s.valid_loader(rows); };
    train::MixFn mixing = s.mix_fn();
    train::TrainerIO io;
    io.dir = dir.string();
    io.label = multi ? "fold " + std::to_string(k) : "";
    io.recipe_toml = recipe_toml;
    io.provenance = prov;
    io.state_fields = {{"kgtrain", "fit"},
                       {"model", model::model_name(recipe)},
                       {"classes", classes.to_json()},
                       {"task", task},
                       {"input", {{"channels", geom.channels}, {"height", geom.height}, {"width", geom.width}}},
                       {"fold", k},
                       {"folds", cv.folds}};
    io.progress = style;
    io.log = [&](const std::string& l) { log(o, l); };
    if (budget > 0) {
      // The budget left is shared by the folds still to train.
      double left = budget - elapsed();
      double share = left / static_cast<double>(cv.run_folds.size() - fi);
      io.deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(std::max(0.0, share) * 1000));
    }
    train::TrainerParts parts{net.get(),
                              opt.get(),
                              s.loss.get(),
                              &metrics,
                              dev.device,
                              task,
                              dev.precision,
                              dev.make_scaler(),
                              o.fake_oom_above,
                              s.group,
                              static_cast<int64_t>(s.dev_opts.dist_bucket_mb * (1 << 20)),
                              s.dev_opts.dist_overlap,
                              s.shards_validation(valid_rows.size()),
                              s.cuda_graphs,
                              o.emulate_graphs};
    // SyncBatchNorm for this fold's training loop (the trainer turns it off when the loop ends).
    if (s.group && s.dev_opts.sync_batchnorm) {
      auto g = s.group;
      model::set_batchnorm_sync([g](const at::Tensor& t) { return g->differentiable_sum(t); });
    }
    train::Trainer trainer(std::move(parts), plan, topt, copt, train_loader, valid_loader, mixing,
                           train::build_callbacks(recipe), io);
    if (resuming)
      resume_fold(trainer, target, src.string(), k, multi ? "fold " + std::to_string(k) + ": " : std::string(), writer,
                  s.group, o);
    auto outcome = trainer.fit();
    const auto& s = trainer.state();
    out.status = outcome.status;
    out.signal = outcome.signal;
    out.summary = {
        {"fold", k},
        {"status", outcome.status},
        {"epochs_completed", s.epoch},
        {"updates", s.step},
        {"skipped_updates", s.skipped_updates},
        {"precision", device::precision_name(dev.precision)},
        {"processes", o.dist.world_size},
        {"validation_shards", setup.shards_validation(valid_rows.size()) ? o.dist.world_size : 1},
        {"best",
         {{"metric", monitor},
          {"value", s.best ? json(*s.best) : json()},
          {"epoch", s.best_epoch},
          {"from", s.best_from}}},
        {"train_images_per_s", s.train_seconds > 0 ? static_cast<double>(s.train_images) / s.train_seconds : 0.0},
        {"dir", dir.string()}};
    if (!s.stop_reason.empty()) out.summary["stop_reason"] = s.stop_reason;
    if (trainer.scaler().enabled()) out.summary["loss_scaler"] = trainer.scaler().state();
    if (s.oom_halvings > 0) out.summary["oom_backoff"] = {{"halvings", s.oom_halvings}, {"events", s.oom_events}};
    if (outcome.status == "interrupted") return out;
    // Out-of-fold predictions with the weights tta-predict uses by default: checkpoints/best.
    const fs::path best = dir / "checkpoints" / "best";
    std::string used = "final weights";
    if (fs::exists(best) && train::checkpoint_problem(best.string(), false).empty()) {
      model::load_state_dict(*net, train::load_checkpoint(best.string(), false).weights, true, best.string());
      used = "checkpoints/best";
    }
    if (setup.group) {
      // Every rank predicts its share with rank 0's weights (a resumed run's earlier best is in rank 0's folder only).
      train::broadcast_weights(*net, *setup.group);
      std::vector<std::string> u{used};
      setup.group->broadcast_strings(u);
      used = u[0];
    }
    auto vl = valid_loader();
    auto pred = train::predict(*net, *vl, dev.device, nullptr, task, dev.precision);
    if (setup.shards_validation(valid_rows.size())) train::gather_predictions(pred, *setup.group);
    double value =
        metrics.compute(pred.probs, pred.targets).at(monitor == "valid_loss" ? metrics.names().front() : monitor);
    out.summary["oof"] = {{"weights", used}, {"rows", pred.images}};
    write_oof_fold(dir.string(), table, classes, dopt.id_col, k, cv.folds,
                   monitor == "valid_loss" ? metrics.names().front() : monitor, pred, out.summary);
    log(o, (multi ? "fold " + std::to_string(k) + ": " : std::string()) + "out-of-fold " +
               (monitor == "valid_loss" ? metrics.names().front() : monitor) + " " + fmt(value) + " on " +
               std::to_string(pred.images) + " rows (" + used + ")");
    if (multi) write_summary(dir.string(), out.summary);
    return out;
  };

  double best_single = NAN;
  for (size_t fi = 0; fi < cv.run_folds.size(); ++fi) {
    auto r = train_fold(fi, cv.run_folds[fi]);
    summary["folds"].push_back(r.summary);
    if (r.summary.contains("best") && r.summary["best"]["value"].is_number())
      best_single = r.summary["best"]["value"].get<double>();
    if (r.status == "interrupted") {
      summary.update({{"status", "interrupted"},
                      {"wall_s", elapsed()},
                      {"epochs_completed", r.summary["epochs_completed"]},
                      {"best", r.summary["best"]}});
      write_summary(run_dir, summary);
      int code = r.signal == SIGTERM ? kExitSigterm : kExitSigint;
      throw Interrupted(code, "stopped by signal " + std::to_string(r.signal) + " in fold " +
                                  std::to_string(cv.run_folds[fi]) +
                                  "; everything is saved: continue with kgtrain fit ... --resume " + run_dir);
    }
  }
  if (multi) {
    auto cvj = merge_oof({run_dir}, run_dir);
    summary["cv"] = cvj;
    log(o, "cv " + cvj["metric"].get<std::string>() + ": oof " + fmt(cvj["oof"].get<double>()) + ", folds mean " +
               fmt(cvj["mean"].get<double>()) + " +- " + fmt(cvj["std"].get<double>()));
  }
  if (o.smoke) {
    // Lightning's fast_dev_run also exercises prediction: two batches of the test table.
    data::Table test = data::load_split(dopt, data::Split::test, classes, false, s.threads);
    std::vector<int64_t> rows(static_cast<size_t>(test.size()));
    for (int64_t i = 0; i < test.size(); ++i) rows[static_cast<size_t>(i)] = i;
    data::LoaderOptions po{train::eval_batch_size(topt),    false,  false, static_cast<int>(dopt.num_workers),
                           static_cast<int>(dopt.prefetch), s.seed, 0,     2};
    data::Loader ploader(test, rows, *s.eval_pipe, po);
    auto net = build_net();
    net->to(dev.device);
    auto pred = train::predict(*net, ploader, dev.device, nullptr, task, dev.precision);
    summary["smoke_predictions"] = pred.images;
    log(o, "smoke: predicted " + std::to_string(pred.images) + " test rows");
  }
  std::string finish = "completed";  // or why a fold ended early: early_stopped, time_budget
  for (auto& f : summary["folds"])
    if (f["status"] != "completed") finish = f["status"].get<std::string>();
  const auto& last = summary["folds"].back();
  summary.update({{"status", "completed"},
                  {"finish", finish},
                  {"smoke", o.smoke},
                  {"best", last["best"]},
                  {"epochs_completed", last["epochs_completed"]},
                  {"train_images_per_s", last["train_images_per_s"]},
                  {"wall_s", elapsed()},
                  {"device", dev.description}});
  write_summary(run_dir, summary);
  if (!writer) return kExitOk;  // its outputs were scratch; rank 0 reports
  std::cout << "fit completed: " << cv.run_folds.size() << (multi ? " folds" : " fold") << ", " << monitor << " ";
  if (multi)
    std::cout << "oof " << fmt(summary["cv"]["oof"].get<double>()) << " (folds mean "
              << fmt(summary["cv"]["mean"].get<double>()) << ")";
  else
    std::cout << "best " << (std::isnan(best_single) ? std::string("n/a") : fmt(best_single)) << " (epoch "
              << last["best"]["epoch"] << ")";
  std::cout << ", " << fmt(last["train_images_per_s"].get<double>(), 5) << " train img/s, " << fmt(elapsed(), 4)
            << " s\n"
            << "run dir: " << run_dir << "\n";
  return kExitOk;
}

}  // namespace kg::jobs
