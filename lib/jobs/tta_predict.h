// `kgtrain tta-predict`: the test table predicted by an ensemble with test-time augmentation; the
// submission (lib/jobs/tta_predict.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "session/session.h"

namespace kg::jobs {

struct TtaPredictRequest : session::Session {
  session::ModelSources models;
  bool oof = false;   // --oof: each fold's model on its own validation rows with the views
  std::string out;    // --out: submission path ("" = paths.submission, else RUN_DIR/submission.csv)
  std::string probs;  // --probs: per-class probabilities path ("" = none)
};

int run_tta_predict(const TtaPredictRequest& o);

}  // namespace kg::jobs
