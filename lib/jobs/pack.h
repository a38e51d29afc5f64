// `kgtrain pack`: the recipe's tables and images in one memory-mapped file (lib/jobs/pack.cpp).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/schema.h"
#include "session/session.h"

namespace kg::jobs {

// pack's flags, declared once in pack_flags() (key, type, default, range, doc): app/flag_table.h makes them CLI11
// options, run_pack checks them (config::check_flags), tests/jobs/test_flag_tables.cpp holds --help and
// docs/commands.md to the table.
struct PackFlags {
  std::string split = "train";               // train | test | both
  std::string out;                           // pack path ("" = DATA_ROOT/<data.train_pack or data.test_pack>)
  bool raw = false;                          // decoded pixels resized to `size` instead of the encoded files
  std::optional<std::vector<int64_t>> size;  // with raw: H W of the stored pixels (none = data.image_size)
  int64_t threads = 0;                       // decode threads (0 = all cores)
};
const config::Fields<PackFlags>& pack_flags();

struct PackRequest : session::Session {
  PackFlags flags;
};

int run_pack(const PackRequest& o);

}  // namespace kg::jobs
