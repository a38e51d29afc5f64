#include "data/submission.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include <ATen/ATen.h>

#include "core/error.h"
#include "core/strings.h"
#include "data/csv.h"

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

}  // namespace

std::string format_probabilities(const DataOptions& o, const Table& test, const at::Tensor& probs, const ClassList& classes) {
  KG_ASSERT(probs.size(0) == test.size() && probs.size(1) == classes.size());
  auto p = probs.contiguous().to(at::kFloat);
  const float* d = p.data_ptr<float>();
  std::string out;
  std::vector<std::string> header{o.id_col};
  header.insert(header.end(), classes.names.begin(), classes.names.end());
  append_row(out, header);
  const int64_t k = classes.size();
  for (int64_t i = 0; i < test.size(); ++i) {
    std::vector<std::string> f{test.rows[static_cast<size_t>(i)].id};
    for (int64_t c = 0; c < k; ++c) f.push_back(prob_text(d[i * k + c]));
    append_row(out, f);
  }
  return out;
}

std::string format_submission(const DataOptions& o, const Table& test, const at::Tensor& probs, const ClassList& classes) {
  KG_ASSERT(probs.size(0) == test.size() && probs.size(1) == classes.size());
  auto p = probs.contiguous().to(at::kFloat);
  const float* d = p.data_ptr<float>();
  const int64_t k = classes.size();
  auto argmax = p.argmax(1);
  const int64_t* top = argmax.data_ptr<int64_t>();
  std::map<std::string, int64_t> row_of;
  for (int64_t i = 0; i < test.size(); ++i) row_of[test.rows[static_cast<size_t>(i)].id] = i;

  std::string out;
  if (o.sample_submission.empty()) {
    append_row(out, {o.id_col, o.label_cols[0]});
    for (int64_t i = 0; i < test.size(); ++i)
      append_row(out, {test.rows[static_cast<size_t>(i)].id, classes.names[static_cast<size_t>(top[i])]});
    return out;
  }

  CsvTable sample = read_csv(data_path(o, o.sample_submission));
  int id_col = sample.require_column(o.id_col, "data.id_col");
  // Each column is the id, the label (class name or index as in training), or a class's probability.
  std::vector<int64_t> kind(sample.header.size());  // -2 id, -1 label, >= 0 class probability
  for (size_t c = 0; c < sample.header.size(); ++c) {
    const auto& h = sample.header[c];
    if (static_cast<int>(c) == id_col) kind[c] = -2;
    else if (h == o.label_cols[0]) kind[c] = -1;
    else if (auto cls = std::find(classes.names.begin(), classes.names.end(), h); cls != classes.names.end())
      kind[c] = cls - classes.names.begin();
    else
      throw DataError(sample.path + ": column \"" + h + "\" is neither the id column (" + o.id_col + "), the label column (" +
                      o.label_cols[0] + ") nor a class name (" + join(classes.names, ", ") + ")");
  }
  std::vector<std::string> diffs;
  std::map<std::string, bool> in_sample;
  for (size_t r = 0; r < sample.rows.size(); ++r) {
    const auto& id = sample.rows[r][static_cast<size_t>(id_col)];
    in_sample[id] = true;
    if (!row_of.count(id)) diffs.push_back(sample.where(r + 1) + ": id " + id + " is not in " + test.csv_path);
  }
  for (auto& row : test.rows)
    if (!in_sample.count(row.id)) diffs.push_back(test.csv_path + ": id " + row.id + " is missing from " + sample.path);
  if (!diffs.empty()) {
    std::vector<std::string> first(diffs.begin(), diffs.begin() + std::min<size_t>(diffs.size(), 10));
    throw DataError("sample submission and test table disagree (" + std::to_string(diffs.size()) + " differences):\n  - " +
                    join(first, "\n  - "));
  }
  append_row(out, sample.header);
  for (auto& srow : sample.rows) {
    int64_t i = row_of[srow[static_cast<size_t>(id_col)]];
    std::vector<std::string> f;
    for (size_t c = 0; c < kind.size(); ++c) {
      if (kind[c] == -2) f.push_back(srow[c]);
      else if (kind[c] == -1) f.push_back(classes.names[static_cast<size_t>(top[i])]);
      else f.push_back(prob_text(d[i * k + kind[c]]));
    }
    append_row(out, f);
  }
  return out;
}

}  // namespace kg::data
