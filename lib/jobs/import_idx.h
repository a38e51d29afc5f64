// `kgtrain import-idx`: MNIST-format IDX files into the Kaggle CSV + PNG layout or raw packs
// (lib/jobs/import_idx.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/idx_import.h"

namespace kg::jobs {

// Converts, prints what was imported; the exit code.
int run_import_idx(const data::IdxImportOptions& o);

}  // namespace kg::jobs
