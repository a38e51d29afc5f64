// `kgtrain pseudo-label`: confident test rows labelled by the ensemble, pseudo.csv + pseudo.toml, and
// optional retraining rounds (lib/jobs/pseudo_label.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "session/session.h"

namespace kg::jobs {

struct PseudoLabelRequest : session::Session {
  session::ModelSources models;
  int64_t rounds = 0;  // --rounds: predict -> select -> retrain cycles (0: predict + select only)
  std::string out;     // --out: output folder
};

int run_pseudo_label(const PseudoLabelRequest& o);

}  // namespace kg::jobs
