// `kgtrain lr-find`: fastai's lr finder on the recipe's training stream (lib/jobs/lr_find.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "jobs/job.h"

namespace kg::jobs {

int run_lr_find(const JobOptions& o);

}  // namespace kg::jobs
