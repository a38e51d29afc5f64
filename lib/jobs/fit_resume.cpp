#include "jobs/fit_resume.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

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

void resume_fold(train::Trainer& trainer, const ResumeTarget& target, const std::string& fold_dir, int64_t k,
                 const std::string& label, bool writer, const device::ProcessGroupPtr& group, const FitRequest& o) {
  // A checkpoint named by --resume (verified once here) serves its own fold; other folds take their
  // newest complete one (find_latest already hashed it: no second verification).
  std::optional<train::Checkpoint> given;
  if (!target.checkpoint.empty()) {
    auto c = train::load_checkpoint(target.checkpoint, true);
    if (c.state.value("fold", int64_t{-1}) == k) given = std::move(c);
  }
  std::string ck = given ? target.checkpoint : std::string();
  std::vector<std::string> skipped;
  if (ck.empty()) {
    if (writer) {
      if (auto latest = train::find_latest((fs::path(fold_dir) / "checkpoints").string(), &skipped)) ck = *latest;
    }
    if (group) {  // every rank resumes from the checkpoint rank 0 chose
      std::vector<std::string> chosen{ck};
      group->broadcast_strings(chosen);
      ck = chosen[0];
    }
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
  train::Checkpoint c = given ? std::move(*given) : train::load_checkpoint(ck, false);
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
