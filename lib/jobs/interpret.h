// `kgtrain interpret RUN`: what a fit run learned, from its out-of-fold predictions (oof.csv of a k-fold run,
// oof_fold.csv of one fold) — fastai's ClassificationInterpretation and more: confusion matrix (counts and
// row-normalised, PNG + CSV), per-class precision / recall / F1 / support, most-confused pairs, the top-loss
// images; multilabel per-label AUC / F1; regression predicted-vs-true and residuals; with --cam, Grad-CAM
// overlays of the top-loss and of random validation images (each fold's rows by its own checkpoint).
// interpret.json holds the numbers (lib/jobs/interpret.cpp, interpret_images.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "metric/interpretation.h"
#include "config/schema.h"
#include "session/session.h"

namespace kg::session {
class TrainingContext;
struct OofTable;
}  // namespace kg::session

namespace kg::jobs {

// interpret's flags, declared once in interpret_flags() (key, type, default, range, doc): app/flag_table.h makes them
// CLI11 options, run_interpret checks them, tests/jobs/test_flag_tables.cpp holds --help and docs/commands.md to
// the table.
struct InterpretFlags {
  std::string out;     // output folder ("" = RUN/interpret)
  int64_t top = 16;    // top-loss images shown
  bool cam = false;    // Grad-CAM overlays and cams.csv
  int64_t cam_n = 16;  // random validation images with a CAM
};
const config::Fields<InterpretFlags>& interpret_flags();

struct InterpretRequest : session::Session {
  std::string run;  // the fit run folder
  InterpretFlags flags;
};

int run_interpret(const InterpretRequest& r);

// The images part (interpret_images.cpp): top_losses.png of the `top` highest-loss rows, and with r.cam the
// Grad-CAM files. `table_rows[i]` is the training-table row of OOF row i. Returns what it wrote, for
// interpret.json.
nlohmann::json write_interpret_images(const InterpretRequest& r, const session::TrainingContext& s,
                                      const session::OofTable& oof, const metric::Interpretation& in,
                                      const std::vector<int64_t>& table_rows, const std::string& out);

}  // namespace kg::jobs
