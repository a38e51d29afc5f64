// lib/session: what several jobs share, one floor below lib/jobs (jobs -> session -> train/data/model/...):
// the session every command runs in (this file), the run directory, the training context of fit and lr-find
// (training.h), the auto batch size, model setup (model_input.h), the ensemble and out-of-fold I/O.
//
// A Session is what every job receives from the app: a validated, immutable recipe and the options every
// command shares. Each command's own flags are its request struct (FitRequest in jobs/fit.h, ...), which
// extends Session.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/recipe.h"
#include "device/distributed.h"

namespace kg::session {

struct Session {
  std::string command;              // fit | lr-find | tta-predict | ...
  config::Recipe recipe;            // validated, defaults filled in, immutable (a changed copy: recipe.with())
  std::vector<std::string> layers;  // recipe files applied, in order
  std::string env_name;             // environment layer chosen
  std::string run_dir;              // --run-dir ("" = <paths.runs>/<run.name>/<UTC time>-<command>)
  bool dry_run = false;             // build everything, print the plan, train nothing
  bool smoke = false;               // two training, two validation and two prediction batches
  bool quiet = false;
  bool tty = false;           // stderr is a terminal (not a notebook's pseudo-terminal): live progress bar
  int columns = 0;            // that terminal's width (0 = unknown)
  nlohmann::json auto_batch;  // fit, lr-find: what train.batch_size = "auto" tried and chose (null = a fixed size)
  std::vector<std::string> preprocessing_notes;  // what model.pretrained's config.json set (model/preprocessing.h)
  device::DistEnv dist;       // fit: torchrun's RANK/WORLD_SIZE/... (world_size 1 = one process)

  // A line to stderr unless quiet.
  void log(const std::string& line) const;
};

// Where a prediction's models come from (tta-predict, pseudo-label): the members of an ensemble.
struct ModelSources {
  std::vector<std::string> checkpoints;  // --checkpoint: checkpoint directories
  std::vector<std::string> weights;      // --weights: safetensors files for the recipe's model
  std::vector<std::string> from_runs;    // --from-run: fit run directories (all their folds' checkpoints)
};
// The flags' docs, one place for both commands' tables.
inline constexpr const char* kCheckpointFlagDoc =
    "checkpoint directory, e.g. RUN/checkpoints/best (repeat, or comma-separated, to ensemble)";
inline constexpr const char* kFromRunFlagDoc =
    "a fit run directory, or latest (<paths.runs>/latest, the newest fit): every fold's checkpoint (tta.weights "
    "picks best, last, ema or swa); repeat to ensemble runs";

// Creates the run directory (never reusing a finished run's) and writes recipe.toml and provenance.json.
std::string prepare_run_dir(const Session& o);
nlohmann::json provenance(const Session& o);
// summary.json, written atomically.
void write_summary(const std::string& run_dir, nlohmann::json summary);
// A run's summary.json status ("completed", "interrupted", ...); "" without one (killed, or still running),
// "unreadable" when it does not parse.
std::string run_status(const std::string& run_dir);
// An input file for summary.json: {path, bytes, sha256} (files over 64 MiB: size only).
nlohmann::json file_input(const std::string& path);

}  // namespace kg::session
