// `kgtrain fit`: k-fold training with validation, checkpoints, out-of-fold predictions (lib/jobs/fit.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "config/schema.h"
#include "session/session.h"

namespace kg::jobs {

// fit's flags, declared once in fit_flags() (key, type, default, range, doc): app/flag_table.h makes them CLI11
// options; fit's command checks them (config::check_flags) before it launches ranks or a sweep, run_fit again for
// in-process callers; tests/jobs/test_flag_tables.cpp holds --help and docs/commands.md to the table.
struct FitFlags {
  std::string weights;        // initial weights file ("" = model.pretrained's)
  std::string resume;         // "" (fresh), auto, latest, or a run or checkpoint directory
  std::string plot_schedule;  // draw the planned lr curve to this PNG and exit (no training)
  int64_t nproc = 1;          // the command's: ranks on this machine (app/launch.h)
  bool multirun = false;      // the command's: -m, a sweep (app/sweep.h)
  int64_t jobs = 1;           // the command's: a sweep's runs at once
};
const config::Fields<FitFlags>& fit_flags();

struct FitRequest : session::Session {
  FitFlags flags;
  bool check_data = false;  // --check-data: load the table and decode every image, report bad rows, train nothing
};

int run_fit(const FitRequest& o);

}  // namespace kg::jobs
