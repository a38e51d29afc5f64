// loss.distill.teacher: the teacher's logits for every row of the student's training table, read from the teacher's
// run folder (its oof.csv) or from a CSV of soft labels, matched to the table by id.
#pragma once
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "data/table.h"

namespace kg::session {

// The teacher's logits, float [table rows, K] in table order (K = classes.outputs()). `teacher` is
//   - a run folder (or its oof.csv): the out-of-fold probabilities fit wrote (columns after "prediction");
//   - a CSV of `id_col` + prob_<class> columns (probabilities: kgtrain pseudo-label's soft output) or
//     logit_<class> columns (logits).
// Probabilities become logits: multiclass log p (softmax(log p / T) is p's tempered distribution), binary and
// multilabel log(p / (1 - p)); p is clamped to [1e-7, 1 - 1e-7] so a confident 0 or 1 stays finite.
// DataError (exit 3) naming the first difference: a class (name or order) the student does not have in that place,
// a trained row's id the teacher lacks, an id the training table lacks, an id twice, a value that is not a number.
// Only the rows the student trains on (`trained[r]`) need a prediction: a fold's validation rows are never distilled,
// so a teacher fitted without them (no leak of the student's validation labels) serves; the others are 0.
at::Tensor load_teacher(const std::string& teacher, const data::Table& table, const data::ClassList& classes,
                        const std::string& id_col, const std::vector<bool>& trained);

}  // namespace kg::session
