#include <ctime>
#include <filesystem>
#include <iostream>

#include "config/resolve.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/run_lock.h"
#include "core/sha256.h"
#include "core/strings.h"
#include "session/session.h"
#include "train/options.h"

namespace fs = std::filesystem;

namespace kg::session {

namespace {
std::string utc_stamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}
}  // namespace

nlohmann::json file_input(const std::string& path) {
  nlohmann::json j = {{"path", path}};
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return j;
  const auto bytes = fs::file_size(path, ec);
  j["bytes"] = bytes;
  // Hashing a multi-GB pack would cost more than the job: large files are identified by size only.
  if (!ec && bytes <= (64ull << 20)) j["sha256"] = sha256_file_hex(path);
  return j;
}

nlohmann::json provenance(const Session& o) {
  nlohmann::json keys = nlohmann::json::object();
  for (auto& [k, e] : o.recipe.tree().entries()) keys[k] = e.origin.str();
  return {{"schema_version", 1}, {"env", o.env_name}, {"layers", o.layers}, {"keys", keys}};
}

std::string prepare_run_dir(const Session& o) {
  fs::path dir;
  if (!o.run_dir.empty()) {
    dir = o.run_dir;
  } else {
    auto run = o.recipe.get<train::RunOptions>();
    auto paths = o.recipe.get<train::PathsOptions>();
    fs::path base = fs::path(paths.runs) / run.name / (utc_stamp() + "-" + o.command);
    dir = base;
    for (int i = 2; fs::exists(dir); ++i) dir = base.string() + "-" + std::to_string(i);
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  KG_CHECK(!ec, DataError, "cannot create run folder ", dir.string(), ": ", ec.message());
  // One writer per run folder: a second process given the same --run-dir is refused here, before it looks.
  lock_run_dir(dir.string(), o.command);
  if (!o.run_dir.empty()) {
    // Any trace of a run, also of one killed before its summary.json: a second run there would replace
    // its best checkpoint and metrics, and a later --resume would mix the two.
    std::vector<std::string> found;
    for (const char* f : {"summary.json", "recipe.toml", "checkpoints", "metrics.jsonl", "folds.csv"})
      if (fs::exists(dir / f)) found.push_back(f);
    KG_CHECK(found.empty(), UsageError, "--run-dir ", o.run_dir, " already holds a run (", join(found, ", "),
             "); kgtrain never overwrites a run: choose another folder, remove it, or continue a fit with "
             "kgtrain fit --resume ",
             o.run_dir);
  }
  write_file_atomic((dir / "recipe.toml").string(), config::to_toml(o.recipe.tree(), false));
  write_file_atomic((dir / "provenance.json").string(), provenance(o).dump(2) + "\n");
  return dir.string();
}

void write_summary(const std::string& run_dir, nlohmann::json summary) {
  summary["schema_version"] = 1;
  write_file_atomic((fs::path(run_dir) / "summary.json").string(), summary.dump(2) + "\n");
}

std::string run_status(const std::string& run_dir) {
  const fs::path summary = fs::path(run_dir) / "summary.json";
  if (!fs::exists(summary)) return "";
  try {
    return nlohmann::json::parse(read_file(summary.string())).value("status", "");
  } catch (const std::exception&) {
    return "unreadable";
  }
}

void Session::log(const std::string& line) const {
  if (!quiet) std::cerr << line << std::endl;
}

}  // namespace kg::session
