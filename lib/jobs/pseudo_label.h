// `kgtrain pseudo-label`: confident test rows labelled by the ensemble, pseudo.csv + pseudo.toml, and
// optional retraining rounds (lib/jobs/pseudo_label.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "config/schema.h"
#include "session/session.h"

namespace kg::jobs {

// pseudo-label's flags, declared once in pseudo_label_flags() (key, type, default, range, doc): app/flag_table.h makes
// them CLI11 options, run_pseudo_label checks them, tests/jobs/test_flag_tables.cpp holds --help and
// docs/commands.md to the table.
struct PseudoLabelFlags {
  std::vector<std::string> checkpoint;  // checkpoint directories
  std::vector<std::string> from_run;    // fit run directories (every fold's checkpoint)
  std::string out;                      // output folder (required)
  int64_t rounds = 0;                   // predict -> select -> retrain cycles (0: predict + select only)

  session::ModelSources models() const { return {checkpoint, {}, from_run}; }
};
const config::Fields<PseudoLabelFlags>& pseudo_label_flags();

struct PseudoLabelRequest : session::Session {
  PseudoLabelFlags flags;
};

int run_pseudo_label(const PseudoLabelRequest& o);

}  // namespace kg::jobs
