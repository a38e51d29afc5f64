// `kgtrain show-batch`: training images after augmentation (and mixup/cutmix) with their (soft) labels,
// as one PNG grid — fastai's show_batch for a shell cell — or, with views, what tta-predict feeds the model
// for one test image (lib/jobs/show_batch.cpp). A text recipe prints its first training batch instead: each row's
// text, label and tokens as the tokenizer names them (lib/jobs/sample_tokens.cpp).
#pragma once
#include <cstdint>
#include <string>

#include "config/schema.h"
#include "session/session.h"

namespace kg::jobs {

// show-batch's flags, declared once in show_batch_flags() (key, type, default, range, doc): app/flag_table.h makes
// them CLI11 options, run_show_batch checks them (config::check_flags), tests/jobs/test_flag_tables.cpp holds --help
// and docs/commands.md to the table.
struct ShowBatchFlags {
  std::string out = "show_batch.png";  // the PNG written (atomically)
  int64_t n = 16;                      // images in the grid
  int64_t epoch = 1;                   // the epoch (1-based) whose augmentation, image size and mixing are shown
  bool views = false;                  // instead: every TTA view (tta.views) of one test image
  std::string id;                      // with views: that test row's id ("" = the first row of data.test_csv)
};
const config::Fields<ShowBatchFlags>& show_batch_flags();

struct ShowBatchRequest : session::Session {
  ShowBatchFlags flags;
};

int run_show_batch(const ShowBatchRequest& r);

}  // namespace kg::jobs
