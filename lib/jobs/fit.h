// `kgtrain fit`: k-fold training with validation, checkpoints, out-of-fold predictions (lib/jobs/fit.cpp);
// `kgtrain merge-oof`: oof.csv + cv.json from fold outputs of one or several runs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "session/session.h"

namespace kg::jobs {

struct FitRequest : session::Session {
  std::vector<std::string> weights;  // --weights: initial weights files (safetensors, timm/torchvision names)
  std::string resume;  // --resume: "" (fresh), "auto" (newest unfinished run / checkpoint), or a run or checkpoint dir
  std::string plot_schedule;  // --plot-schedule: draw the planned lr curve to this PNG and exit (no training)
  bool check_data = false;    // --check-data: load the table and decode every image, report bad rows, train nothing
};

int run_fit(const FitRequest& o);
int run_merge_oof(const std::vector<std::string>& dirs, const std::string& out_dir);

}  // namespace kg::jobs
