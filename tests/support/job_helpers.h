// Small helpers the job tests share: argument lists, JSON files, CSV columns by id.
#pragma once
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "data/csv.h"

namespace kg::test {

inline std::vector<std::string> cat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Sets an environment variable for the kgtrain processes a test starts; unset again at scope exit.
struct EnvVar {
  std::string name;
  EnvVar(const std::string& n, const std::string& v) : name(n) { ::setenv(n.c_str(), v.c_str(), 1); }
  ~EnvVar() { ::unsetenv(name.c_str()); }
  EnvVar(const EnvVar&) = delete;
  EnvVar& operator=(const EnvVar&) = delete;
};

inline nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(kg::read_file(path)); }

// One JSON value per non-empty line (metrics.jsonl).
inline std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::istringstream is(kg::read_file(path));
  for (std::string l; std::getline(is, l);)
    if (!l.empty()) out.push_back(nlohmann::json::parse(l));
  return out;
}

// id (first column) -> column value of a CSV with a header.
inline std::map<std::string, std::string> column_by_id(const kg::data::CsvTable& t, const std::string& col) {
  std::map<std::string, std::string> m;
  int c = t.require_column(col, "");
  for (auto& r : t.rows) m[r[0]] = r[static_cast<size_t>(c)];
  return m;
}

}  // namespace kg::test
