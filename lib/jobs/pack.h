// `kgtrain pack`: the recipe's tables and images in one memory-mapped file (lib/jobs/pack.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "session/session.h"

namespace kg::jobs {

struct PackRequest : session::Session {
  std::string out;                          // --out: pack path ("" = DATA_ROOT/<data.train_pack or data.test_pack>)
  std::string pack_split = "train";         // --split: train | test | both
  bool pack_raw = false;                    // --raw: pre-resized raw pixels instead of the encoded files
  int64_t pack_height = 0, pack_width = 0;  // --raw --size H W (0 = data.image_size)
  int pack_threads = 0;                     // --threads: decode threads (0 = all cores)
};

int run_pack(const PackRequest& o);

}  // namespace kg::jobs
