// The `log` recipe section: which loggers record the run (metrics.jsonl always; metrics.csv and
// TensorBoard event files on request) and how often per-update scalars are logged.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "config/tree.h"

namespace kg::train {

// Recipe section [log]; each field's doc is in log_fields() (train/log_options.cpp) and docs/reference.md.
struct LogOptions {
  static LogOptions load(const config::Tree& recipe);  // recipe.get<LogOptions>() decodes it once
  std::vector<std::string> loggers{"jsonl", "csv"};
  int64_t every_n_steps = 50;
  bool images = true;
};

bool has_logger(const LogOptions& o, const std::string& name);

}  // namespace kg::train
