#include "jobs/interpret.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <numeric>

#include <torch/torch.h>

#include "config/flags.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/run_lock.h"
#include "core/strings.h"
#include "data/csv.h"
#include "report/heatmap.h"
#include "report/plot.h"
#include "session/oof.h"
#include "session/training.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kg::jobs {
namespace {

void write_confusion(const metric::Interpretation& in, const std::string& out) {
  const int64_t K = in.confusion.size(0);
  std::vector<std::vector<double>> counts(static_cast<size_t>(K)), norm(static_cast<size_t>(K));
  std::vector<std::string> header{"actual\\predicted"};
  header.insert(header.end(), in.names.begin(), in.names.end());
  std::string csv = data::csv_line(header);
  for (int64_t i = 0; i < K; ++i) {
    std::vector<std::string> line{in.names[static_cast<size_t>(i)]};
    const double total = in.confusion[i].sum().item<double>();
    for (int64_t j = 0; j < K; ++j) {
      const double c = in.confusion[i][j].item<double>();
      counts[static_cast<size_t>(i)].push_back(c);
      norm[static_cast<size_t>(i)].push_back(total > 0 ? c / total : 0.0);
      line.push_back(std::to_string(static_cast<int64_t>(c)));
    }
    csv += data::csv_line(line);
  }
  write_file_atomic(out + "/confusion_matrix.csv", csv);
  if (report::can_plot())
    write_file_atomic(out + "/confusion_matrix.png",
                      report::heatmap_png({{counts, "confusion matrix (counts)", true},
                                           {norm, "row-normalised (recall on the diagonal)", false}},
                                          in.names));
}

void write_per_class(const metric::Interpretation& in, const std::string& out) {
  std::vector<std::string> header{"class", "precision", "recall", "f1", "support"};
  if (in.task == Task::multilabel) header.push_back("auc");
  std::string csv = data::csv_line(header);
  for (auto& r : in.rows) {
    std::vector<std::string> line{r.name, format_significant(r.precision, 4), format_significant(r.recall, 4),
                                  format_significant(r.f1, 4), std::to_string(r.support)};
    if (in.task == Task::multilabel) line.push_back(std::isfinite(r.auc) ? format_significant(r.auc, 4) : "");
    csv += data::csv_line(line);
  }
  write_file_atomic(out + "/per_class.csv", csv);
}

// Regression: predicted vs true (with the y = x line) and the residual histogram, per target.
void write_regression_plots(const metric::Interpretation& in, const session::OofTable& oof, const std::string& out) {
  if (!report::can_plot()) return;
  for (size_t k = 0; k < in.names.size(); ++k) {
    const at::Tensor p = oof.preds.select(1, static_cast<int64_t>(k)).to(torch::kDouble).contiguous();
    const at::Tensor t = oof.targets.select(1, static_cast<int64_t>(k)).to(torch::kDouble).contiguous();
    report::Series pts{"rows",
                       {t.data_ptr<double>(), t.data_ptr<double>() + t.numel()},
                       {p.data_ptr<double>(), p.data_ptr<double>() + p.numel()},
                       true};
    const double lo = std::min(t.min().item<double>(), p.min().item<double>());
    const double hi = std::max(t.max().item<double>(), p.max().item<double>());
    report::Series diag{"y = x", {lo, hi}, {lo, hi}, false};
    const std::string suffix = in.names.size() > 1 ? "_" + std::to_string(k) : "";
    report::line_plot(out + "/pred_vs_true" + suffix + ".png", {pts, diag},
                      {"predicted vs true: " + in.names[k], "true", "predicted"});
    const at::Tensor res = p - t;
    const double rlo = res.min().item<double>(), rhi = res.max().item<double>();
    const int bins = 30;
    const double w = rhi > rlo ? (rhi - rlo) / bins : 1.0;
    std::vector<double> x, y(bins, 0.0);
    for (int b = 0; b < bins; ++b) x.push_back(rlo + (b + 0.5) * w);
    auto r = res.accessor<double, 1>();
    for (int64_t i = 0; i < res.numel(); ++i)
      y[static_cast<size_t>(std::min(bins - 1, static_cast<int>((r[i] - rlo) / w)))] += 1;
    report::line_plot(out + "/residuals" + suffix + ".png", {{"rows per bin", x, y, false}},
                      {"residuals (predicted - true): " + in.names[k], "residual", "rows"});
  }
}

void print_summary(const metric::Interpretation& in, const std::string& source, size_t rows) {
  std::cout << "interpret: " << rows << " out-of-fold rows from " << source << ", " << task_name(in.task) << "\n";
  if (in.task == Task::regression) {
    for (size_t k = 0; k < in.names.size(); ++k)
      std::cout << "  " << in.names[k] << ": MAE " << format_significant(in.mae[k], 4) << ", RMSE "
                << format_significant(in.rmse[k], 4) << ", R2 " << format_significant(in.r2[k], 4) << "\n";
    return;
  }
  std::cout << "  accuracy " << format_significant(in.accuracy, 4) << ", macro F1 "
            << format_significant(in.macro_f1, 4) << "\n";
  size_t w = 5;
  for (auto& r : in.rows) w = std::max(w, r.name.size());
  std::cout << "  " << std::string(w - 5, ' ') << "class  precision  recall  f1      support"
            << (in.task == Task::multilabel ? "  auc" : "") << "\n";
  char b[160];
  for (auto& r : in.rows) {
    std::snprintf(b, sizeof b, "  %*s  %9.4f  %6.4f  %6.4f  %7lld", static_cast<int>(w), r.name.c_str(), r.precision,
                  r.recall, r.f1, static_cast<long long>(r.support));
    std::cout << b << (in.task == Task::multilabel ? "  " + format_significant(r.auc, 4) : "") << "\n";
  }
  if (!in.most_confused.empty()) {
    std::cout << "  most confused (actual -> predicted: rows):";
    for (size_t i = 0; i < std::min<size_t>(5, in.most_confused.size()); ++i) {
      const auto& c = in.most_confused[i];
      std::cout << (i ? "," : "") << " " << in.names[static_cast<size_t>(c.truth)] << " -> "
                << in.names[static_cast<size_t>(c.predicted)] << ": " << c.count;
    }
    std::cout << "\n";
  }
}

}  // namespace

const config::Fields<InterpretFlags>& interpret_flags() {
  static const config::Fields<InterpretFlags> f = [] {
    using F = InterpretFlags;
    config::Fields<F> t;
    t.field("out", &F::out, "output folder (none: RUN/interpret)");
    t.field("top", &F::top, "top-loss images in top_losses.png").range(0, 256);
    t.field("cam", &F::cam,
            "Grad-CAM overlays of the top-loss and of random validation images (cam_*.png) and their peaks "
            "(cams.csv), each fold's rows with its own checkpoint (tta.weights)");
    t.field("cam_n", &F::cam_n, "random validation images with a Grad-CAM").range(0, 100000);
    return t;
  }();
  return f;
}

int run_interpret(const InterpretRequest& r) {
  config::check_flags(interpret_flags(), r.flags);
  const fs::path run(r.run);
  lock_run_dir(r.run, "interpret", LockMode::shared);  // not while a process still writes the run
  const fs::path oof_path = fs::exists(run / "oof.csv") ? run / "oof.csv" : run / "oof_fold.csv";
  KG_CHECK(fs::exists(oof_path), DataError, r.run,
           " has no out-of-fold predictions (oof.csv or oof_fold.csv): interpret reads a fit run that finished "
           "(an interrupted one continues with kgtrain fit --resume ",
           r.run, ")");
  KG_CHECK(fs::exists(run / "classes.json"), DataError, r.run, " has no classes.json: not a fit run folder");
  const auto classes = data::ClassList::from_json(json::parse(read_file((run / "classes.json").string())));
  const auto csv = data::read_csv(oof_path.string());
  KG_CHECK(!csv.header.empty() && !csv.rows.empty(), DataError, oof_path.string(), " has no rows");
  const session::OofTable oof = session::read_oof(csv, classes, csv.header[0]);
  std::vector<std::string> names = classes.names;
  const auto in = metric::interpret(classes.task, names, oof.preds, oof.targets);

  session::Session o = r;
  o.recipe =
      o.recipe.with({{"data.cache", "none"}}, config::Origin::command_line());  // only the rows shown are decoded
  session::TrainingContext s(o, "interpret");
  std::map<std::string, int64_t> row_of;
  for (int64_t i = 0; i < s.data.table.size(); ++i) row_of[s.data.table.rows[static_cast<size_t>(i)].id] = i;
  std::vector<int64_t> table_rows;
  for (size_t i = 0; i < oof.ids.size(); ++i) {
    auto it = row_of.find(oof.ids[i]);
    KG_CHECK(it != row_of.end(), DataError, csv.where(i + 1), ": id ", oof.ids[i], " is not in the training table ",
             s.data.table.csv_path, " (was the run trained on other data? paths.data and data.* must match)");
    table_rows.push_back(it->second);
  }
  if (o.dry_run) {
    o.log("dry run: " + std::to_string(oof.ids.size()) + " out-of-fold rows readable; nothing written");
    return kExitOk;
  }
  const std::string out = r.flags.out.empty() ? (run / "interpret").string() : r.flags.out;
  make_directories(out);
  if (in.confusion.defined()) write_confusion(in, out);
  if (in.task != Task::regression) write_per_class(in, out);
  if (in.task == Task::regression) write_regression_plots(in, oof, out);
  json j = in.to_json();
  j["run"] = r.run;
  j["source"] = oof_path.filename().string();
  j["rows"] = oof.ids.size();
  j["images"] = write_interpret_images(r, s, oof, in, table_rows, out);
  write_file_atomic(out + "/interpret.json", j.dump(2) + "\n");
  print_summary(in, oof_path.filename().string(), oof.ids.size());
  std::cout << "wrote " << out << "/ (interpret.json" << (in.confusion.defined() ? ", confusion_matrix.png/.csv" : "")
            << (in.task != Task::regression ? ", per_class.csv" : ", pred_vs_true.png, residuals.png")
            << (r.flags.top > 0 ? (s.data.table.is_text() ? ", top_losses.csv" : ", top_losses.png") : "")
            << (r.flags.cam ? ", cam_top_losses.png, cam_random.png, cams.csv" : "") << ")\n";
  return kExitOk;
}

}  // namespace kg::jobs
