#include "jobs/fit_resume.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "core/error.h"
#include "core/fs.h"
#include "core/strings.h"
#include "data/csv.h"
#include "train/checkpoint_store.h"
#include "train/options.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kg::jobs {
ResumeTarget resume_target(const FitRequest& o) {
  ResumeTarget t;
  if (o.flags.resume.empty()) return t;
  if (o.flags.resume != "auto") {
    fs::path p(o.flags.resume);
    KG_CHECK(fs::exists(p), UsageError, "--resume ", o.flags.resume,
             ": no such directory (give a run directory, a checkpoint "
             "such as RUN/checkpoints/last, or \"auto\")");
    if (fs::exists(p / "state.json") || fs::exists(p / "MANIFEST.json")) {
      t.checkpoint = p.string();
      fs::path run = p.parent_path().parent_path();  // RUN[/fold_k]/checkpoints/<name>
      if (starts_with(run.filename().string(), "fold_")) run = run.parent_path();
      t.run_dir = run.string();
    } else {
      t.run_dir = starts_with(p.filename().string(), "fold_") ? p.parent_path().string() : p.string();
    }
    return t;
  }
  if (!o.run_dir.empty()) {
    if (fs::exists(o.run_dir))
      t.run_dir = o.run_dir;
    else
      t.note = "--resume auto: " + o.run_dir + " does not exist yet: starting fresh";
    return t;
  }
  auto run = o.recipe.get<train::RunOptions>();
  auto paths = o.recipe.get<train::PathsOptions>();
  fs::path base = fs::path(paths.runs) / run.name;
  std::vector<fs::path> cands;
  if (fs::is_directory(base))
    for (auto& e : fs::directory_iterator(base))
      if (e.is_directory() && e.path().filename().string().find("-fit") != std::string::npos) cands.push_back(e.path());
  std::sort(cands.begin(), cands.end());
  for (auto it = cands.rbegin(); it != cands.rend(); ++it)
    if (session::run_status(it->string()) != "completed") {
      t.run_dir = it->string();
      return t;
    }
  t.note = "--resume auto: no unfinished fit run under " + base.string() + ": starting fresh";
  return t;
}

std::vector<std::string> changed_lines(const std::string& a, const std::string& b) {
  auto lines = [](const std::string& s) {
    std::set<std::string> out;
    std::istringstream is(s);
    for (std::string l; std::getline(is, l);)
      if (!trim(l).empty() && trim(l)[0] != '#') out.insert(l);
    return out;
  };
  auto la = lines(a), lb = lines(b);
  std::vector<std::string> out;
  for (auto& l : lb)
    if (!la.count(l)) out.push_back(l);
  return out;
}

void check_same_split(const std::string& run_dir, const std::vector<std::string>& ids, const std::vector<int>& folds) {
  const std::string path = (fs::path(run_dir) / "folds.csv").string();
  const data::CsvTable saved = data::read_csv(path);
  const int id_col = saved.require_column("id", ""), fold_col = saved.require_column("fold", "");
  std::unordered_map<std::string, std::string> fold_of;
  for (const auto& row : saved.rows)
    fold_of.emplace(row[static_cast<size_t>(id_col)], row[static_cast<size_t>(fold_col)]);
  int64_t moved = 0, missing = 0;
  std::string example;
  for (size_t i = 0; i < ids.size(); ++i) {
    auto it = fold_of.find(ids[i]);
    if (it == fold_of.end())
      ++missing;
    else if (it->second != std::to_string(folds[i]))
      ++moved;
    else
      continue;
    if (example.empty())
      example = "id " + ids[i] + ": fold " + (it == fold_of.end() ? "none" : it->second) + " in the run, " +
                std::to_string(folds[i]) + " now";
  }
  KG_CHECK(moved == 0 && missing == 0 && fold_of.size() == ids.size(), UsageError, "--resume ", run_dir,
           ": the recipe splits the rows differently from the run's folds.csv (", moved, " rows in another fold, ",
           missing, " not in the run, ", fold_of.size(), " rows in the run vs ", ids.size(), " now; ", example,
           "): a resumed model would be validated on rows it trained on. Did cv.folds, cv.strategy, run.seed or the "
           "training table change? Resume with the run's own recipe (kgtrain fit --resume ",
           run_dir, " without recipe files) or start a new run");
}

std::string rank0_text(const device::ProcessGroupPtr& group, const std::string& text) {
  if (!group) return text;
  std::vector<std::string> v{text};
  group->broadcast_strings(v);
  return v[0];
}

namespace {

// A checkpoint's identity: its MANIFEST.json (every file's size and SHA-256), or a schema-1 one's state.json.
std::string checkpoint_identity(const fs::path& dir) {
  for (const char* f : {"MANIFEST.json", "state.json"})
    if (fs::is_regular_file(dir / f)) return std::string(f) + "\n" + read_file((dir / f).string());
  return "";
}

// Checkpoint `ck` (rank 0's choice) on this rank: `ck` itself where this rank's disk holds the same one (a shared
// file system), else the copy rank 0 sends, one file per broadcast, written under own_dir/received/<name>.
// `received` says which.
std::string checkpoint_here(const std::string& ck, const std::string& own_dir, bool writer, device::ProcessGroup& group,
                            bool& received, const FitRequest& o) {
  const fs::path dir(ck);
  std::vector<std::string> theirs{writer ? checkpoint_identity(dir) : std::string()};
  group.broadcast_strings(theirs);
  const bool lacks =
      !writer && (checkpoint_identity(dir) != theirs[0] || !train::checkpoint_problem(ck, /*deep=*/false).empty());
  at::Tensor flags = torch::zeros({group.world_size()}, torch::kLong);
  if (lacks) flags[group.rank()] = 1;
  std::vector<at::Tensor> t{flags};
  group.all_reduce_sum(t);
  std::vector<std::string> lacking;
  for (int r = 0; r < group.world_size(); ++r)
    if (flags[r].item<int64_t>() > 0) lacking.push_back(std::to_string(r));
  received = lacks;
  if (lacking.empty()) return ck;
  std::vector<std::string> names;
  if (writer)
    for (auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file()) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  std::vector<std::string> listed{join(names, "\n")};
  group.broadcast_strings(listed);
  names = split(listed[0], '\n');
  const fs::path dest = fs::path(own_dir) / "received" / dir.filename();
  if (lacks) make_directories(dest.string());
  double bytes = 0;
  for (const auto& n : names) {
    std::vector<std::string> file{writer ? read_file((dir / n).string()) : std::string()};
    group.broadcast_strings(file);
    bytes += static_cast<double>(file[0].size());
    if (lacks) write_file_atomic((dest / n).string(), file[0]);
  }
  o.log("  resume  " + ck + " is not on the disk of rank" + (lacking.size() > 1 ? "s " : " ") + join(lacking, ", ") +
        ": rank 0 sent its " + std::to_string(names.size()) + " files (" + format_significant(bytes / (1 << 20), 3) +
        " MiB)");
  return lacks ? dest.string() : ck;
}

}  // namespace

void resume_fold(train::Trainer& trainer, const ResumeTarget& target, const std::string& fold_dir,
                 const std::string& own_dir, int64_t k, const std::string& label, bool writer,
                 const device::ProcessGroupPtr& group, const FitRequest& o) {
  // A checkpoint named by --resume (verified once here, by rank 0 alone with a group: the others may not see it)
  // serves its own fold; other folds take their newest complete one (find_latest already hashed it).
  std::optional<train::Checkpoint> given;
  if (!target.checkpoint.empty() && writer) {
    auto c = train::load_checkpoint(target.checkpoint, true);
    if (c.state.value("fold", int64_t{-1}) == k) given = std::move(c);
  }
  std::string ck = given ? target.checkpoint : std::string();
  std::vector<std::string> skipped;
  if (ck.empty() && writer)
    if (auto latest = train::find_latest((fs::path(fold_dir) / "checkpoints").string(), &skipped)) ck = *latest;
  bool received = false;
  if (group) {  // every rank resumes from the checkpoint rank 0 chose, read from its own disk or sent by rank 0
    ck = rank0_text(group, ck);
    if (!ck.empty()) ck = checkpoint_here(ck, own_dir, writer, *group, received, o);
  }
  for (auto& s : skipped) o.log("  resume: skipped damaged checkpoint " + s);
  // A run named by --resume whose checkpoints are all damaged is not started afresh over them (--resume
  // auto, and a fold killed before its first checkpoint, do start fresh).
  KG_CHECK(!ck.empty() || skipped.empty() || o.flags.resume == "auto", CheckpointError, "--resume ", o.flags.resume,
           ": ", label, "every checkpoint under ", (fs::path(fold_dir) / "checkpoints").string(), " is damaged (",
           join(skipped, ", "), "): remove them to train this fold afresh, or resume from an intact copy");
  if (ck.empty()) {
    o.log(label + "no complete checkpoint to resume: starting fresh");
    return;
  }
  // A received copy is hashed: the bytes that crossed the network are the ones rank 0's manifest lists.
  train::Checkpoint c = given ? std::move(*given) : train::load_checkpoint(ck, /*verify=*/received);
  KG_CHECK(!train::holds_averaged_weights(c.state), UsageError, "--resume: ", ck, " holds the ",
           c.state["weights"].dump(),
           " weights, which won that epoch, beside the model's training state: training "
           "cannot continue from them exactly. Resume from the run folder or its checkpoints/last; use ",
           ck, " for predictions (tta-predict --checkpoint) or as --weights");
  const int64_t saved_fold = c.state.value("fold", int64_t{-1});
  KG_CHECK(saved_fold < 0 || saved_fold == k, UsageError, "--resume: ", ck, " is fold ", saved_fold,
           "'s checkpoint but the recipe trains fold ", k,
           " here (cv.fold changed?): resume with the run's cv.fold, "
           "or start a new run");
  trainer.resume(c);
  // Resumed from a checkpoint newer than checkpoints/last (best saved, then killed before last): a fold with epochs
  // left rewrites last at its next save; one without makes this state its last now, as the uninterrupted run did.
  if (writer && fs::path(ck).filename() != "last" && trainer.state().epoch >= trainer.plan().epochs())
    trainer.store().save_last(trainer.checkpoint_files());
  o.log(label + "resumed from " + ck + " (epoch " + std::to_string(trainer.state().epoch) + ", update " +
        std::to_string(trainer.state().step) + ", batch " + std::to_string(trainer.state().batch) + ")");
}

}  // namespace kg::jobs
