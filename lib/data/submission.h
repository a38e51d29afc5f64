// Prediction files: the submission in the competition's sample_submission format, and per-class
// probabilities.
#pragma once
#include <string>

#include <ATen/core/Tensor.h>

#include "data/options.h"
#include "data/table.h"

namespace kg::data {

// probs: [N, K] for table rows 0..N-1 in order. With data.sample_submission, rows follow the sample's
// id order and columns its header (id, label column as class name/index, or one probability column per
// class); a sample whose ids differ from the test table is a DataError listing the first differences.
std::string format_submission(const DataOptions& o, const Table& test, const at::Tensor& probs, const ClassList& classes);

// Header: id column, then one column per class named by the class, in class-index order.
std::string format_probabilities(const DataOptions& o, const Table& test, const at::Tensor& probs, const ClassList& classes);

}  // namespace kg::data
