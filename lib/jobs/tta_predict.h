// `kgtrain tta-predict`: the test table predicted by an ensemble with test-time augmentation; the
// submission (lib/jobs/tta_predict.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "config/schema.h"
#include "session/session.h"

namespace kg::jobs {

// tta-predict's flags, declared once in tta_predict_flags() (key, type, default, doc): app/flag_table.h makes them
// CLI11 options, tests/jobs/test_flag_tables.cpp holds --help and docs/commands.md to the table.
struct TtaPredictFlags {
  std::vector<std::string> checkpoint;  // checkpoint directories
  std::vector<std::string> weights;     // safetensors files for the recipe's model
  std::vector<std::string> from_run;    // fit run directories (every fold's checkpoint)
  std::string out;                      // submission path ("" = paths.submission, else RUN_DIR/submission.csv)
  std::string probs;                    // per-class probabilities path ("" = none)
  bool oof = false;                     // each fold's model on its own validation rows with the views

  session::ModelSources models() const { return {checkpoint, weights, from_run}; }
};
const config::Fields<TtaPredictFlags>& tta_predict_flags();

struct TtaPredictRequest : session::Session {
  TtaPredictFlags flags;
};

int run_tta_predict(const TtaPredictRequest& o);

}  // namespace kg::jobs
