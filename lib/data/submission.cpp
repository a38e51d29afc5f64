#include "data/submission.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>

#include <ATen/ATen.h>

#include "core/error.h"
#include "core/strings.h"
#include "data/csv.h"
#include "data/source.h"
#include "data/table_read.h"

namespace kg::data {
namespace {

std::string prob_text(float p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", static_cast<double>(p));
  return buf;
}

void append_row(std::string& out, const std::vector<std::string>& fields) {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) out += ',';
    out += csv_field(fields[i]);
  }
  out += '\n';
}

// A submission column: what it holds for row i.
struct Column {
  enum Kind { id, label, value, prob, prob_negative } kind = id;
  int64_t out = 0;  // model output index (value: regression target / per-label column; prob: class)
};

}  // namespace

std::vector<std::string> output_names(const ClassList& classes) {
  if (classes.task == Task::binary) return {classes.names[1]};
  return classes.names;
}

std::string format_probabilities(const DataOptions& o, const Table& test, const at::Tensor& preds,
                                 const ClassList& classes) {
  KG_ASSERT(preds.size(0) == test.size() && preds.size(1) == classes.outputs());
  auto p = preds.contiguous().to(at::kFloat);
  const float* d = p.data_ptr<float>();
  std::string out;
  std::vector<std::string> header{o.id_col};
  for (auto& n : output_names(classes)) header.push_back(n);
  append_row(out, header);
  const int64_t k = classes.outputs();
  for (int64_t i = 0; i < test.size(); ++i) {
    std::vector<std::string> f{test.rows[static_cast<size_t>(i)].id};
    for (int64_t c = 0; c < k; ++c) f.push_back(prob_text(d[i * k + c]));
    append_row(out, f);
  }
  return out;
}

std::string format_submission(const DataOptions& o, const Table& test, const at::Tensor& preds,
                              const ClassList& classes, const SubmissionFormat& fmt) {
  const int64_t k = classes.outputs();
  KG_ASSERT(preds.size(0) == test.size() && preds.size(1) == k);
  auto p = preds.contiguous().to(at::kFloat);
  const float* d = p.data_ptr<float>();
  const Task task = classes.task;
  auto thr = [&](int64_t c) { return fmt.threshold.empty() ? 0.5 : fmt.threshold[static_cast<size_t>(c)]; };
  auto argmax = task == Task::multiclass ? p.argmax(1) : at::Tensor();
  const int64_t* top = argmax.defined() ? argmax.data_ptr<int64_t>() : nullptr;
  const bool per_label_cols = task == Task::multilabel && o.label_cols.size() > 1;

  auto cell = [&](int64_t i, const Column& c) -> std::string {
    const float* r = d + i * k;
    switch (c.kind) {
      case Column::id:
        return test.rows[static_cast<size_t>(i)].id;
      case Column::prob:
        return prob_text(r[c.out]);
      case Column::prob_negative:
        return prob_text(1.0f - r[0]);
      case Column::value:  // regression target, or one per-label column of a multilabel table
        if (task == Task::multilabel && fmt.output == "label") return r[c.out] >= thr(c.out) ? "1" : "0";
        return prob_text(r[c.out]);
      case Column::label:
        switch (task) {
          case Task::multiclass:
            return classes.names[static_cast<size_t>(top[i])];
          case Task::binary:
            if (fmt.output == "label") return classes.names[r[0] >= thr(0) ? 1 : 0];
            return prob_text(r[0]);
          case Task::multilabel: {
            std::vector<std::string> on;
            for (int64_t j = 0; j < k; ++j)
              if (r[j] >= thr(j)) on.push_back(classes.names[static_cast<size_t>(j)]);
            return join(on, o.label_sep);
          }
          case Task::regression:
            return prob_text(r[0]);
        }
    }
    return "";
  };
  // The label column(s) without a sample: id + label_cols.
  auto label_columns = [&](const std::string& name) -> std::optional<Column> {
    auto it = std::find(o.label_cols.begin(), o.label_cols.end(), name);
    if (it == o.label_cols.end()) return std::nullopt;
    const int64_t j = it - o.label_cols.begin();
    if (task == Task::regression || per_label_cols) return Column{Column::value, j};
    if (j == 0) return Column{Column::label, 0};
    return std::nullopt;
  };

  std::map<std::string, int64_t> row_of;
  for (int64_t i = 0; i < test.size(); ++i) row_of[test.rows[static_cast<size_t>(i)].id] = i;
  std::string out;
  if (o.sample_submission.empty()) {
    std::vector<std::string> header{o.id_col};
    std::vector<Column> cols{Column{Column::id, 0}};
    for (size_t j = 0; j < o.label_cols.size(); ++j)
      if (auto c = label_columns(o.label_cols[j])) header.push_back(o.label_cols[j]), cols.push_back(*c);
    append_row(out, header);
    for (int64_t i = 0; i < test.size(); ++i) {
      std::vector<std::string> f;
      for (auto& c : cols) f.push_back(cell(i, c));
      append_row(out, f);
    }
    return out;
  }
  CsvTable sample = read_table(data_path(o, o.sample_submission));
  int id_col = sample.require_column(o.id_col, "data.id_col");
  std::vector<Column> cols(sample.header.size());
  std::vector<std::string> allowed{o.id_col + " (id)"};
  for (auto& l : o.label_cols) allowed.push_back(l + " (label)");
  if (task != Task::regression)
    for (auto& n : classes.names) allowed.push_back(n + " (probability)");
  for (size_t c = 0; c < sample.header.size(); ++c) {
    const auto& h = sample.header[c];
    if (static_cast<int>(c) == id_col) {
      cols[c] = {Column::id, 0};
    } else if (auto lc = label_columns(h)) {
      cols[c] = *lc;
    } else if (auto cls = std::find(classes.names.begin(), classes.names.end(), h);
               task != Task::regression && cls != classes.names.end()) {
      const int64_t j = cls - classes.names.begin();
      if (task == Task::binary)
        cols[c] = {j == 1 ? Column::prob : Column::prob_negative, 0};
      else
        cols[c] = {Column::prob, j};
    } else {
      throw DataError(sample.path + ": column \"" + h +
                      "\" is not one kgtrain can fill; allowed: " + join(allowed, ", "));
    }
  }
  std::vector<std::string> diffs;
  std::map<std::string, bool> in_sample;
  for (size_t r = 0; r < sample.rows.size(); ++r) {
    const auto& id = sample.rows[r][static_cast<size_t>(id_col)];
    if (in_sample.count(id)) diffs.push_back(sample.where(r + 1) + ": id " + id + " appears again (each test id once)");
    in_sample[id] = true;
    if (!row_of.count(id)) diffs.push_back(sample.where(r + 1) + ": id " + id + " is not in " + test.csv_path);
  }
  for (auto& row : test.rows)
    if (!in_sample.count(row.id)) diffs.push_back(test.csv_path + ": id " + row.id + " is missing from " + sample.path);
  if (!diffs.empty()) {
    std::vector<std::string> first(diffs.begin(), diffs.begin() + std::min<size_t>(diffs.size(), 10));
    throw DataError("sample submission and test table disagree (" + std::to_string(diffs.size()) +
                    " differences):\n  - " + join(first, "\n  - "));
  }
  append_row(out, sample.header);
  for (auto& srow : sample.rows) {
    const int64_t i = row_of[srow[static_cast<size_t>(id_col)]];
    std::vector<std::string> f;
    for (size_t c = 0; c < cols.size(); ++c) f.push_back(cols[c].kind == Column::id ? srow[c] : cell(i, cols[c]));
    append_row(out, f);
  }
  return out;
}

}  // namespace kg::data
