// `kgtrain fit`: k-fold training with validation, checkpoints, out-of-fold predictions (lib/jobs/fit.cpp);
// `kgtrain merge-oof`: oof.csv + cv.json from fold outputs of one or several runs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "jobs/job.h"

namespace kg::jobs {

struct FitRequest : JobOptions {
  std::vector<std::string> weights;  // --weights: initial weights files (safetensors, timm/torchvision names)
  std::string resume;  // --resume: "" (fresh), "auto" (newest unfinished run / checkpoint), or a run or checkpoint dir
  std::string plot_schedule;  // --plot-schedule: draw the planned lr curve to this PNG and exit (no training)
};

int run_fit(const FitRequest& o);
int run_merge_oof(const std::vector<std::string>& dirs, const std::string& out_dir);

}  // namespace kg::jobs
