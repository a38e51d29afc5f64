#include "train/checkpoint_store.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "core/fs.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kg::train {
namespace {

// A folder name inside the checkpoints folder: no separators, no hidden or parent entries.
bool plain_folder(const std::string& n) { return !n.empty() && n[0] != '.' && n.find('/') == std::string::npos; }

// A checkpoint's state.json; an empty object when it is missing, unreadable or not a JSON object.
json read_state(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir / "state.json", ec)) return json::object();
  try {
    json j = json::parse(read_file((dir / "state.json").string()));
    if (j.is_object()) return j;
  } catch (const Error&) {            // unreadable
  } catch (const json::exception&) {  // not JSON
  }
  return json::object();
}

// The update a state.json holds; nullopt when it has none.
std::optional<int64_t> step_of(const json& state) {
  if (state.contains("step") && state["step"].is_number_integer()) return state["step"].get<int64_t>();
  return std::nullopt;
}

std::string padded(int64_t v, int width) {
  std::string s = std::to_string(v);
  return s.size() < static_cast<size_t>(width) ? std::string(static_cast<size_t>(width) - s.size(), '0') + s : s;
}

}  // namespace

std::optional<std::string> find_latest(const std::string& checkpoints_dir, std::vector<std::string>* skipped) {
  std::error_code ec;
  if (!fs::is_directory(checkpoints_dir, ec)) return std::nullopt;
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(checkpoints_dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n.empty() || n[0] == '.' || !e.is_directory(ec)) continue;  // .tmp-* are unfinished saves
    dirs.push_back(e.path());
  }
  std::sort(dirs.begin(), dirs.end());
  auto skip = [&](const fs::path& d, const std::string& why) {
    if (skipped) skipped->push_back(d.string() + ": " + why);
  };
  struct Candidate {
    int64_t step;
    bool last;
    fs::path path;
  };
  std::vector<Candidate> cands;
  for (const auto& d : dirs) {  // cheap pass: manifest and sizes
    std::string why = checkpoint_problem(d.string(), false);
    if (!why.empty()) {
      skip(d, why);
      continue;
    }
    const json state = read_state(d);
    if (holds_averaged_weights(state)) continue;  // complete, but not a state to resume from
    const auto step = step_of(state);
    if (!step) {
      skip(d, "state.json has no integer \"step\"");
      continue;
    }
    cands.push_back({*step, d.filename() == "last", d});
  }
  std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
    if (a.step != b.step) return a.step > b.step;
    if (a.last != b.last) return a.last;
    return a.path < b.path;
  });
  for (const auto& c : cands) {  // hash only until the newest complete one is found
    std::string why = checkpoint_problem(c.path.string(), true);
    if (why.empty()) return c.path.string();
    skip(c.path, why);
  }
  return std::nullopt;
}

CheckpointStore::CheckpointStore(std::string checkpoints_dir, int keep_last, int top_k, bool higher_is_better)
    : dir_(std::move(checkpoints_dir)), keep_last_(keep_last), top_k_(top_k), higher_is_better_(higher_is_better) {
  KG_CHECK(keep_last_ >= 1, ConfigError,
           "checkpoint keep_last: expected an integer >= 1 (1 = only checkpoints/last), got ", keep_last_);
  KG_CHECK(top_k_ >= 0, ConfigError, "checkpoint top_k: expected an integer >= 0 (0 = off), got ", top_k_);
}

bool CheckpointStore::ranks_before(const TopEntry& a, const TopEntry& b) const {
  if (a.value != b.value) return higher_is_better_ ? a.value > b.value : a.value < b.value;
  return a.epoch < b.epoch;
}

void CheckpointStore::save_last(const CheckpointFiles& f) {
  KG_ASSERT(f.state.is_object() && f.state.contains("step") && f.state["step"].is_number_integer(),
            "save_last needs an integer state[\"step\"]");
  const fs::path last = fs::path(dir_) / "last";
  std::string rotate_to;
  if (keep_last_ > 1) {
    const auto prev = step_of(read_state(last));
    if (prev && *prev != f.state["step"].get<int64_t>()) rotate_to = "step-" + padded(*prev, 9);
  }
  save_checkpoint(last.string(), f, rotate_to);
  prune_rotated();
}

void CheckpointStore::prune_rotated() const {
  std::error_code ec;
  std::vector<std::pair<int64_t, fs::path>> rotated;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("step-", 0) != 0 || n.size() == 5 || n.size() > 24 ||
        !std::all_of(n.begin() + 5, n.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    rotated.emplace_back(std::stoll(n.substr(5)), e.path());
  }
  std::sort(rotated.begin(), rotated.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = static_cast<size_t>(keep_last_ - 1); i < rotated.size(); ++i)
    discard_directory(rotated[i].second.string());
}

void CheckpointStore::save_best(const CheckpointFiles& f) { save_checkpoint((fs::path(dir_) / "best").string(), f); }

void CheckpointStore::evict_beyond_k() {
  while (static_cast<int>(top_.size()) > top_k_) {
    discard_directory((fs::path(dir_) / top_.back().dir).string());
    top_.pop_back();
  }
}

bool CheckpointStore::offer_top_k(const CheckpointFiles& f, double value, int64_t epoch) {
  if (top_k_ <= 0 || !std::isfinite(value)) return false;
  TopEntry e{epoch, value, "top-epoch" + padded(epoch, 3)};
  auto same = std::find_if(top_.begin(), top_.end(), [&](const TopEntry& t) { return t.epoch == epoch; });
  bool had = same != top_.end();
  if (had) top_.erase(same);
  bool keep = static_cast<int>(top_.size()) < top_k_ || ranks_before(e, top_.back());
  if (!keep) {
    if (had) discard_directory((fs::path(dir_) / e.dir).string());  // the repeated epoch no longer qualifies
    return false;
  }
  save_checkpoint((fs::path(dir_) / e.dir).string(), f);
  top_.insert(std::upper_bound(top_.begin(), top_.end(), e,
                               [&](const TopEntry& a, const TopEntry& b) { return ranks_before(a, b); }),
              e);
  evict_beyond_k();  // the new one is written before the evicted one goes: a crash leaves k+1, never k-1
  return true;
}

json CheckpointStore::state() const {
  json s = json::array();
  for (const auto& e : top_) s.push_back({{"epoch", e.epoch}, {"value", e.value}, {"dir", e.dir}});
  return s;
}

void CheckpointStore::load_state(const json& s) {
  top_.clear();
  if (s.is_null() || (s.is_object() && s.empty())) return;  // nothing saved (older checkpoints)
  KG_CHECK(s.is_array(), CheckpointError, "checkpoint top-k state: expected a list of {epoch, value, dir}, got ",
           s.dump());
  std::error_code ec;
  for (const auto& e : s) {
    KG_CHECK(e.is_object() && e.contains("epoch") && e["epoch"].is_number_integer() && e.contains("value") &&
                 e["value"].is_number() && e.contains("dir") && e["dir"].is_string() &&
                 plain_folder(e["dir"].get<std::string>()),
             CheckpointError,
             "checkpoint top-k state: expected {\"epoch\": int, \"value\": number, \"dir\": name}, got ", e.dump());
    TopEntry t{e["epoch"].get<int64_t>(), e["value"].get<double>(), e["dir"].get<std::string>()};
    if (fs::is_directory(fs::path(dir_) / t.dir, ec)) top_.push_back(t);
  }
  std::sort(top_.begin(), top_.end(), [&](const TopEntry& a, const TopEntry& b) { return ranks_before(a, b); });
  if (top_k_ > 0) evict_beyond_k();
}

}  // namespace kg::train
