// `kgtrain pseudo-label`: the ensemble (checkpoints or fit runs, with the tta.views) predicts the
// unlabeled table; the confident rows (pseudo.threshold / pseudo.top_fraction) are written as pseudo.csv
// with a recipe layer pseudo.toml (data.extra_train_csv + data.extra_image_dir) so that
// `kgtrain fit RECIPE.toml OUT/pseudo.toml` trains on train + pseudo rows. Pseudo rows only ever train
// (fold -1): they never enter a validation fold. `--rounds N` runs predict -> select -> retrain N times.
#include "jobs/pseudo_label.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "config/tree.h"
#include "config/flags.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/strings.h"
#include "data/csv.h"
#include "data/options.h"
#include "data/pseudo.h"
#include "data/source.h"
#include "data/submission.h"
#include "data/table.h"
#include "jobs/fit.h"
#include "session/ensemble.h"
#include "session/session.h"
#include "train/engine.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kg::jobs {
namespace {

std::string toml_string(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

// pseudo.csv: id, the label column(s) as the training CSV spells them, confidence, source, and with
// pseudo.soft the prob_<class> columns data.extra_train_csv reads as soft targets.
std::string pseudo_csv(const data::DataOptions& d, const data::Table& t, const data::ClassList& classes,
                       const at::Tensor& probs, const data::PseudoSelection& sel, bool soft) {
  const auto task = classes.task;
  const bool per_label_cols = task == data::Task::multilabel && d.label_cols.size() > 1;
  std::vector<std::string> header{d.id_col};
  // What the training CSV needs to find and feed the row: its image path column or its text, and numeric features.
  const std::string image_root = data::data_path(d, d.test_image_dir);
  if (!d.path_col.empty()) header.push_back(d.path_col);
  if (t.is_text()) header.insert(header.end(), d.text_cols.begin(), d.text_cols.end());
  header.insert(header.end(), d.feature_cols.begin(), d.feature_cols.end());
  if (task == data::Task::regression || per_label_cols)
    header.insert(header.end(), d.label_cols.begin(), d.label_cols.end());
  else
    header.push_back(d.label_cols[0]);
  header.push_back("confidence");
  header.push_back("source");
  const bool write_soft = soft && task != data::Task::regression;
  if (write_soft)
    for (auto& n : data::output_names(classes)) header.push_back("prob_" + n);
  std::string out = data::csv_line(header);
  auto p = probs.to(torch::kDouble).contiguous();
  const int64_t K = p.size(1);
  const double* d0 = p.data_ptr<double>();
  for (size_t j = 0; j < sel.rows.size(); ++j) {
    const int64_t i = sel.rows[j];
    const double* r = d0 + i * K;
    std::vector<std::string> f{t.rows[static_cast<size_t>(i)].id};
    if (!d.path_col.empty())
      f.push_back(
          fs::path(t.rows[static_cast<size_t>(i)].image).lexically_relative(fs::path(image_root)).generic_string());
    for (int64_t k = 0; k < t.text_dim; ++k) f.push_back(t.text(i, k));
    for (int64_t k = 0; k < t.feature_dim; ++k)
      f.push_back(format_significant(t.features[static_cast<size_t>(i * t.feature_dim + k)], 9));
    switch (task) {
      case data::Task::multiclass:
      case data::Task::binary:
        f.push_back(classes.names[static_cast<size_t>(sel.label[j])]);
        break;
      case data::Task::multilabel:
        if (per_label_cols) {
          for (int64_t k = 0; k < K; ++k) f.push_back(r[k] >= 0.5 ? "1" : "0");
        } else {
          std::vector<std::string> on;
          for (int64_t k = 0; k < K; ++k)
            if (r[k] >= 0.5) on.push_back(classes.names[static_cast<size_t>(k)]);
          f.push_back(join(on, d.label_sep));
        }
        break;
      case data::Task::regression:
        for (int64_t k = 0; k < K; ++k) f.push_back(format_significant(r[k], 9));
        break;
    }
    f.push_back(format_significant(sel.confidence[j], 9));
    f.push_back(t.rows[static_cast<size_t>(i)].where);
    if (write_soft)
      for (int64_t k = 0; k < K; ++k) f.push_back(format_significant(r[k], 9));
    out += data::csv_line(f);
  }
  return out;
}

struct RoundResult {
  json info;
  std::string layer;  // pseudo.toml path
};

// Predicts the unlabeled table with `members` and writes pseudo.csv + pseudo.toml into `dir`.
RoundResult predict_and_select(const session::Session& o, const session::ModelSources& members,
                               const std::string& dir) {
  session::Ensemble e = session::collect_members(o, members);
  const auto popt = o.recipe.get<data::PseudoOptions>();
  auto src = o.recipe.get<data::DataOptions>();
  if (!popt.source_csv.empty()) src.test_csv = popt.source_csv;
  if (!popt.source_image_dir.empty()) src.test_image_dir = popt.source_image_dir;
  src.on_bad_row = "skip";  // an unreadable unlabeled image is simply not pseudo-labelled (listed in summary.json)
  data::Table t = data::load_split(src, data::Split::test, e.classes, /*scan=*/true,
                                   std::max<int>(1, static_cast<int>(src.num_workers)));
  session::EnsemblePredictor predictor(o, e.classes, t.feature_dim);
  std::vector<at::Tensor> member_probs;
  int64_t predicted = 0;
  train::PredictionsStopOnSignal stop;  // SIGTERM / Ctrl-C stop the prediction between batches (not a round's fit)
  for (auto& m : e.members) {
    auto mp = predictor.predict(m, t, [&] {
      std::vector<int64_t> rows(static_cast<size_t>(t.size()));
      for (int64_t i = 0; i < t.size(); ++i) rows[static_cast<size_t>(i)] = i;
      return rows;
    }());
    predicted = static_cast<int64_t>(mp.rows.size());
    member_probs.push_back(mp.probs);
  }
  at::Tensor probs = session::merge_members(member_probs, o.recipe, predictor.task());
  if (predicted < t.size()) t.rows.resize(static_cast<size_t>(predicted));  // smoke
  auto sel = data::select_pseudo(probs, predictor.task(), popt);
  if (sel.rows.empty()) {
    double best = predictor.task() == Task::regression ? 0.0 : probs.max().item<double>();
    throw DataError("pseudo-label: no row of " + t.csv_path +
                    " passes pseudo.threshold = " + format_significant(popt.threshold, 9) +
                    (popt.top_fraction > 0 ? " and pseudo.top_fraction = " + format_significant(popt.top_fraction, 9)
                                           : std::string()) +
                    " (the highest probability is " + format_significant(best, 9) + "); lower the threshold");
  }
  make_directories(dir);
  const std::string csv = fs::absolute(fs::path(dir) / "pseudo.csv").lexically_normal().string();
  write_file_atomic(csv, pseudo_csv(src, t, e.classes, probs, sel, popt.soft));
  const std::string images = fs::absolute(data::data_path(src, src.test_image_dir)).lexically_normal().string();
  const std::string layer = (fs::path(dir) / "pseudo.toml").string();
  std::string toml =
      "# written by kgtrain pseudo-label: " + std::to_string(sel.rows.size()) + " of " + std::to_string(t.size()) +
      " rows of " + t.csv_path + " (" + std::to_string(e.members.size()) + " model(s), views " +
      join(predictor.view_labels(), ", ") + ")\n# retrain with: kgtrain fit RECIPE.toml " + layer +
      "\n# the pseudo rows only ever train (fold -1 in folds.csv), never validate\n[data]\nextra_train_csv = " +
      toml_string(csv) + "\nextra_image_dir = " + toml_string(images) + "\n";
  write_file_atomic(layer, toml);
  json per_class = json::object();
  if (predictor.task() == Task::multiclass || predictor.task() == Task::binary)
    for (auto l : sel.label)
      per_class[e.classes.names[static_cast<size_t>(l)]] =
          per_class.value(e.classes.names[static_cast<size_t>(l)], 0) + 1;
  double mean_conf = 0;
  for (double c : sel.confidence) mean_conf += c / static_cast<double>(sel.confidence.size());
  RoundResult r;
  r.layer = layer;
  json inputs = {{"source_csv", session::file_input(t.csv_path)}, {"members", json::array()}};
  for (auto& m : e.members) inputs["members"].push_back(session::file_input(m.name));
  r.info = {{"inputs", inputs},
            {"models", e.members.size()},
            {"views", predictor.view_labels()},
            {"source", t.csv_path},
            {"rows", t.size()},
            {"unreadable", t.dropped.size()},
            {"selected", sel.rows.size()},
            {"mean_confidence", mean_conf},
            {"per_class", per_class},
            {"pseudo_csv", csv},
            {"pseudo_toml", layer},
            {"image_dir", images},
            {"threshold", popt.threshold},
            {"top_fraction", popt.top_fraction},
            {"soft", popt.soft}};
  std::cout << "pseudo-label: kept " << sel.rows.size() << " of " << t.size() << " rows (mean confidence "
            << format_significant(mean_conf, 9) << ") -> " << csv << "\n";
  return r;
}

}  // namespace

const config::Fields<PseudoLabelFlags>& pseudo_label_flags() {
  static const config::Fields<PseudoLabelFlags> f = [] {
    using F = PseudoLabelFlags;
    config::Fields<F> t;
    t.field("checkpoint", &F::checkpoint, session::kCheckpointFlagDoc);
    t.field("from_run", &F::from_run, session::kFromRunFlagDoc);
    t.field("out", &F::out, "output folder for pseudo.csv, pseudo.toml and the rounds (required)");
    t.field("rounds", &F::rounds,
            "predict -> select -> retrain cycles: each retrains the recipe with the pseudo rows (OUT/round_<r>/fit), "
            "reports its CV score and predicts the next round with it (0: predict and select only)")
        .min(0);
    return t;
  }();
  return f;
}

int run_pseudo_label(const PseudoLabelRequest& o) {
  config::check_flags(pseudo_label_flags(), o.flags);
  auto t0 = std::chrono::steady_clock::now();
  KG_CHECK(!o.flags.out.empty(), UsageError, "pseudo-label needs --out DIR");
  if (o.dry_run) {
    auto e = session::collect_members(o, o.flags.models());
    o.log("dry run: recipe valid, " + std::to_string(e.members.size()) + " model(s) found; nothing predicted");
    return kExitOk;
  }
  // Never over an earlier pseudo-label's outputs: its round folders' fits would sit beside new selections.
  std::vector<std::string> earlier;
  for (const char* f : {"pseudo.csv", "pseudo.toml", "summary.json", "round_1"})
    if (fs::exists(fs::path(o.flags.out) / f)) earlier.push_back(f);
  KG_CHECK(earlier.empty(), UsageError, "--out ", o.flags.out, " already holds pseudo-labels (", join(earlier, ", "),
           "); choose another folder or remove them");
  make_directories(o.flags.out);
  json rounds = json::array();
  session::ModelSources members = o.flags.models();
  json first;
  if (o.flags.rounds == 0) {
    first = predict_and_select(o, members, o.flags.out).info;
  } else {
    for (int64_t r = 1; r <= o.flags.rounds; ++r) {
      const fs::path dir = fs::path(o.flags.out) / ("round_" + std::to_string(r));
      o.log("round " + std::to_string(r) + "/" + std::to_string(o.flags.rounds) + ": predict and select");
      auto res = predict_and_select(o, members, dir.string());
      // Retrain the recipe with this round's pseudo rows.
      FitRequest fo;
      static_cast<session::Session&>(fo) = o;
      fo.command = "fit";
      fo.run_dir = (dir / "fit").string();
      fo.recipe = o.recipe.with(
          {{"data.extra_train_csv", res.info["pseudo_csv"]}, {"data.extra_image_dir", res.info["image_dir"]}},
          config::Origin::command_line());
      o.log("round " + std::to_string(r) + ": retraining with " + std::to_string(res.info["selected"].get<int64_t>()) +
            " pseudo rows in " + fo.run_dir);
      int rc = run_fit(fo);
      if (rc != kExitOk) return rc;
      auto fs_summary = json::parse(read_file((dir / "fit" / "summary.json").string()));
      json score;
      if (fs_summary.contains("cv"))
        score = {{"metric", fs_summary["cv"]["metric"]}, {"oof", fs_summary["cv"]["oof"]}};
      else
        score = {{"metric", fs_summary["metric"]}, {"best", fs_summary["best"]["value"]}};
      res.info["round"] = r;
      res.info["fit_run"] = fo.run_dir;
      res.info["cv"] = score;
      rounds.push_back(res.info);
      std::cout << "round " << r << ": " << res.info["selected"] << " pseudo rows, CV " << score.dump() << "\n";
      members.checkpoints.clear();
      members.weights.clear();
      members.from_runs = {fo.run_dir};
    }
    // The last selection is also OUT/pseudo.csv + pseudo.toml.
    const fs::path last = fs::path(o.flags.out) / ("round_" + std::to_string(o.flags.rounds));
    write_file_atomic((fs::path(o.flags.out) / "pseudo.csv").string(), read_file((last / "pseudo.csv").string()));
    auto layer = read_file((last / "pseudo.toml").string());
    write_file_atomic((fs::path(o.flags.out) / "pseudo.toml").string(), layer);
  }
  json summary = {
      {"command", "pseudo-label"},
      {"out", o.flags.out},
      {"status", "completed"},
      {"inputs",
       {{"checkpoints", o.flags.checkpoint}, {"from_runs", o.flags.from_run}, {"weights", std::vector<std::string>{}}}},
      {"wall_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()}};
  if (o.flags.rounds == 0)
    summary["selection"] = first;
  else
    summary["rounds"] = rounds;
  session::write_summary(o.flags.out, summary);
  return kExitOk;
}

}  // namespace kg::jobs
