// Checks shared by every subcommand's flags (CLI11 lives in app/ only).
#pragma once
#include <CLI/CLI.hpp>

namespace kg::app {

// Numeric flags that say what they accept ("--nproc: expected a whole number >= 1, got \"0\""); CLI11's
// PositiveNumber / NonNegativeNumber print DBL_MAX as the end of the range and call 0 "not in range 0 to ...".
CLI::Validator at_least(double lo, bool whole, bool exclusive = false);
inline const CLI::Validator kCount = at_least(1, true);        // 1, 2, ...
inline const CLI::Validator kCountOrZero = at_least(0, true);  // 0, 1, ...
inline const CLI::Validator kPositive = at_least(0, false, true);

// Every subcommand's named flags: one value per use (--from-run A --from-run B, --size H W), so the recipe
// overrides after a flag stay the command's words (CLI11's vector options otherwise swallow them); an
// empty value ('') is refused rather than read as "not given" (--device '' kept the recipe's device).
void one_value_per_flag(CLI::App& app);

}  // namespace kg::app
