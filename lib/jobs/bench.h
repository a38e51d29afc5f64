// `kgtrain bench`: the recipe's phases timed as fit runs them, ablations and a suggestion
// (lib/jobs/bench.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "session/session.h"

namespace kg::jobs {

struct BenchRequest : session::Session {
  std::vector<std::string> bench_words;   // the recipe files and overrides as given (the suggested fit command)
  std::vector<std::string> bench_ablate;  // --ablate: toggles timed one at a time (lib/jobs/bench_ablate.h)
  bool bench_suggest = false;             // --suggest: the fastest combination of the toggles that helped
  std::string bench_json;                 // --json: report path ("" = RUN_DIR/bench.json)
  int64_t bench_steps = 20;               // --steps: timed steps per window
  int64_t bench_warmup = 3;               // --warmup: untimed steps before the windows
  int bench_repeats = 3;                  // --repeats: timed windows per phase; the median is reported
};

int run_bench(const BenchRequest& o);

}  // namespace kg::jobs
