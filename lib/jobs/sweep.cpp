#include "jobs/sweep.h"

#include <algorithm>
#include <filesystem>
#include <numeric>

#include "core/error.h"
#include "core/fs.h"
#include "core/strings.h"
#include "data/csv.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kg::jobs {
json SweepManifest::to_json() const {
  json runs_j = json::array();
  for (auto& r : runs) runs_j.push_back({{"index", r.index}, {"overrides", r.overrides}, {"dir", r.dir}});
  return {{"schema_version", 1}, {"kgtrain", "sweep"}, {"fixed", fixed}, {"runs", runs_j}};
}

SweepManifest SweepManifest::from_json(const json& j, const std::string& path) {
  try {
    KG_CHECK(j.at("kgtrain") == "sweep" && j.at("schema_version") == 1, DataError, "not a kgtrain sweep file");
    SweepManifest m;
    m.fixed = j.at("fixed").get<std::vector<std::string>>();
    for (auto& r : j.at("runs")) {
      SweepRun run{r.at("index").get<int>(), r.at("overrides").get<std::vector<std::string>>(),
                   r.at("dir").get<std::string>()};
      KG_CHECK(!run.dir.empty() && run.dir.find('/') == std::string::npos && run.dir != "." && run.dir != "..",
               DataError, "run folder \"" + run.dir + "\" is not a plain folder name");
      m.runs.push_back(std::move(run));
    }
    KG_CHECK(!m.runs.empty(), DataError, "no runs");
    return m;
  } catch (const DataError& e) {
    throw DataError(path + ": " + e.what());
  } catch (const std::exception& e) {
    throw DataError(path + ": not a sweep file kgtrain wrote (" + e.what() + ")");
  }
}

SweepResult read_sweep_result(const std::string& run_dir) {
  SweepResult r;
  if (!fs::exists(run_dir)) {
    r.status = "not started";
    return r;
  }
  const std::string path = (fs::path(run_dir) / "summary.json").string();
  if (!fs::exists(path)) {
    r.status = "incomplete";
    return r;
  }
  try {
    const json s = json::parse(read_file(path));
    r.status = s.value("status", "unknown");
    if (r.status == "completed" && s.value("finish", "completed") != "completed") r.status = s.value("finish", "");
    if (s.contains("wall_s") && s["wall_s"].is_number()) r.wall_s = s["wall_s"].get<double>();
    if (s.contains("best") && s["best"].is_object()) {
      const auto& b = s["best"];
      r.metric = b.value("metric", "");
      r.mode = b.value("mode", "");
      if (b.contains("value") && b["value"].is_number()) r.value = b["value"].get<double>();
      if (b.contains("epoch") && b["epoch"].is_number()) r.best_epoch = b["epoch"].get<int64_t>();
    }
    if (s.contains("cv") && s["cv"].is_object() && s["cv"].contains("oof") && s["cv"]["oof"].is_number())
      r.value = s["cv"]["oof"].get<double>();  // k-fold: the out-of-fold score ranks the run
  } catch (const std::exception&) {
    r.status = "unreadable";
  }
  return r;
}

bool sweep_run_done(const SweepResult& r) {
  return r.status == "completed" || r.status == "early_stopped" || r.status == "time_budget";
}

void write_sweep_csv(const std::string& path, const SweepManifest& m, const std::vector<SweepResult>& results) {
  std::string text = "run,dir,overrides,status,metric,value,best_epoch,wall_s,exit_code\n";
  for (size_t i = 0; i < m.runs.size(); ++i) {
    const auto& run = m.runs[i];
    const auto& r = results[i];
    text += std::to_string(run.index) + "," + data::csv_field(run.dir) + "," +
            data::csv_field(join(run.overrides, " ")) + "," + data::csv_field(r.status) + "," +
            data::csv_field(r.metric) + "," + (r.value ? format_significant(*r.value, 10) : "") + "," +
            (r.value ? std::to_string(r.best_epoch) : "") + "," + format_significant(r.wall_s, 10) + "," +
            (r.exit_code >= 0 ? std::to_string(r.exit_code) : "") + "\n";
  }
  write_file_atomic(path, text);
}

std::string sweep_table(const SweepManifest& m, const std::vector<SweepResult>& results) {
  std::vector<size_t> order(m.runs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto &ra = results[a], &rb = results[b];
    if (ra.value.has_value() != rb.value.has_value()) return ra.value.has_value();
    if (!ra.value) return false;
    return ra.mode == "min" ? *ra.value < *rb.value : *ra.value > *rb.value;
  });
  std::string metric;
  for (auto& r : results)
    if (!r.metric.empty()) metric = r.metric;
  std::vector<std::vector<std::string>> rows{
      {"rank", "run", metric.empty() ? std::string("value") : metric, "epoch", "wall_s", "status", "overrides"}};
  int rank = 0;
  for (size_t i : order) {
    const auto& r = results[i];
    rows.push_back({r.value ? std::to_string(++rank) : std::string("-"), m.runs[i].dir,
                    r.value ? format_significant(*r.value, 5) : std::string("n/a"),
                    r.value ? std::to_string(r.best_epoch) : std::string("-"), format_significant(r.wall_s, 4),
                    r.status, join(m.runs[i].overrides, " ")});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  std::string out;
  for (auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c)
      line += row[c] + (c + 1 < row.size() ? std::string(width[c] - row[c].size() + 2, ' ') : std::string());
    out += line + "\n";
  }
  return out;
}

}  // namespace kg::jobs
