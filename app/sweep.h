// `kgtrain fit -m`: a Hydra-style sweep (config/sweep.h's grammar) run as ordinary fit runs, each a child
// process of this binary in its own run folder under the sweep folder, --jobs at once (CPU threads split
// between them; one GPU each when there are several). A killed sweep continues with --resume SWEEP_DIR:
// finished runs are kept, interrupted ones continue from their checkpoints (fit --resume), the rest start.
// The children get SIGTERM when the sweep process dies (even by SIGKILL), so they save and stop with it.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "session/session.h"

namespace kg::app {

struct SweepRequest {
  std::vector<std::string> words;      // recipe files and overrides (sweep grammar), --device/--seed included
  std::vector<std::string> run_flags;  // flags every run's fit gets (--weights F, --smoke)
  std::string sweep_dir;               // --run-dir: the sweep folder ("" = <paths.runs>/<run.name>/<UTC>-sweep)
  std::string resume;                  // --resume SWEEP_DIR
  int jobs = 1;
  bool dry_run = false, quiet = false;
  // Resolves and validates one run's words as `fit` would (ConfigError / UsageError on a bad recipe).
  std::function<session::Session(const std::vector<std::string>&)> resolve;
};

// Runs the sweep; 0 when every run completed, 130/143 when stopped by a signal, else the first failed
// run's exit code. sweep.csv and a ranked table on stdout either way.
int run_sweep(const SweepRequest& r);

}  // namespace kg::app
