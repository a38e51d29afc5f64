#include "session/teacher.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <unordered_map>

#include <torch/torch.h>

#include "core/error.h"
#include "core/strings.h"
#include "data/csv.h"
#include "data/submission.h"

namespace fs = std::filesystem;

namespace kg::session {
namespace {

// Where the teacher's columns are and what they hold.
struct TeacherColumns {
  std::vector<int> cols;           // one per model output, in the file's order
  std::vector<std::string> names;  // the class each column names
  bool logits = false;
};

TeacherColumns teacher_columns(const data::CsvTable& csv, size_t outputs) {
  TeacherColumns c;
  const int pred = csv.column("prediction");
  if (pred >= 0 && csv.column("fold") >= 0) {  // fit's oof.csv: the probability columns follow "prediction"
    for (int j = pred + 1; j < static_cast<int>(csv.header.size()); ++j) {
      c.cols.push_back(j);
      c.names.push_back(csv.header[static_cast<size_t>(j)]);
    }
    return c;
  }
  for (const char* prefix : {"prob_", "logit_"}) {
    for (size_t j = 0; j < csv.header.size(); ++j)
      if (starts_with(csv.header[j], prefix)) {
        c.cols.push_back(static_cast<int>(j));
        c.names.push_back(csv.header[j].substr(std::string(prefix).size()));
      }
    if (!c.cols.empty()) {
      c.logits = std::string(prefix) == "logit_";
      return c;
    }
  }
  throw DataError("loss.distill.teacher: " + csv.path +
                  " has no teacher columns: expected fit's oof.csv (probability " +
                  "columns after \"prediction\"), or one prob_<class> (probabilities) or logit_<class> (logits) " +
                  "column per class (" + std::to_string(outputs) + " here)");
}

std::string csv_of(const std::string& teacher) {
  KG_CHECK(fs::exists(teacher), DataError, "loss.distill.teacher: ", teacher,
           " does not exist (a run folder or a CSV)");
  if (!fs::is_directory(teacher)) return teacher;
  const fs::path oof = fs::path(teacher) / "oof.csv";
  KG_CHECK(fs::exists(oof), DataError, "loss.distill.teacher: ", teacher,
           " has no oof.csv: every training row needs the teacher's out-of-fold prediction; fit the teacher with "
           "cv.fold = \"all\" (or merge its folds with kgtrain merge-oof)");
  return oof.string();
}

}  // namespace

at::Tensor load_teacher(const std::string& teacher, const data::Table& table, const data::ClassList& classes,
                        const std::string& id_col, const std::vector<bool>& trained) {
  const data::CsvTable csv = data::read_csv(csv_of(teacher));
  const auto expected = data::output_names(classes);
  const TeacherColumns tc = teacher_columns(csv, expected.size());
  for (size_t j = 0; j < std::max(expected.size(), tc.names.size()); ++j) {
    const std::string want = j < expected.size() ? "\"" + expected[j] + "\"" : "none";
    const std::string got = j < tc.names.size() ? "\"" + tc.names[j] + "\"" : "none";
    KG_CHECK(want == got, DataError, "loss.distill.teacher: ", csv.path, ": the teacher's output ", j + 1, " is class ",
             got, ", the student's is ", want, " (the student's outputs: ", join(expected, ", "),
             "): a teacher must predict the same classes in the same order");
  }
  const int idc = csv.require_column(id_col, "data.id_col");
  std::unordered_map<std::string, int64_t> row_of;
  for (int64_t r = 0; r < table.size(); ++r) row_of.emplace(table.rows[static_cast<size_t>(r)].id, r);
  const auto k = static_cast<int64_t>(expected.size());
  auto out = torch::full({table.size(), k}, std::nan(""), torch::kDouble);
  auto* o = out.data_ptr<double>();
  for (size_t i = 0; i < csv.rows.size(); ++i) {
    const auto& row = csv.rows[i];
    const std::string& id = row[static_cast<size_t>(idc)];
    const auto it = row_of.find(id);
    KG_CHECK(it != row_of.end(), DataError, "loss.distill.teacher: ", csv.where(i + 1), ": id ", id,
             " is not a row of the student's training table ", table.csv_path,
             ": the teacher must predict exactly the student's training rows");
    double* dst = o + it->second * k;
    KG_CHECK(std::isnan(dst[0]), DataError, "loss.distill.teacher: ", csv.where(i + 1), ": id ", id, " appears twice");
    for (int64_t j = 0; j < k; ++j) {
      const std::string& s = row[static_cast<size_t>(tc.cols[static_cast<size_t>(j)])];
      double v = 0;
      size_t used = 0;
      try {
        v = std::stod(s, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      KG_CHECK(used == s.size() && !s.empty() && std::isfinite(v) && (tc.logits || (v >= 0 && v <= 1)), DataError,
               "loss.distill.teacher: ", csv.where(i + 1), ": id ", id, ": ", tc.names[static_cast<size_t>(j)], " = \"",
               s, "\" is not ", tc.logits ? "a finite number" : "a probability in [0, 1]");
      dst[j] = v;
    }
  }
  for (int64_t r = 0; r < table.size(); ++r) {
    const auto& row = table.rows[static_cast<size_t>(r)];
    KG_CHECK(!trained[static_cast<size_t>(r)] || !std::isnan(o[r * k]), DataError, "loss.distill.teacher: ", csv.path,
             " has no prediction for id ", row.id, " (", row.where,
             "), a row the student trains on: each needs one (a teacher fitted with cv.fold = \"all\")");
  }
  out.nan_to_num_(0.5);  // rows the student never trains on (validation only): never read
  if (!tc.logits) {
    const auto p = out.clamp(1e-7, 1 - 1e-7);
    out = classes.task == data::Task::multiclass ? p.log() : p.log() - (-p).log1p();
  }
  return out.to(torch::kFloat);
}

}  // namespace kg::session
