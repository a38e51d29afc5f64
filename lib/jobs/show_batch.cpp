#include "jobs/show_batch.h"

#include "core/error.h"
#include "core/fs.h"
#include "jobs/fit_setup.h"
#include "jobs/sample_grid.h"

namespace kg::jobs {

int run_show_batch(const ShowBatchRequest& r) {
  KG_CHECK(r.n >= 1 && r.n <= 256, UsageError, "--n " + std::to_string(r.n) + ": expected 1 to 256 images");
  KG_CHECK(r.epoch >= 1, UsageError, "--epoch " + std::to_string(r.epoch) + ": epochs count from 1");
  JobOptions o = r;
  // One batch is shown: decode just it (no RAM or device cache filled up front), in this thread, on the CPU.
  const auto set = [&](const std::string& key, config::json v) {
    o.recipe.set(key, config::Entry{std::move(v), config::Origin::command_line(), {}, false});
  };
  set("data.cache", "none");
  set("data.num_workers", 0);
  set("device.name", "cpu");
  set("train.batch_size", std::max<int64_t>(r.n, 2));
  set("train.accum_steps", 1);
  FitSetup s(o, "show-batch");
  KG_CHECK(r.epoch <= s.epochs, UsageError,
           "--epoch " + std::to_string(r.epoch) + ": the recipe trains " + std::to_string(s.epochs) + " epochs");
  const int64_t fold = s.cv.run_folds.front();
  const auto rows = s.split_of(fold).first;
  const std::string title = "training batch, epoch " + std::to_string(r.epoch) + " of " + std::to_string(s.epochs) +
                            ", fold " + std::to_string(fold) + (s.mix_fn() ? " (mixup/cutmix as configured)" : "");
  if (o.dry_run) {
    log(o, "dry run: would write " + r.out);
    return kExitOk;
  }
  const std::string png = training_sample_png(s, rows, r.n, r.epoch - 1, title);
  with_context("while writing " + r.out, [&] { write_file_atomic(r.out, png); });
  log(o,
      "wrote " + r.out + " (" + std::to_string(std::min<int64_t>(r.n, static_cast<int64_t>(rows.size()))) + " images)");
  return kExitOk;
}

}  // namespace kg::jobs
