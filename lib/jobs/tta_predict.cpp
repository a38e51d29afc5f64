// `kgtrain tta-predict`: predict the test table with an ensemble (checkpoints, every fold of fit runs,
// weights files) and the tta.views; write the submission (and the probabilities); with labels, score
// every view, every member and the ensemble. `--oof` instead predicts each fold's validation rows with
// its own model and the views (oof_tta.csv, cv_tta.json): TTA measured on CV.
#include "jobs/tta_predict.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include "config/flags.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/strings.h"
#include "data/csv.h"
#include "data/options.h"
#include "data/submission.h"
#include "data/table.h"
#include "metric/metric_set.h"
#include "session/ensemble.h"
#include "session/oof.h"
#include "session/session.h"
#include "train/engine.h"
#include "train/options.h"
#include "tta/view.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kg::jobs {
namespace {

std::string fmt4(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4f", v);
  return b;
}

// One line per scored prediction: "  name  metric=value ...".
std::string score_line(const std::string& name, const std::map<std::string, double>& values,
                       const std::vector<std::string>& order) {
  std::string s = "  " + name;
  if (s.size() < 44) s.resize(44, ' ');
  for (auto& n : order) s += "  " + n + " " + fmt4(values.at(n));
  return s;
}

json scores_json(const std::map<std::string, double>& values) {
  json j = json::object();
  for (auto& [k, v] : values) j[k] = v;
  return j;
}

// --oof: each fold's model on its own validation rows (folds.csv of its run).
int run_oof(const TtaPredictRequest& o, const session::Ensemble& e, const std::string& run_dir,
            std::chrono::steady_clock::time_point t0) {
  KG_CHECK(!e.members.empty(), UsageError, "--oof needs --from-run RUN_DIR");
  for (auto& m : e.members)
    KG_CHECK(!m.run_dir.empty() && m.fold >= 0, UsageError,
             "--oof predicts each fold's validation rows with that fold's "
             "model: give fit runs with --from-run (",
             m.name, " is not a fold of a run)");
  auto dopt = o.recipe.get<data::DataOptions>();
  dopt.on_bad_row = "skip";  // the split (folds.csv) says which rows were trained on
  data::Table table = data::load_split(dopt, data::Split::train, e.classes, false,
                                       std::max<int>(1, static_cast<int>(dopt.num_workers)));
  session::EnsemblePredictor predictor(o, e.classes, table.feature_dim);
  const metric::MetricSet metrics(o.recipe, predictor.task(), e.classes.outputs());
  const std::string metric = metrics.names().front();
  std::map<std::string, int64_t> row_of;
  for (int64_t i = 0; i < table.size(); ++i) row_of[table.rows[static_cast<size_t>(i)].id] = i;
  json folds = json::array();
  std::string folds_csv;
  std::cout << "out-of-fold " << metric << " per view:\n";
  for (auto& m : e.members) {
    fs::path split = fs::path(m.run_dir) / "folds.csv";
    KG_CHECK(fs::exists(split), UsageError, "--oof: ", m.run_dir, " has no folds.csv (not a kgtrain fit run)");
    if (folds_csv.empty()) folds_csv = split.string();
    KG_CHECK(read_file(split.string()) == read_file(folds_csv), UsageError, "--oof: ", m.run_dir,
             " and the first run use ", "different splits (folds.csv differ); their OOF predictions cannot be merged");
    auto csv = data::read_csv(split.string());
    int idc = csv.require_column("id", ""), fc = csv.require_column("fold", "");
    int64_t folds_total = 0;  // the run's split, not the recipe's cv.folds (a run may have overridden it)
    for (auto& row : csv.rows)
      folds_total = std::max<int64_t>(folds_total, std::atoll(row[static_cast<size_t>(fc)].c_str()) + 1);
    std::vector<int64_t> rows;
    for (size_t r = 0; r < csv.rows.size(); ++r)
      if (std::atoll(csv.rows[r][static_cast<size_t>(fc)].c_str()) == m.fold) {
        auto it = row_of.find(csv.rows[r][static_cast<size_t>(idc)]);
        KG_CHECK(it != row_of.end(), DataError, csv.where(r + 1), ": id ", csv.rows[r][static_cast<size_t>(idc)],
                 " is not in the training table any more; the data changed since the fit");
        rows.push_back(it->second);
      }
    auto mp = predictor.predict(m, table, rows);
    train::Predictions pred;
    pred.probs = mp.probs;
    pred.targets = mp.targets;
    pred.rows = mp.rows;
    pred.images = static_cast<int64_t>(mp.rows.size());
    json views = json::object();
    for (size_t v = 0; v < mp.view_probs.size(); ++v) {
      auto s = metrics.compute(mp.view_probs[v], mp.targets);
      views[mp.view_labels[v]] = scores_json(s);
      std::cout << score_line("fold " + std::to_string(m.fold) + " " + mp.view_labels[v], s, {metric}) << "\n";
    }
    auto merged = metrics.compute(mp.probs, mp.targets);
    std::cout << score_line("fold " + std::to_string(m.fold) + " merged", merged, {metric}) << "\n";
    const std::string fdir = (fs::path(run_dir) / "oof_tta" / ("fold_" + std::to_string(m.fold))).string();
    json extra = {{"weights", m.name}, {"views", views}};
    session::write_oof_fold(fdir, table, e.classes, dopt.id_col, m.fold, folds_total, metric, pred, extra);
    folds.push_back({{"fold", m.fold}, {"weights", m.name}, {"views", views}, {"merged", scores_json(merged)}});
  }
  write_file_atomic((fs::path(run_dir) / "oof_tta" / "folds.csv").string(), read_file(folds_csv));
  auto cv = session::merge_oof({(fs::path(run_dir) / "oof_tta").string()}, run_dir);
  fs::rename(fs::path(run_dir) / "oof.csv", fs::path(run_dir) / "oof_tta.csv");
  fs::rename(fs::path(run_dir) / "cv.json", fs::path(run_dir) / "cv_tta.json");
  std::cout << "cv with TTA: " << metric << " oof " << fmt4(cv["oof"].get<double>()) << " (folds mean "
            << fmt4(cv["mean"].get<double>()) << " +- " << fmt4(cv["std"].get<double>()) << ") -> " << run_dir
            << "/oof_tta.csv\n";
  json members = json::array();
  for (auto& m : e.members) members.push_back(session::file_input(m.name));
  json summary = {{"command", "tta-predict"},
                  {"mode", "oof"},
                  {"run_dir", run_dir},
                  {"runs", o.flags.from_run},
                  {"inputs", {{"members", members}}},
                  {"views", predictor.view_labels()},
                  {"folds", folds},
                  {"cv", cv},
                  {"status", "completed"},
                  {"oof_tta", (fs::path(run_dir) / "oof_tta.csv").string()},
                  {"wall_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()}};
  session::write_summary(run_dir, summary);
  return kExitOk;
}

}  // namespace

const config::Fields<TtaPredictFlags>& tta_predict_flags() {
  static const config::Fields<TtaPredictFlags> f = [] {
    using F = TtaPredictFlags;
    config::Fields<F> t;
    t.field("checkpoint", &F::checkpoint, session::kCheckpointFlagDoc);
    t.field("weights", &F::weights,
            "a weights file (safetensors or torch.save's .pth) for the recipe's model and the classes of its data "
            "(repeat to ensemble; mixes with --checkpoint)");
    t.field("from_run", &F::from_run, session::kFromRunFlagDoc);
    t.field("out", &F::out, "submission CSV path (none: paths.submission, else RUN_DIR/submission.csv)");
    t.field("probs", &F::probs, "also write per-class probabilities to this CSV");
    t.field("oof", &F::oof,
            "with --from-run: predict each fold's validation rows with its own model and the views; writes "
            "oof_tta.csv and cv_tta.json (TTA measured on CV)");
    return t;
  }();
  return f;
}

int run_tta_predict(const TtaPredictRequest& o) {
  config::check_flags(tta_predict_flags(), o.flags);
  auto t0 = std::chrono::steady_clock::now();
  train::PredictionsStopOnSignal stop;  // SIGTERM / Ctrl-C stop the prediction between batches
  KG_CHECK(!o.flags.oof || !o.flags.from_run.empty(), UsageError,
           "--oof needs --from-run RUN_DIR (the fold models and their split)");
  auto same_file = [](const std::string& a, const std::string& b) {
    return fs::absolute(a).lexically_normal() == fs::absolute(b).lexically_normal();
  };
  KG_CHECK(o.flags.out.empty() || o.flags.probs.empty() || !same_file(o.flags.out, o.flags.probs), UsageError,
           "--out and --probs name the same file (", o.flags.out, "): the probabilities would replace the submission");
  session::Ensemble e = session::collect_members(o, o.flags.models());
  auto dopt = o.recipe.get<data::DataOptions>();
  const auto topt = o.recipe.get<tta::TtaOptions>();
  if (o.flags.oof) {
    if (o.dry_run) {
      o.log("dry run: recipe valid, " + std::to_string(e.members.size()) + " fold model(s) found; nothing predicted");
      return kExitOk;
    }
    return run_oof(o, e, session::prepare_run_dir(o), t0);
  }
  // Every test row needs a prediction: a bad test row is an error whatever data.on_bad_row says.
  dopt.on_bad_row = "required";
  data::Table test = data::load_split(dopt, data::Split::test, e.classes, /*scan=*/true,
                                      std::max<int>(1, static_cast<int>(dopt.num_workers)));
  session::EnsemblePredictor predictor(o, e.classes, test.feature_dim);
  o.log("kgtrain tta-predict: " + predictor.device_description() + "; " + std::to_string(test.size()) + " rows from " +
        test.csv_path + "; " + std::to_string(e.members.size()) + " model(s) x views " +
        join(predictor.view_labels(), ", "));
  if (o.dry_run) {
    // Every member must fit the model exactly (head included).
    for (auto& m : e.members) predictor.check(m);
    o.log("dry run: recipe valid, every member fits the model, every test image readable; nothing predicted");
    return kExitOk;
  }
  const std::string run_dir = session::prepare_run_dir(o);
  std::vector<int64_t> rows(static_cast<size_t>(test.size()));
  for (int64_t i = 0; i < test.size(); ++i) rows[static_cast<size_t>(i)] = i;
  const metric::MetricSet metrics(o.recipe, predictor.task(), e.classes.outputs());
  std::vector<at::Tensor> member_probs;
  at::Tensor targets;
  int64_t predicted = 0;
  json per_member = json::array();
  std::vector<std::string> lines;
  for (auto& m : e.members) {
    auto mp = predictor.predict(m, test, rows);
    predicted = static_cast<int64_t>(mp.rows.size());
    member_probs.push_back(mp.probs);
    targets = mp.targets;
    json entry = {{"weights", m.name},
                  {"fold", m.fold},
                  {"images_per_s", mp.seconds > 0 ? mp.images / mp.seconds : 0.0},
                  {"views_per_image", mp.view_labels.size()}};
    if (targets.defined()) {
      json views = json::object();
      for (size_t v = 0; v < mp.view_probs.size(); ++v) {
        auto s = metrics.compute(mp.view_probs[v], targets);
        views[mp.view_labels[v]] = scores_json(s);
        lines.push_back(score_line(fs::path(m.name).parent_path().filename().string() +
                                       (m.fold >= 0 ? " fold " + std::to_string(m.fold) : "") + " " + mp.view_labels[v],
                                   s, metrics.names()));
      }
      auto merged = metrics.compute(mp.probs, targets);
      entry["views"] = views;
      entry["merged"] = scores_json(merged);
      if (mp.view_probs.size() > 1)
        lines.push_back(
            score_line((m.fold >= 0 ? "fold " + std::to_string(m.fold) + " " : std::string("model ")) + "views merged",
                       merged, metrics.names()));
    }
    per_member.push_back(entry);
  }
  at::Tensor probs = session::merge_members(member_probs, o.recipe, predictor.task());
  data::Table scored = test;
  if (predicted < test.size()) {  // smoke: only the predicted rows
    scored.rows.resize(static_cast<size_t>(predicted));
    if (!scored.targets.empty()) scored.targets.resize(static_cast<size_t>(predicted));
  }
  json inputs = {{"test_csv", session::file_input(test.csv_path)}, {"members", json::array()}};
  for (auto& m : e.members) inputs["members"].push_back(session::file_input(m.name));
  json summary = {{"command", "tta-predict"}, {"run_dir", run_dir},     {"inputs", inputs},
                  {"models", per_member},     {"rows", predicted},      {"views", predictor.view_labels()},
                  {"merge", topt.merge},      {"weights", topt.weights}};
  if (targets.defined()) {
    auto values = metrics.compute(probs, targets);
    const std::string name = metrics.names().front();
    summary["metric"] = {{"name", name}, {"value", values.at(name)}};
    summary["metrics"] = scores_json(values);
    if (e.members.size() > 1)
      lines.push_back(score_line("ensemble of " + std::to_string(e.members.size()), values, metrics.names()));
    std::cout << "scores on " << test.csv_path << ":\n";
    for (auto& l : lines) std::cout << l << "\n";
    for (auto& n : metrics.names()) std::cout << n << " on " << test.csv_path << ": " << values.at(n) << "\n";
  }
  // --out, else paths.submission (the kaggle layer: /kaggle/working/submission.csv; never a smoke run's), else
  // the run folder.
  const std::string key = o.smoke ? "" : o.recipe.get<train::PathsOptions>().submission;
  const std::string out = !o.flags.out.empty() ? o.flags.out
                          : !key.empty()       ? key
                                               : (fs::path(run_dir) / "submission.csv").string();
  const std::string chosen_by = !o.flags.out.empty() ? "--out" : !key.empty() ? "paths.submission" : "default";
  data::DataOptions fmt = dopt;
  if (o.smoke) fmt.sample_submission.clear();  // a partial prediction cannot follow the full sample
  data::SubmissionFormat sf{topt.output, tta::thresholds(topt, e.classes.outputs())};
  write_file_atomic(out, data::format_submission(fmt, scored, probs, e.classes, sf));
  summary["submission"] = out;
  if (!o.flags.probs.empty()) {
    write_file_atomic(o.flags.probs, data::format_probabilities(dopt, scored, probs, e.classes));
    summary["probs"] = o.flags.probs;
  }
  summary["status"] = "completed";
  summary["wall_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  session::write_summary(run_dir, summary);
  std::cout << "submission: " << out << " (" << predicted << " rows; " << chosen_by << ")\n";
  return kExitOk;
}

}  // namespace kg::jobs
