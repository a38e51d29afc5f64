// Out-of-fold predictions ("trust your CV"): each fold writes its validation rows' predictions as
// oof_fold.csv + fold.json in its directory; merging the folds gives oof.csv (one row per training
// row of the folds run, in the training table's order) and cv.json (the metric per fold, mean, std,
// and the metric recomputed on the whole OOF file). Folds may come from separate processes or
// machines (`kgtrain merge-oof DIR...`), as long as they share the split (folds.csv).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/csv.h"
#include "data/table.h"
#include "train/engine.h"

namespace kg::session {

// Writes <dir>/oof_fold.csv and <dir>/fold.json for one fold's validation predictions.
// Columns: <id_col>, fold, target, prediction, then one probability column per class (classification).
void write_oof_fold(const std::string& dir, const data::Table& table, const data::ClassList& classes,
                    const std::string& id_col, int64_t fold, int64_t folds, const std::string& metric,
                    const train::Predictions& pred, const nlohmann::json& extra);

// An OOF file (oof.csv, oof_fold.csv) parsed: its ids and folds, the probabilities (regression: the
// predictions) [N, K] float, the targets (multiclass: int64 [N]; else float [N, K]). DataError naming the
// file:line of a missing column, an unknown class or a value that is not a number.
struct OofTable {
  std::vector<std::string> ids;
  std::vector<int64_t> folds;
  at::Tensor preds, targets;
};
OofTable read_oof(const data::CsvTable& csv, const data::ClassList& classes, const std::string& id_col);

// Finds fold outputs under `dirs` (a fold dir, a run dir with oof_fold.csv, or a run dir with fold_<k>/
// sub-directories), checks they share one split and hold each fold once, writes oof.csv and cv.json
// into `out_dir` and returns cv.json. DataError naming the file when something does not fit.
nlohmann::json merge_oof(const std::vector<std::string>& dirs, const std::string& out_dir);

}  // namespace kg::session
