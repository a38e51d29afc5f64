// `kgtrain import-idx`: MNIST-format IDX files into the Kaggle CSV + PNG layout or raw packs
// (lib/jobs/import_idx.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "config/schema.h"
#include "data/idx_import.h"

namespace kg::jobs {

// import-idx's flags are data::IdxImportOptions' fields, declared once here (key, type, default, range, doc):
// app/flag_table.h makes them CLI11 options, run_import_idx checks them, tests/jobs/test_flag_tables.cpp holds
// --help and docs/commands.md to the table.
const config::Fields<data::IdxImportOptions>& import_idx_flags();

// Converts, prints what was imported; the exit code.
int run_import_idx(const data::IdxImportOptions& o);

}  // namespace kg::jobs
