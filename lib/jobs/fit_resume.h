// `fit --resume`: which run it continues (a run folder, the run of a given checkpoint, or the newest
// unfinished run of run.name), what changed in its recipe, and the checkpoint each fold restarts from.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "device/distributed.h"
#include "jobs/fit.h"
#include "session/session.h"

namespace kg::train {
class Trainer;
}

namespace kg::jobs {

// Where a resumed run lives: --run-dir, the run of a given checkpoint, or the newest unfinished run.
struct ResumeTarget {
  std::string run_dir;     // "" = start fresh
  std::string checkpoint;  // a specific checkpoint dir ("" = newest per fold)
  std::string note;        // why nothing is resumed, when --resume auto found nothing
};

// UsageError when --resume names a path that does not exist.
ResumeTarget resume_target(const FitRequest& o);

// Lines of recipe `b` (TOML) that `a` does not have, comments and blank lines aside: the resume warning.
std::vector<std::string> changed_lines(const std::string& a, const std::string& b);

// UsageError when the run's folds.csv does not give every row of `ids` the fold in `folds` (cv.folds,
// cv.strategy, run.seed or the training table changed): a resumed fold model would be validated on rows
// it trained on.
void check_same_split(const std::string& run_dir, const std::vector<std::string>& ids, const std::vector<int>& folds);

// Rank 0's `text` on every rank of `group` (itself without one): what rank 0 read from the run, which the other
// ranks' disks may not hold (a run on rank 0's own disk, not a shared file system).
std::string rank0_text(const device::ProcessGroupPtr& group, const std::string& text);

// Restores fold `k`'s trainer from the checkpoint named by --resume when it belongs to this fold, else
// from the newest complete checkpoint under `fold_dir`/checkpoints. With a `group`, rank 0 chooses and reads it;
// a rank whose disk does not hold that same checkpoint (its MANIFEST.json differs or is missing) gets rank 0's files,
// written under `own_dir`/received/<name> and verified, so every rank resumes from the same state on a shared file
// system or not. Logs which checkpoint, or that it starts fresh.
void resume_fold(train::Trainer& trainer, const ResumeTarget& target, const std::string& fold_dir,
                 const std::string& own_dir, int64_t k, const std::string& label, bool writer,
                 const device::ProcessGroupPtr& group, const FitRequest& o);

}  // namespace kg::jobs
