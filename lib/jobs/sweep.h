// `kgtrain fit -m`: the bookkeeping of a sweep (lib/jobs/sweep.cpp); app/sweep.cpp runs the processes.
// A sweep folder holds sweep.json (the words, every run's overrides and folder, written before any run
// starts), one ordinary fit run folder per run (run_000, run_001, ...; each with fit.log) and sweep.csv
// (one row per run, rewritten atomically whenever a run ends).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kg::jobs {

struct SweepRun {
  int index = 0;
  std::vector<std::string> overrides;  // this run's swept "key=value" words
  std::string dir;                     // its run folder, relative to the sweep folder
};

struct SweepManifest {
  std::vector<std::string> fixed;  // recipe files and overrides every run shares
  std::vector<SweepRun> runs;
  nlohmann::json to_json() const;
  // DataError naming `path` when it is not what kgtrain writes.
  static SweepManifest from_json(const nlohmann::json& j, const std::string& path);
};

// What a run folder says about its run (summary.json), for sweep.csv and the ranking.
struct SweepResult {
  std::string status;        // completed | early_stopped | time_budget | interrupted | failed | not started | running
  std::string metric, mode;  // the monitored metric and "max"/"min" ("" when unknown)
  std::optional<double> value;  // best value (k-fold: the OOF score)
  int64_t best_epoch = 0;
  double wall_s = 0;
  int exit_code = -1;  // of the run's last process (-1: not run by this sweep process)
};
// Reads `run_dir`'s summary.json; status "not started" without the folder, "failed"/"interrupted" from its
// summary, "incomplete" when a folder has no summary (killed).
SweepResult read_sweep_result(const std::string& run_dir);
// True for a run that needs no more work (its summary says completed).
bool sweep_run_done(const SweepResult& r);

// sweep.csv: run,dir,overrides,status,metric,value,best_epoch,wall_s,exit_code (written atomically).
void write_sweep_csv(const std::string& path, const SweepManifest& m, const std::vector<SweepResult>& results);
// The ranked table printed at the end: best first by each run's monitor mode; runs without a value last.
std::string sweep_table(const SweepManifest& m, const std::vector<SweepResult>& results);

}  // namespace kg::jobs
