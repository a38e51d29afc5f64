// `kgtrain bench-data`: the input pipeline's throughput without the model (lib/jobs/bench_data.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "session/session.h"

namespace kg::jobs {

struct BenchDataRequest : session::Session {
  int64_t bench_batches = 20;         // --batches: loader batches timed after the warm-up batch (-1 = one whole epoch)
  std::vector<int> bench_threads;     // --threads: loader worker counts (empty = 0, 1, data.num_workers)
  std::string bench_split = "train";  // --split: train | valid (the held-out fold, evaluation pipeline)
  std::string bench_json;             // --json: JSON report path ("" = none)
  double bench_compute_rate = 0;      // --compute-rate: the model's img/s for the verdict (0 = not given)
  std::vector<std::string> bench_sections{"decode", "augment", "loader"};  // --sections: what to measure
  int bench_repeats = 3;  // --repeats: loader repeats; the median is reported
};

int run_bench_data(const BenchDataRequest& o);

}  // namespace kg::jobs
