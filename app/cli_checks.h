// Checks shared by every subcommand's flags (CLI11 lives in app/ only); ranges and choices are the flag tables'
// (flag_table.h).
#pragma once
#include <CLI/CLI.hpp>

namespace kg::app {

// Every subcommand's named flags: one value per use (--from-run A --from-run B, --size H W), so the recipe
// overrides after a flag stay the command's words (CLI11's vector options otherwise swallow them); an
// empty value ('') is refused rather than read as "not given" (--device '' kept the recipe's device).
void one_value_per_flag(CLI::App& app);

}  // namespace kg::app
