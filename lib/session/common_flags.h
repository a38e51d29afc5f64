// The flags every recipe command shares (--run-dir, --device, --seed, --dry-run, --smoke, --check-data, --quiet),
// declared once as a table (config::Fields, as each command's own flags are): app/command.h's RecipeFlags makes the
// ones a command takes its CLI11 options and checks the values (config::check_flags);
// tests/jobs/test_flag_tables.cpp holds --help and docs/commands.md's "Common options" to the table.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "config/schema.h"

namespace kg::session {

struct CommonFlags {
  std::string run_dir;          // "" = <paths.runs>/<run.name>/<UTC time>-<command>
  std::string device;           // "" = the recipe's device.name
  std::optional<int64_t> seed;  // none = the recipe's run.seed
  bool dry_run = false;
  bool smoke = false;       // fit, tta-predict, pseudo-label, lr-find
  bool check_data = false;  // fit
  bool quiet = false;
};
const config::Fields<CommonFlags>& common_flags();

}  // namespace kg::session
