// `kgtrain bench`: the recipe's phases timed as fit runs them, ablations and a suggestion
// (lib/jobs/bench.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "config/schema.h"
#include "session/session.h"

namespace kg::jobs {

// bench's flags, declared once in bench_flags() (key, type, default, range, choices, doc): app/flag_table.h makes
// them CLI11 options, run_bench checks them, tests/jobs/test_flag_tables.cpp holds --help and docs/commands.md to
// the table.
struct BenchFlags {
  std::vector<std::string> ablate;  // toggles timed one at a time (lib/jobs/bench_ablate.h)
  bool suggest = false;             // the fastest combination of the toggles that helped
  std::string json;                 // report path ("" = RUN_DIR/bench.json)
  int64_t steps = 20;               // timed steps per window
  int64_t warmup = 3;               // untimed steps before the windows
  int64_t repeats = 3;              // timed windows per phase; the median is reported
};
const config::Fields<BenchFlags>& bench_flags();

struct BenchRequest : session::Session {
  std::vector<std::string> words;  // the recipe files and overrides as given (the suggested fit command)
  BenchFlags flags;
};

int run_bench(const BenchRequest& o);

}  // namespace kg::jobs
