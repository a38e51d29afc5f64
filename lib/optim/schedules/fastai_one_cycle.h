// fastai's fit_one_cycle schedule as train.mode = "fine_tune" runs it (each of its phases is one cycle).
// Not a recipe component: the [schedule] section's one_cycle is PyTorch's OneCycleLR.
#pragma once
#include <cstdint>

#include "optim/schedule.h"

namespace kg::optim {

// fastai's own step convention: position = update / total (so the last update sits just short of the end);
// lr: combined_cos(pct_start, lr_max / div, lr_max, lr_max / div_final); momentum: 0.95 -> 0.85 -> 0.95.
SchedulePtr fastai_one_cycle(double lr_max, int64_t total_steps, double pct_start, double div, double div_final);

}  // namespace kg::optim
