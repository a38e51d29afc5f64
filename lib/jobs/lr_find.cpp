// `kgtrain lr-find`: fastai's learning-rate finder on the recipe's training stream (fold cv.fold's
// training rows, augmentation, mixup, accumulation, optimizer, freezing and precision as fit's first
// epoch would have them). Writes lr_find.csv / .json / .png and summary.json; `fit` with
// optim.lr = "find" runs the same finder through run_lr_finder.
#include "jobs/lr_find.h"

#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "core/error.h"
#include "core/fs.h"
#include "core/sha256.h"
#include "core/strings.h"
#include "data/loader.h"
#include "loss/loss.h"
#include "model/model.h"
#include "optim/param_groups.h"
#include "report/plot.h"
#include "session/auto_batch.h"
#include "session/session.h"
#include "session/training.h"
#include "train/lr_finder.h"
#include "train/plan.h"
#include "train/progress.h"

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace kg::jobs {
namespace {

// A CSV cell that reads back as the same double ("nan" / "inf" for non-finite values).
std::string cell(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return json(v).dump();
}

// np.interp(x, xp, fp) for increasing xp: clamped to the end values outside.
double interp(double x, const std::vector<double>& xp, const std::vector<double>& fp) {
  if (xp.empty()) return NAN;
  if (x <= xp.front()) return fp.front();
  if (x >= xp.back()) return fp.back();
  size_t i = 1;
  while (i < xp.size() && xp[i] < x) ++i;
  const double t = (x - xp[i - 1]) / (xp[i] - xp[i - 1]);
  return fp[i - 1] + t * (fp[i] - fp[i - 1]);
}

// The epochs of fit's plan (fine_tune adds its frozen epochs): the loaders' progressive-resizing stage.
int64_t plan_epochs(const session::TrainingContext& s, const model::Network& net, const std::vector<int64_t>& rows) {
  const config::Recipe r = optim::with_numeric_lr(s.session.recipe);
  train::Plan plan(r, s.epochs, s.steps_of(rows), net.group_names());
  return plan.epochs();
}

void write_outputs(const train::LrFindResult& r, const std::string& dir) {
  const fs::path d(dir);
  std::string csv = "lr,loss,smoothed\n";
  for (size_t i = 0; i < r.lrs.size(); ++i)
    csv += cell(r.lrs[i]) + "," + cell(r.losses[i]) + "," + cell(r.smoothed[i]) + "\n";
  write_file_atomic((d / "lr_find.csv").string(), csv);
  write_file_atomic((d / "lr_find.json").string(), r.to_json().dump(2) + "\n");
  if (!report::can_plot()) return;  // said by print_table

  // fastai's plot_lr_find: the smoothed loss on a log lr axis without the last 5 points (skip_end).
  report::Series curve{"smoothed loss", {}, {}, false};
  const size_t shown = r.lrs.size() > 10 ? r.lrs.size() - 5 : r.lrs.size();
  std::vector<double> log_lr, finite_loss;
  for (size_t i = 0; i < shown; ++i) {
    curve.x.push_back(r.lrs[i]);
    curve.y.push_back(r.smoothed[i]);
    if (std::isfinite(r.smoothed[i])) {
      log_lr.push_back(std::log10(r.lrs[i]));
      finite_loss.push_back(r.smoothed[i]);
    }
  }
  std::vector<report::Marker> markers;
  std::vector<std::string> order{r.chosen};
  for (auto& n : train::suggestion_names())
    if (n != r.chosen) order.push_back(n);
  for (auto& n : order) {
    auto it = r.suggestions.find(n);
    if (it == r.suggestions.end() || !it->second) continue;
    const double lr = *it->second;
    markers.push_back({lr, interp(std::log10(lr), log_lr, finite_loss),
                       (n == r.chosen ? "* " : "") + n + " " + format_significant(lr, 3)});
  }
  report::PlotOptions po;
  po.title = "lr finder: " + r.chosen + " " + format_significant(r.lr, 3) + " (" + std::to_string(r.steps()) +
             " updates" + (r.stopped_early ? ", stopped early" : "") + ")";
  po.xlabel = "learning rate";
  po.ylabel = "smoothed loss";
  po.log_x = true;
  report::line_plot((d / "lr_find.png").string(), {curve}, po, markers);
}

// The short table on stdout: the chosen suggestion first.
void print_table(const train::LrFindResult& r, const std::string& dir) {
  std::cout << "lr finder: " << r.steps() << " updates from " << format_significant(r.options.start_lr, 3) << " to "
            << format_significant(r.lrs.back(), 3) << (r.stopped_early ? " (stopped early: " + r.stop_reason + ")" : "")
            << ", " << format_significant(r.seconds, 4) << " s ("
            << format_significant(r.seconds / static_cast<double>(std::max<int64_t>(1, r.steps())), 3)
            << " s per update)\n";
  std::cout << "  suggestion  lr\n";
  std::vector<std::string> order{r.chosen};
  for (auto& n : train::suggestion_names())
    if (n != r.chosen) order.push_back(n);
  for (auto& n : order) {
    auto& v = r.suggestions.at(n);
    std::string name = n;
    name.resize(10, ' ');
    std::cout << "  " << name << "  " << (v ? format_significant(*v, 3) : std::string("n/a"))
              << (n == r.chosen ? "  <- chosen" : "") << "\n";
  }
  for (auto& note : r.notes) std::cout << "note: " << note << "\n";
  std::cout << "wrote " << (fs::path(dir) / "lr_find.csv").string() << ", lr_find.json"
            << (report::can_plot() ? ", lr_find.png\n"
                                   : " (no lr_find.png: this kgtrain was built without OpenCV, which draws it)\n");
}

}  // namespace

json run_lr_finder(const session::TrainingContext& s, model::Network& net, int64_t fold, const std::string& dir) {
  auto opts = s.session.recipe.get<train::LrFindOptions>();
  if (s.session.smoke) opts.num_steps = std::min<int64_t>(opts.num_steps, 20);
  const auto rows = s.split_of(fold).first;
  const int64_t n_epochs = plan_epochs(s, net, rows);
  s.session.log(
      "  lr find " + std::to_string(opts.num_steps) + " updates, lr " + format_significant(opts.start_lr, 3) + " to " +
      format_significant(opts.end_lr, 3) + " (exponential), on fold " + std::to_string(fold) + "'s " +
      std::to_string(rows.size()) + " training rows; batch " + std::to_string(s.opt.train.batch_size) +
      (s.opt.train.accum_steps > 1 ? " x " + std::to_string(s.opt.train.accum_steps) + " accumulated" : "") +
      (opts.stop_div ? "; stops when the smoothed loss exceeds " + format_significant(opts.div_factor, 3) + "x its best"
                     : ""));
  train::FinderParts parts;
  parts.net = &net;
  parts.recipe = &s.session.recipe;
  parts.loss = s.loss.get();
  parts.device = s.dev.device;
  parts.precision = s.dev.precision;
  parts.scaler = s.dev.make_scaler();
  parts.batches = [&s, &rows, n_epochs](int64_t epoch) {
    return train::loader_source(s.train_loader(rows, epoch, n_epochs));
  };
  parts.mix = s.mix_fn();
  train::Progress progress({s.session.quiet, s.session.tty, s.opt.train.log_every_s, s.session.columns}, "lr find",
                           opts.num_steps);
  const int64_t per_update = s.opt.train.batch_size * s.opt.train.accum_steps;
  parts.progress = [&](const train::LrFindResult& so_far) {
    progress.update(
        so_far.steps(), [&] { return so_far.smoothed.back(); }, so_far.lrs.back(), so_far.steps() * per_update);
  };
  auto r = train::find_lr(opts, parts);
  progress.finish(r.smoothed.empty() ? 0.0 : r.smoothed.back());
  write_outputs(r, dir);
  print_table(r, dir);
  return r.to_json();
}

int run_lr_find(const session::Session& given) {
  const auto t_start = Clock::now();
  session::Session o = given;
  session::resolve_auto_batch(o);
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - t_start).count(); };
  session::TrainingContext s(o, "lr-find");
  (void)s.session.recipe.get<train::LrFindOptions>();  // start_lr < end_lr before anything is built
  const int64_t fold = s.opt.cv.run_folds.front();
  if (s.opt.cv.run_folds.size() > 1)
    o.log("  note    cv.fold names " + std::to_string(s.opt.cv.run_folds.size()) + " folds: the finder sweeps fold " +
          std::to_string(fold) + " (fit optim.lr = \"find\" uses its lr for every fold)");
  auto built = s.build_net();
  auto& net = built.net;
  net->to(s.dev.device);
  if (s.dev.channels_last) net->set_channels_last(true);
  o.log("  model   " + model::model_name(s.session.recipe) + ", " + std::to_string(model::count_parameters(*net)) +
        " parameters; groups " + join(net->group_names(), ", ") + "; optimizer " +
        s.session.recipe.get<optim::OptimOptions>().name + "; loss " + loss::loss_name(s.session.recipe, s.data.task) +
        "; precision " + device::precision_name(s.dev.precision));
  for (auto& n : s.session.preprocessing_notes) o.log("  data    " + n);
  for (auto& n : built.weight_notes) o.log("  weights " + n);
  if (!built.target_note.empty()) o.log("  target  " + built.target_note);
  (void)plan_epochs(s, *net, s.split_of(fold).first);  // freezing / fine_tune errors now
  if (o.dry_run) {
    o.log("dry run: recipe valid, every component built, " + std::to_string(s.data.table.size()) +
          " rows usable; nothing swept");
    return kExitOk;
  }
  const std::string run_dir = session::prepare_run_dir(o);
  o.log("  run dir " + run_dir);
  const double setup_s = elapsed();
  json lf = run_lr_finder(s, *net, fold, run_dir);

  json recipes = json::array();
  for (auto& l : o.layers) recipes.push_back(session::file_input(l));
  json table = session::file_input(s.data.table.csv_path);
  table["rows"] = s.data.table.size();
  const fs::path d(run_dir);
  json summary = {
      {"command", "lr-find"},
      {"status", "completed"},
      {"run_dir", run_dir},
      {"smoke", o.smoke},
      {"fold", fold},
      {"inputs", {{"recipes", recipes}, {"train_table", table}, {"fold_train_rows", s.split_of(fold).first.size()}}},
      {"outputs", {(d / "lr_find.csv").string(), (d / "lr_find.json").string(), (d / "lr_find.png").string()}},
      {"lr_find", lf},
      {"lr", lf["lr"]},
      {"timings",
       {{"setup_s", setup_s},
        {"sweep_s", lf["seconds"]},
        {"seconds_per_update", lf["seconds_per_update"]},
        {"wall_s", elapsed()}}},
      {"device", s.dev.description}};
  if (!o.auto_batch.is_null()) summary["auto_batch"] = o.auto_batch;
  session::write_summary(run_dir, summary);
  std::cout << "run dir: " << run_dir << "\n";
  return kExitOk;
}

}  // namespace kg::jobs
