// Prediction files: the submission in the competition's sample_submission format, and per-class
// probabilities, for every task.
#pragma once
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "data/options.h"
#include "data/table.h"

namespace kg::data {

// What goes into the label column(s) (tta.output):
//   auto: multiclass the class; binary the positive class's probability; multilabel one column -> the
//         labels at or above the threshold joined by data.label_sep, one column per label -> probabilities;
//         regression the values.
//   label: decisions everywhere (binary: the class by threshold; multilabel per-label columns: 0/1).
//   probability: probabilities wherever a column can hold one (binary label column, per-label columns).
struct SubmissionFormat {
  std::string output = "auto";
  std::vector<double> threshold;  // binary/multilabel: one per output (empty = 0.5)
};

// preds: [N, outputs] for table rows 0..N-1 in order — probabilities (multiclass softmax, binary/multilabel
// sigmoid) or values (regression). With data.sample_submission, rows follow the sample's id order and
// columns its header: the id column, the label column(s), or a class name (that class's probability); a
// sample whose ids differ from the test table is a DataError listing the first differences, an unknown
// column a DataError naming it and what is allowed.
std::string format_submission(const DataOptions& o, const Table& test, const at::Tensor& preds,
                              const ClassList& classes, const SubmissionFormat& f = {});

// Header: id column, then one column per model output named by the class / label / target (binary: the
// positive class), in output order.
std::string format_probabilities(const DataOptions& o, const Table& test, const at::Tensor& preds,
                                 const ClassList& classes);

// The names of the model's outputs in order (binary: the positive class).
std::vector<std::string> output_names(const ClassList& classes);

}  // namespace kg::data
