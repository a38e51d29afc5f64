// `kgtrain bench-data`: the input pipeline's throughput without the model (lib/jobs/bench_data.cpp).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/schema.h"
#include "session/session.h"

namespace kg::jobs {

// bench-data's flags, declared once in bench_data_flags() (key, type, default, range, doc): app/flag_table.h makes
// them CLI11 options, run_bench_data checks them (config::check_flags), tests/jobs/test_flag_tables.cpp holds --help
// and docs/commands.md to the table.
struct BenchDataFlags {
  std::string batches = "20";          // loader batches timed after the warm-up batch, or "all" (one whole epoch)
  std::vector<int64_t> threads;        // loader worker counts (empty = 0, 1, data.num_workers)
  std::string split = "train";         // train | valid (the held-out fold, evaluation pipeline)
  std::string json;                    // JSON report path ("" = none)
  std::optional<double> compute_rate;  // the model's img/s for the verdict
  std::vector<std::string> sections{"decode", "augment", "loader"};  // what to measure
  int64_t repeats = 3;                                               // loader repeats; the median is reported

  // `batches` as a count; -1 for "all".
  int64_t batch_count() const;
};
const config::Fields<BenchDataFlags>& bench_data_flags();

struct BenchDataRequest : session::Session {
  BenchDataFlags flags;
};

int run_bench_data(const BenchDataRequest& o);

}  // namespace kg::jobs
