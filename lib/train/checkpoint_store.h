// The checkpoints of one run (or one fold) inside RUN/checkpoints: which folders exist and which to keep
// (last, rotated step-<step>, best, top-epoch<NNN>), and which one a resume starts from. Each folder is one
// checkpoint in the on-disk format of train/checkpoint.h.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/checkpoint.h"

namespace kg::train {

// Among the folders in `checkpoints_dir` (last, best, step-*, top-*; hidden .tmp-* ignored), the complete
// checkpoint with the highest state["step"] (ties: "last" first, then by name). Damaged ones are skipped and
// reported in `skipped` as "<dir>: <reason>". nullopt when none is complete (or the folder is absent).
std::optional<std::string> find_latest(const std::string& checkpoints_dir, std::vector<std::string>* skipped = nullptr);

// Retention policy for one run (or one fold) inside `checkpoints_dir`: last (plus keep_last-1 rotated
// step-<step> folders), best, and the top-k epochs by a metric (timm's CheckpointSaver).
class CheckpointStore {
 public:
  // keep_last >= 1; top_k >= 0 (0 = off). ConfigError otherwise.
  CheckpointStore(std::string checkpoints_dir, int keep_last, int top_k, bool higher_is_better);

  // checkpoints/last; needs an integer f.state["step"]. The previous last (when complete and of another
  // step) becomes step-<its step, 9 digits>; the oldest step-* beyond keep_last-1 are removed.
  void save_last(const CheckpointFiles& f);
  // checkpoints/best.
  void save_best(const CheckpointFiles& f);
  // Keeps checkpoints/top-epoch<NNN> when `value` is among the k best seen (ties: the earlier epoch stays;
  // NaN and infinities never enter); evicts the one that falls out. Offering an epoch again replaces its
  // entry (a resumed run repeating the epoch). Returns true when kept.
  bool offer_top_k(const CheckpointFiles& f, double value, int64_t epoch);

  // Top-k bookkeeping, to store in state.json and give back on resume: [{"epoch", "value", "dir"}] best
  // first, "dir" relative to the checkpoints folder.
  nlohmann::json state() const;
  // Entries whose folder is gone are dropped; beyond top_k (a smaller k on resume) the worst are removed.
  // null or {} (nothing saved) clears it. CheckpointError when `s` is not such a list.
  void load_state(const nlohmann::json& s);

  const std::string& dir() const { return dir_; }

 private:
  struct TopEntry {
    int64_t epoch;
    double value;
    std::string dir;  // folder name inside dir_
  };
  bool ranks_before(const TopEntry& a, const TopEntry& b) const;
  void prune_rotated() const;
  void evict_beyond_k();

  std::string dir_;
  int keep_last_;
  int top_k_;
  bool higher_is_better_;
  std::vector<TopEntry> top_;  // best first
};

}  // namespace kg::train
