// One configuration of a recipe timed the way `fit` runs it (for `kgtrain bench`, lib/jobs/bench.cpp):
// the full training step is the real Trainer on fit's loader — same workers, prefetch, RAM cache,
// autocast, float32 loss, accumulation, clipping and callbacks — stopped after the timed updates; the
// evaluation step is fit's validation loader and forward pass. With `phases` the parts are timed
// alone as well: decode + augmentation, the loader without the model, the host-to-device copy,
// forward, backward and the optimizer step, on a real training batch.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "device/device.h"
#include "device/memory_probe.h"

namespace kg::session {
class TrainingContext;
}  // namespace kg::session

namespace kg::jobs::bench {

struct Settings {
  int64_t steps = 20;   // timed steps per window
  int64_t warmup = 3;   // untimed steps first
  int64_t repeats = 3;  // windows; the median one is reported
};

struct PhaseTiming {
  std::string name;        // decode_augment_1_thread, decode_augment_workers, loader, host_to_device, forward,
                           // backward, optimizer_step, train_step, eval_step
  std::string label;       // for the table: "decode + augment (2 threads)"
  int64_t batch = 0;       // images per step (0: per image, no batch)
  int64_t threads = 0;     // decode + augment: threads used
  double ms_per_step = 0;  // the median window's time per step (0 for per-image rates)
  double images_per_s = 0;
  int64_t repeats = 0, steps = 0;  // windows the median is taken over, steps in each
  std::string note;
  nlohmann::json to_json() const;
};

// "RSS 1.20 GiB, CUDA 3.1 GiB allocated / 3.5 GiB reserved"
std::string peak_memory_text(const device::PeakMemory& m);

struct ConfigTiming {
  std::vector<PhaseTiming> phases;  // with phases: every phase; else train_step and eval_step
  int64_t micro_batch = 0, accum_steps = 1, eval_batch = 0;
  int64_t train_rows = 0, valid_rows = 0;
  int64_t updates_per_epoch = 0;  // epoch 1 of fit's plan
  double update_seconds = 0;      // the full training step (one optimizer update)
  double train_images_per_s = 0;  // what fit reports as train_images_per_s
  double eval_images_per_s = 0;
  double train_epoch_seconds = 0;  // updates_per_epoch x update_seconds
  double eval_epoch_seconds = 0;   // the validation fold at eval_images_per_s
  double epoch_seconds() const { return train_epoch_seconds + eval_epoch_seconds; }
  double compute_images_per_s = 0;  // forward + backward + step alone (phases)
  double loader_images_per_s = 0;   // the training loader alone (phases)
  int64_t num_workers = 0;
  int64_t macs_per_image = 0;  // model::summarize (phases), 0 when unknown
  std::vector<std::string> notes;
};

// The counts of `s`'s configuration (rows, batches, workers) without timing anything.
ConfigTiming config_shape(const session::TrainingContext& s);

// Times `s`'s recipe (fold cv.run_folds[0], epoch 1 of the plan). `scratch_dir` is the Trainer's
// folder (it writes nothing there: the run stops before any checkpoint). optim.lr = "find" is timed
// at a fixed lr (noted). Throws what building or training throws.
ConfigTiming time_config(const session::TrainingContext& s, const Settings& st, bool phases,
                         const std::string& scratch_dir, const std::function<void(const std::string&)>& log);

}  // namespace kg::jobs::bench
