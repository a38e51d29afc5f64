// `kgtrain show-batch`: training images after augmentation (and mixup/cutmix) with their (soft) labels,
// as one PNG grid — fastai's show_batch for a shell cell — or, with views, what tta-predict feeds the model
// for one test image (lib/jobs/show_batch.cpp).
#pragma once
#include <cstdint>
#include <string>

#include "jobs/job.h"

namespace kg::jobs {

struct ShowBatchRequest : JobOptions {
  std::string out = "show_batch.png";  // the PNG written (atomically)
  int64_t n = 16;                      // images in the grid
  int64_t epoch = 1;                   // the epoch (1-based) whose augmentation, image size and mixing are shown
  bool views = false;                  // instead: every TTA view (tta.views) of one test image
  std::string id;                      // with views: that test row's id ("" = the first row of data.test_csv)
};

int run_show_batch(const ShowBatchRequest& r);

}  // namespace kg::jobs
