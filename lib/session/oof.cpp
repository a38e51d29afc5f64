#include "session/oof.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include <torch/torch.h>

#include "core/error.h"
#include "core/fs.h"
#include "core/strings.h"
#include "data/csv.h"
#include "metric/metric.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kg::session {
namespace {

std::string joined_values(const at::Tensor& row) {
  std::string s;
  for (int64_t j = 0; j < row.size(0); ++j) s += (j ? " " : "") + format_significant(row[j].item<double>(), 9);
  return s;
}

// The target as written in oof.csv: class name (multiclass, binary), space-separated labels
// (multilabel), space-separated values (regression).
std::string target_text(const data::ClassList& c, const at::Tensor& t, int64_t i) {
  switch (c.task) {
    case data::Task::multiclass:
      return c.names[static_cast<size_t>(t[i].item<int64_t>())];
    case data::Task::binary:
      return c.names[t[i][0].item<double>() >= 0.5 ? 1 : 0];
    case data::Task::multilabel: {
      std::vector<std::string> on;
      for (int64_t j = 0; j < t.size(1); ++j)
        if (t[i][j].item<double>() >= 0.5) on.push_back(c.names[static_cast<size_t>(j)]);
      return join(on, " ");
    }
    case data::Task::regression:
      return joined_values(t[i]);
  }
  return "";
}

std::string prediction_text(const data::ClassList& c, const at::Tensor& p, int64_t i) {
  switch (c.task) {
    case data::Task::multiclass:
      return c.names[static_cast<size_t>(p[i].argmax().item<int64_t>())];
    case data::Task::binary:
      return c.names[p[i][0].item<double>() >= 0.5 ? 1 : 0];
    case data::Task::multilabel: {
      std::vector<std::string> on;
      for (int64_t j = 0; j < p.size(1); ++j)
        if (p[i][j].item<double>() >= 0.5) on.push_back(c.names[static_cast<size_t>(j)]);
      return join(on, " ");
    }
    case data::Task::regression:
      return joined_values(p[i]);
  }
  return "";
}

// Probability columns: every class (multiclass, multilabel), the positive class (binary).
std::vector<std::string> prob_columns(const data::ClassList& c) {
  if (c.task == data::Task::regression) return {};
  if (c.task == data::Task::binary) return {c.names[1]};
  return c.names;
}

struct FoldFile {
  std::string dir;
  json info;
  data::CsvTable csv;
};

void collect(const fs::path& d, std::vector<FoldFile>& out) {
  if (fs::exists(d / "oof_fold.csv")) {
    FoldFile f;
    f.dir = d.string();
    KG_CHECK(fs::exists(d / "fold.json"), DataError, d.string(),
             " has oof_fold.csv but no fold.json: the fold did not finish");
    try {
      f.info = json::parse(read_file((d / "fold.json").string()));
    } catch (const json::exception& e) {
      throw DataError((d / "fold.json").string() + " is not valid JSON: " + e.what());
    }
    f.csv = data::read_csv((d / "oof_fold.csv").string());
    out.push_back(std::move(f));
    return;
  }
  std::vector<fs::path> subs;
  if (fs::is_directory(d))
    for (auto& e : fs::directory_iterator(d))
      if (e.is_directory() && starts_with(e.path().filename().string(), "fold_")) subs.push_back(e.path());
  std::sort(subs.begin(), subs.end());
  KG_CHECK(!subs.empty(), DataError, d.string(),
           " holds no fold predictions (expected oof_fold.csv, or fold_<k>/ folders "
           "from fit cv.fold=all); did that fold finish?");
  for (auto& s : subs) collect(s, out);
}

// The split shared by every fold: folds.csv in the fold dir or its parent (id -> fold, table order).
fs::path folds_csv_of(const fs::path& fold_dir) {
  for (fs::path d = fold_dir; !d.empty(); d = d.parent_path()) {
    if (fs::exists(d / "folds.csv")) return d / "folds.csv";
    if (d == d.parent_path()) break;
  }
  throw DataError(fold_dir.string() + ": no folds.csv beside or above it (written by fit): cannot order the OOF rows");
}

}  // namespace

void write_oof_fold(const std::string& dir, const data::Table& table, const data::ClassList& classes,
                    const std::string& id_col, int64_t fold, int64_t folds, const std::string& metric,
                    const train::Predictions& pred, const json& extra) {
  KG_ASSERT(pred.targets.defined(), "out-of-fold predictions need labeled validation rows");
  auto probs = pred.probs.to(torch::kDouble);
  auto targets = pred.targets;
  std::vector<std::string> header{id_col, "fold", "target", "prediction"};
  auto pcols = prob_columns(classes);
  header.insert(header.end(), pcols.begin(), pcols.end());
  std::string text = data::csv_line(header);
  // Table order, so fold files and the merged file read like the training CSV.
  std::vector<int64_t> order(pred.rows.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return pred.rows[static_cast<size_t>(a)] < pred.rows[static_cast<size_t>(b)];
  });
  for (int64_t i : order) {
    std::vector<std::string> f{table.rows[static_cast<size_t>(pred.rows[static_cast<size_t>(i)])].id,
                               std::to_string(fold), target_text(classes, targets, i),
                               prediction_text(classes, probs, i)};
    if (classes.task == data::Task::binary)
      f.push_back(format_significant(probs[i][0].item<double>(), 9));
    else if (classes.task != data::Task::regression)
      for (int64_t j = 0; j < probs.size(1); ++j) f.push_back(format_significant(probs[i][j].item<double>(), 9));
    text += data::csv_line(f);
  }
  write_file_atomic((fs::path(dir) / "oof_fold.csv").string(), text);
  json info = extra;
  info.update({{"schema_version", 1},
               {"fold", fold},
               {"folds", folds},
               {"metric", metric},
               {"task", data::task_name(classes.task)},
               {"classes", classes.to_json()},
               {"id_col", id_col},
               {"rows", pred.rows.size()}});
  write_file_atomic((fs::path(dir) / "fold.json").string(), info.dump(2) + "\n");
}

OofTable read_oof(const data::CsvTable& c, const data::ClassList& classes, const std::string& id_col) {
  const int idc = c.require_column(id_col, ""), fc = c.require_column("fold", ""), tc = c.require_column("target", ""),
            pc = c.require_column("prediction", "");
  std::vector<int> probc;
  for (auto& n : prob_columns(classes)) probc.push_back(c.require_column(n, ""));
  const int64_t n = static_cast<int64_t>(c.rows.size()), K = classes.outputs();
  auto preds = torch::zeros({n, K}, torch::kDouble);
  at::Tensor targets =
      classes.task == data::Task::multiclass ? torch::zeros({n}, torch::kLong) : torch::zeros({n, K}, torch::kDouble);
  OofTable out;
  for (int64_t i = 0; i < n; ++i) {
    const auto& row = c.rows[static_cast<size_t>(i)];
    const std::string where = c.where(static_cast<size_t>(i) + 1);
    const auto number = [&](const std::string& s) {
      try {
        size_t used = 0;
        const double v = std::stod(s, &used);
        if (used == s.size()) return v;
      } catch (const std::exception&) {
      }
      throw DataError(where + ": \"" + s + "\" is not a number");
    };
    out.ids.push_back(row[static_cast<size_t>(idc)]);
    out.folds.push_back(static_cast<int64_t>(number(row[static_cast<size_t>(fc)])));
    auto parse_values = [&](const std::string& s, at::Tensor out_row) {
      auto parts = split(s, ' ');
      KG_CHECK(static_cast<int64_t>(parts.size()) == K, DataError, where, ": expected ", K, " values, got \"", s, "\"");
      for (int64_t j = 0; j < K; ++j) out_row[j] = number(parts[static_cast<size_t>(j)]);
    };
    const std::string& t = row[static_cast<size_t>(tc)];
    switch (classes.task) {
      case data::Task::multiclass: {
        auto idx = classes.index_of(t);
        KG_CHECK(idx.has_value(), DataError, where, ": unknown class \"", t, "\"");
        targets[i] = *idx;
        break;
      }
      case data::Task::binary:
        targets[i][0] = t == classes.names[1] ? 1.0 : 0.0;
        break;
      case data::Task::multilabel:
        for (auto& l : split(t, ' '))
          if (!l.empty()) {
            auto idx = classes.index_of(l);
            KG_CHECK(idx.has_value(), DataError, where, ": unknown label \"", l, "\"");
            targets[i][*idx] = 1.0;
          }
        break;
      case data::Task::regression:
        parse_values(t, targets[i]);
        break;
    }
    if (classes.task == data::Task::regression)
      parse_values(row[static_cast<size_t>(pc)], preds[i]);
    else
      for (size_t j = 0; j < probc.size(); ++j)
        preds[i][static_cast<int64_t>(j)] = number(row[static_cast<size_t>(probc[j])]);
  }
  out.preds = preds.to(torch::kFloat);
  out.targets = targets.scalar_type() == torch::kLong ? targets : targets.to(torch::kFloat);
  return out;
}

json merge_oof(const std::vector<std::string>& dirs, const std::string& out_dir) {
  std::vector<FoldFile> files;
  for (auto& d : dirs) collect(fs::path(d), files);
  KG_CHECK(!files.empty(), UsageError, "merge-oof needs at least one fold directory");
  const json& first = files.front().info;
  const auto classes = data::ClassList::from_json(first.at("classes"));
  const std::string metric = first.at("metric").get<std::string>(), id_col = first.at("id_col").get<std::string>();
  const int64_t folds = first.at("folds").get<int64_t>();
  Task task = Task::multiclass;
  try {
    task = parse_task(first.at("task").get<std::string>());
  } catch (const ConfigError& e) {
    throw DataError(files.front().dir + "/fold.json: " + e.what());
  }
  std::set<int64_t> seen_folds;
  for (auto& f : files) {
    KG_CHECK(
        f.info.at("metric") == first.at("metric") && f.info.at("classes") == first.at("classes") &&
            f.info.at("folds") == first.at("folds") && f.info.at("id_col") == first.at("id_col"),
        DataError, f.dir, "/fold.json does not match ", files.front().dir,
        "/fold.json (metric, classes, cv.folds and id column must agree): these folds come from different recipes");
    int64_t k = f.info.at("fold").get<int64_t>();
    KG_CHECK(seen_folds.insert(k).second, DataError, "fold ", k, " appears twice (", f.dir, "); give each fold once");
  }
  // The split's row order from folds.csv.
  auto split_csv = data::read_csv(folds_csv_of(fs::path(files.front().dir)).string());
  std::map<std::string, std::pair<size_t, int64_t>> split_of;  // id -> (table position, fold)
  {
    int idc = split_csv.require_column("id", ""), fc = split_csv.require_column("fold", "");
    for (size_t r = 0; r < split_csv.rows.size(); ++r)
      split_of[split_csv.rows[r][static_cast<size_t>(idc)]] = {r,
                                                               std::stoll(split_csv.rows[r][static_cast<size_t>(fc)])};
  }
  const auto pcols = prob_columns(classes);
  std::vector<std::pair<size_t, std::vector<std::string>>> rows;  // (table position, fields)
  json per_fold = json::array();
  std::vector<double> values;
  std::vector<at::Tensor> all_preds, all_targets;
  metric::MetricContext mctx{classes.outputs(), task};
  for (auto& f : files) {
    const auto& c = f.csv;
    const int64_t k = f.info.at("fold").get<int64_t>();
    const OofTable t = read_oof(c, classes, id_col);
    for (size_t i = 0; i < t.ids.size(); ++i) {
      const std::string& id = t.ids[i];
      auto it = split_of.find(id);
      KG_CHECK(it != split_of.end(), DataError, c.where(i + 1), ": id ", id, " is not in the split (folds.csv)");
      KG_CHECK(it->second.second == k && t.folds[i] == k, DataError, c.where(i + 1), ": id ", id, " belongs to fold ",
               it->second.second, " of the split, not fold ", k);
      rows.push_back({it->second.first, c.rows[i]});
    }
    const at::Tensor &pf = t.preds, &tf = t.targets;
    double v = metric::evaluate(metric, mctx, pf, tf);
    per_fold.push_back({{"fold", k}, {"value", v}, {"rows", static_cast<int64_t>(t.ids.size())}, {"dir", f.dir}});
    values.push_back(v);
    all_preds.push_back(pf);
    all_targets.push_back(tf);
  }
  std::sort(per_fold.begin(), per_fold.end(), [](const json& a, const json& b) { return a["fold"] < b["fold"]; });
  std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.first < b.first; });
  for (size_t i = 1; i < rows.size(); ++i)
    KG_CHECK(rows[i].first != rows[i - 1].first, DataError, "training row ", rows[i].first + 1, " (id ",
             rows[i].second[0], ") appears in two fold files");
  std::vector<std::string> header{id_col, "fold", "target", "prediction"};
  header.insert(header.end(), pcols.begin(), pcols.end());
  std::string text = data::csv_line(header);
  for (auto& r : rows) text += data::csv_line(r.second);
  double mean = 0, var = 0;
  for (double v : values) mean += v / static_cast<double>(values.size());
  for (double v : values) var += (v - mean) * (v - mean) / static_cast<double>(values.size());
  double oof = metric::evaluate(metric, mctx, torch::cat(all_preds), torch::cat(all_targets));
  json cv = {{"schema_version", 1},   {"metric", metric},
             {"folds", per_fold},     {"mean", mean},
             {"std", std::sqrt(var)}, {"oof", oof},
             {"rows", rows.size()},   {"complete", static_cast<int64_t>(seen_folds.size()) == folds},
             {"cv_folds", folds}};
  make_directories(out_dir);
  write_file_atomic((fs::path(out_dir) / "oof.csv").string(), text);
  write_file_atomic((fs::path(out_dir) / "cv.json").string(), cv.dump(2) + "\n");
  return cv;
}

}  // namespace kg::session
