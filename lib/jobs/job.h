// What every job receives from the app: a validated, immutable recipe and the command's options.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/tree.h"
#include "device/distributed.h"

namespace kg::jobs {

struct JobOptions {
  std::string command;              // fit | lr-find | tta-predict | ...
  config::Tree recipe;              // validated, defaults filled in
  std::vector<std::string> layers;  // recipe files applied, in order
  std::string env_name;             // environment layer chosen
  std::string run_dir;              // --run-dir ("" = <paths.runs>/<run.name>/<UTC time>-<command>)
  bool dry_run = false;             // build everything, print the plan, train nothing
  bool check_data = false;          // fit: load the table and decode every image, report bad rows, train nothing
  bool smoke = false;               // two training, two validation and two prediction batches
  bool quiet = false;
  bool tty = false;           // stderr is a terminal: live progress bar
  nlohmann::json auto_batch;  // fit, lr-find: what train.batch_size = "auto" tried and chose (null = a fixed size)
  device::DistEnv dist;       // fit: torchrun's RANK/WORLD_SIZE/... (world_size 1 = one process)
  bool emulate_graphs =
      false;  // test hook (env KGTRAIN_EMULATE_CUDA_GRAPHS=1): device.cuda_graphs emulated on any device
  int64_t fake_oom_above = -1;  // test hook (env KGTRAIN_FAKE_OOM_ABOVE): training micro-batches above this many images
                                // fail as CUDA OOM (-1 = off)
  std::vector<std::string> checkpoints;  // tta-predict: checkpoint directories
  std::vector<std::string> weights;      // fit: initial weights file; tta-predict: weights files to predict with
  std::string resume;  // fit: "" (fresh), "auto" (newest unfinished run / checkpoint), or a run or checkpoint dir
  std::string plot_schedule;           // fit: draw the planned lr curve to this PNG and exit (no training)
  std::vector<std::string> from_runs;  // tta-predict, pseudo-label: fit run directories (all their folds' checkpoints)
  bool oof = false;                    // tta-predict --oof: each fold's model on its own validation rows with the views
  int64_t rounds = 0;  // pseudo-label --rounds: predict -> select -> retrain cycles (0: predict + select only)
  std::string out;     // tta-predict: submission path; pseudo-label: output folder
  std::string probs;   // tta-predict: per-class probabilities path
  std::string pack_split = "train";         // pack: train | test | both
  bool pack_raw = false;                    // pack: store pre-resized raw pixels instead of the encoded files
  int64_t pack_height = 0, pack_width = 0;  // pack --raw --size H W (0 = data.image_size)
  int pack_threads = 0;                     // pack: decode threads (0 = all cores)
  int64_t bench_batches = 20;         // bench-data: loader batches timed after the warm-up batch (-1 = one whole epoch)
  std::vector<int> bench_threads;     // bench-data: loader worker counts (empty = 0, 1, data.num_workers)
  std::string bench_split = "train";  // bench-data: train | valid (the held-out fold, evaluation pipeline)
  std::string
      bench_json;  // bench-data, bench: JSON report path (bench-data: "" = none; bench: "" = RUN_DIR/bench.json)
  double bench_compute_rate = 0;  // bench-data: the model's img/s for the verdict (0 = not given)
  std::vector<std::string> bench_sections{"decode", "augment", "loader"};  // bench-data: what to measure
  int bench_repeats = 3;  // bench-data: loader repeats; bench: timed windows per phase; the median is reported
  std::vector<std::string> bench_model_models;  // bench-model: model names (empty = the recipe's model)
  int64_t bench_model_size = 0;                 // bench-model: square input side in pixels (0 = data.image_size)
  int64_t bench_model_batch = 0;                // bench-model: images per step (0 = train.batch_size)
  int64_t bench_model_steps = 5;                // bench-model: timed steps per configuration; the median is reported
  int64_t bench_model_warmup = 1;               // bench-model: untimed steps before them
  std::vector<std::string> bench_model_layouts{"nchw", "channels_last"};  // bench-model: memory layouts
  bool bench_model_grad_checkpointing = false;  // bench-model: also every configuration with checkpointing on
  std::string bench_model_json;                 // bench-model: JSON report path ("" = none)
  std::vector<std::string> bench_words;   // bench: the recipe files and overrides as given (the suggested fit command)
  std::vector<std::string> bench_ablate;  // bench --ablate: toggles timed one at a time (lib/jobs/bench_ablate.h)
  bool bench_suggest = false;             // bench --suggest: the fastest combination of the toggles that helped
  int64_t bench_steps = 20;               // bench: timed steps per window
  int64_t bench_warmup = 3;               // bench: untimed steps before the windows
};

int run_fit(const JobOptions& o);
// `kgtrain lr-find`: fastai's lr finder on the recipe's training stream (lib/jobs/lr_find.cpp).
int run_lr_find(const JobOptions& o);
// `kgtrain merge-oof DIR... --out DIR`: oof.csv + cv.json from fold outputs of one or several runs.
int run_merge_oof(const std::vector<std::string>& dirs, const std::string& out_dir);
int run_tta_predict(const JobOptions& o);
// `kgtrain pseudo-label`: confident test rows labelled by the ensemble, pseudo.csv + pseudo.toml
// (lib/jobs/pseudo_label.cpp).
int run_pseudo_label(const JobOptions& o);
int run_pack(const JobOptions& o);
// `kgtrain bench-data`: the input pipeline's throughput without the model (lib/jobs/bench_data.cpp).
int run_bench_data(const JobOptions& o);
// `kgtrain bench-model`: training-step images/s of the recipe's model or others on synthetic input
// (lib/jobs/bench_model.cpp).
int run_bench_model(const JobOptions& o);
// `kgtrain bench`: the recipe's phases timed as fit runs them, ablations and a suggestion (lib/jobs/bench.cpp).
int run_bench(const JobOptions& o);

// Creates the run directory (never reusing a finished run's) and writes recipe.toml and provenance.json.
std::string prepare_run_dir(const JobOptions& o);
nlohmann::json provenance(const JobOptions& o);
// summary.json, written atomically.
void write_summary(const std::string& run_dir, nlohmann::json summary);
// A run's summary.json status ("completed", "interrupted", ...); "" without one (killed, or still running),
// "unreadable" when it does not parse.
std::string run_status(const std::string& run_dir);
// An input file for summary.json: {path, bytes, sha256} (files over 64 MiB: size only).
nlohmann::json file_input(const std::string& path);
// A line to stderr unless quiet.
void log(const JobOptions& o, const std::string& line);

}  // namespace kg::jobs
