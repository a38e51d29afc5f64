// `kgtrain merge-oof`: oof.csv + cv.json from the fold outputs of one or several runs (session/oof.h).
#pragma once
#include <string>
#include <vector>

#include "config/schema.h"

namespace kg::jobs {

// merge-oof's flags, declared once in merge_oof_flags() (app/flag_table.h makes them CLI11 options; run_merge_oof
// checks them; tests/jobs/test_flag_tables.cpp holds --help and docs/commands.md to the table). The folders are
// its words.
struct MergeOofFlags {
  std::string out;  // the folder for oof.csv and cv.json
};
const config::Fields<MergeOofFlags>& merge_oof_flags();

// UsageError without --out; what session::merge_oof throws for folders without fold outputs.
int run_merge_oof(const std::vector<std::string>& dirs, const MergeOofFlags& flags);

}  // namespace kg::jobs
