// End to end through the real binary: a fit killed anywhere (SIGKILL at seeded points spread over the
// run, SIGTERM) and resumed must end with the uninterrupted run's bytes (weights, optimizer/RNG state,
// EMA), the same metrics.jsonl and summary "completed"; --resume auto and damaged checkpoints.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <torch/torch.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include "core/fs.h"
#include "data/csv.h"
#include "model/weights/safetensors.h"
#include "support/fixtures.h"
#include "support/process.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

using kg::test::last_step;
using kg::test::signal_when;
using kg::test::spawn;
using kg::test::wait_status;
using kg::test::wait_until;

// Checkpoints after every update, so that a kill can land at any update (and inside a save).
const std::vector<std::string> kOverrides{"train.epochs=3", "train.checkpoint_every_steps=1"};

std::vector<std::string> cat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// "update N" of the resumed run's "resumed from ..." line; 0 for "starting fresh"; -1 when neither.
int64_t resumed_update(const std::string& out) {
  std::smatch m;
  static const std::regex re(R"(resumed from \S+ \(epoch (\d+), update (\d+), batch (\d+)\))");
  if (std::regex_search(out, m, re)) return std::stoll(m[2]);
  return out.find("starting fresh") != std::string::npos ? 0 : -1;
}

// Which tensors of two safetensors files differ, and by how much (for the failure message).
std::string tensor_diff(const std::string& ref, const std::string& got) {
  try {
    auto a = kg::model::read_safetensors(ref), b = kg::model::read_safetensors(got);
    std::ostringstream os;
    int n = 0;
    for (auto& [name, t] : a) {
      auto it = b.find(name);
      if (it == b.end()) {
        os << "\n  " << name << ": missing";
        ++n;
      } else if (!t.sizes().equals(it->second.sizes()) || t.scalar_type() != it->second.scalar_type()) {
        os << "\n  " << name << ": shape/dtype differ";
        ++n;
      } else if (!torch::equal(t, it->second)) {
        auto d = (t.to(torch::kDouble) - it->second.to(torch::kDouble)).abs();
        os << "\n  " << name << ": max |diff| " << d.max().item<double>() << " (" << d.ne(0).sum().item<int64_t>()
           << " of " << t.numel() << " values)";
        ++n;
      }
    }
    for (auto& [name, t] : b)
      if (!a.count(name)) os << "\n  " << name << ": extra", ++n;
    return std::to_string(n) + " of " + std::to_string(a.size()) + " tensors differ:" + os.str();
  } catch (const std::exception& e) {
    return std::string("cannot decode: ") + e.what();
  }
}

void check_same_tensors_file(const std::string& ref, const std::string& got) {
  REQUIRE(fs::exists(got));
  const bool same = kg::read_file(ref) == kg::read_file(got);
  INFO(got << " vs " << ref << (same ? std::string() : "\n" + tensor_diff(ref, got)));
  CHECK(same);
}

std::vector<json> jsonl(const std::string& path) {
  std::vector<json> out;
  std::istringstream is(kg::read_file(path));
  for (std::string l; std::getline(is, l);)
    if (!l.empty()) out.push_back(json::parse(l));
  return out;
}

// The finished run `dir` equals the uninterrupted `ref`: every safetensors file of checkpoints/last
// byte for byte, summary "completed", and the same metrics.jsonl (times aside).
void check_same_run(const std::string& ref, const std::string& dir) {
  for (auto& e : fs::directory_iterator(ref + "/checkpoints/last"))
    if (e.path().extension() == ".safetensors")
      check_same_tensors_file(e.path().string(), dir + "/checkpoints/last/" + e.path().filename().string());
  auto s = json::parse(kg::read_file(dir + "/summary.json"));
  CHECK(s["status"] == "completed");
  CHECK(s["epochs_completed"] == 3);
  auto a = jsonl(ref + "/metrics.jsonl"), b = jsonl(dir + "/metrics.jsonl");
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("metrics.jsonl line " << i + 1 << "\n  uninterrupted " << a[i].dump() << "\n  resumed       " << b[i].dump());
    CHECK(a[i]["epoch"] == b[i]["epoch"]);
    CHECK(a[i]["step"] == b[i]["step"]);
    CHECK(a[i].value("best", "") == b[i].value("best", ""));
    // Loss means are sums folded in at each save: the order of additions may differ by an ulp.
    for (auto k : {"lr", "train_loss", "valid_loss", "accuracy", "log_loss"})
      CHECK(b[i][k].get<double>() == Approx(a[i][k].get<double>()).epsilon(1e-12).margin(1e-15));
  }
}

// The tiny dataset, its recipe and an uninterrupted reference run per set of overrides (once per process).
struct Shared {
  kg::test::TempDir dir;
  kg::test::TinyDataset ds;
  std::string recipe;
  std::map<std::string, std::string> refs;  // joined overrides -> run dir
  int counter = 0;

  Shared() {
    ds = kg::test::make_tiny_dataset(dir, 64, 8);
    recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  }
  std::string fresh(const std::string& stem) { return dir / (stem + std::to_string(counter++)); }
  // The uninterrupted run with `overrides`.
  const std::string& reference(const std::vector<std::string>& overrides) {
    std::string key;
    for (auto& o : overrides) key += o + " ";
    auto it = refs.find(key);
    if (it != refs.end()) return it->second;
    std::string run = fresh("ref");
    auto r = kg::test::run_kgtrain(cat({"fit", recipe}, cat(overrides, {"--run-dir", run, "--quiet"})));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    return refs[key] = run;
  }
  // `fit RECIPE overrides --run-dir run --resume run` (plus `extra`), not quiet: the log says where it resumed.
  kg::test::RunResult resume(const std::vector<std::string>& overrides, const std::string& run,
                             const std::vector<std::string>& extra = {}) {
    return kg::test::run_kgtrain(cat(cat({"fit", recipe}, cat(overrides, extra)), {"--run-dir", run, "--resume", run}));
  }
};

Shared& shared() {
  static auto s = std::make_unique<Shared>();
  return *s;
}

std::string log_text(const std::string& path) {
  return fs::exists(path) ? kg::read_file(path) : std::string("(no log)");
}

}  // namespace

TEST_CASE("fits killed at any point resume to the uninterrupted run's exact bytes", "[integration][slow][resume]") {
  auto& S = shared();
  const std::string& ref = S.reference(kOverrides);
  const int64_t total = jsonl(ref + "/metrics.jsonl").back()["step"].get<int64_t>();  // 18 updates
  REQUIRE(total >= 10);

  // Five kill points, one per stage of the run (seeded): as soon as the run dir holds folds.csv (before
  // any checkpoint), then once checkpoints/last reaches an update drawn from each quarter of the run;
  // plus 0-20 ms so that some kills land inside a checkpoint save.
  std::mt19937 rng(20240605);
  std::set<int64_t> resumed_at;
  for (int point = 0; point < 5; ++point) {
    const int64_t lo = point == 0 ? 0 : 1 + (point - 1) * (total - 2) / 4,
                  hi = point == 0 ? 0 : point * (total - 2) / 4;
    const int64_t target = std::uniform_int_distribution<int64_t>(lo, std::max(lo, hi))(rng);
    const int delay_us = std::uniform_int_distribution<int>(0, 20000)(rng);
    const std::string run = S.fresh("killed"), log = run + ".log";
    INFO("kill point " << point << ": SIGKILL at update " << target << " + " << delay_us << " us; run " << run);
    int status = 0;
    pid_t pid = spawn(cat(cat({"fit", S.recipe}, kOverrides), {"--run-dir", run, "--quiet"}), log);
    REQUIRE(pid > 0);
    bool killed = signal_when(
        pid, [&] { return target == 0 ? fs::exists(run + "/folds.csv") : last_step(run) >= target; }, SIGKILL, delay_us,
        status);
    INFO("killed process log:\n" << log_text(log));
    REQUIRE(killed);
    CHECK(WIFSIGNALED(status));

    std::vector<std::string> extra;
    if (point == 3) extra = {"data.num_workers=0"};  // the data stream must not depend on the worker count
    if (point == 2) {
      // Kill the resumed process too, three updates after where it resumed.
      const int64_t from = std::max<int64_t>(0, last_step(run));
      int st2 = 0;
      pid_t p2 = spawn(cat(cat({"fit", S.recipe}, kOverrides), {"--run-dir", run, "--resume", run}), log);
      CHECK(signal_when(
          p2, [&] { return last_step(run) >= from + 3; }, SIGKILL, delay_us / 2, st2));
    }
    auto r = S.resume(kOverrides, run, extra);
    INFO("resume output:\n" << r.output);
    REQUIRE(r.exit_code == 0);
    const int64_t u = resumed_update(r.output);
    CHECK(u >= 0);
    resumed_at.insert(u);
    check_same_run(ref, run);
  }
  // The kills landed at different stages of the run (not all before the first checkpoint, say).
  CHECK(resumed_at.size() >= 3);
}

// A kill right after the epoch-end checkpoints/last was written (it already says "epoch 1 done, best =
// epoch 1") but before checkpoints/best was would leave the resumed run without best (epoch 1 is already
// counted), so the checkpoint callback saves best and top-k before last.
TEST_CASE("a kill just after an epoch-end checkpoints/last keeps checkpoints/best and the OOF file",
          "[integration][resume]") {
  auto& S = shared();
  const std::string& ref = S.reference(kOverrides);
  const int64_t epoch1 = jsonl(ref + "/metrics.jsonl").front()["step"].get<int64_t>();
  REQUIRE(jsonl(ref + "/metrics.jsonl").front().value("best", "") == "model");
  // Saving last at update `epoch1` rotates the previous last (update epoch1 - 1) to step-<9 digits>.
  char rotated[32];
  std::snprintf(rotated, sizeof rotated, "step-%09lld", static_cast<long long>(epoch1 - 1));
  const std::string run = S.fresh("epoch_end"), log = run + ".log";
  int status = 0;
  pid_t pid = spawn(cat(cat({"fit", S.recipe}, kOverrides), {"--run-dir", run, "--quiet"}), log);
  REQUIRE(pid > 0);
  REQUIRE(signal_when(
      pid, [&] { return fs::exists(run + "/checkpoints/" + rotated); }, SIGKILL, 0, status));
  const bool best_there = fs::exists(run + "/checkpoints/best");
  INFO("killed with checkpoints/last at update " << last_step(run) << "; checkpoints/best "
                                                 << (best_there ? "present" : "absent"));
  auto r = S.resume(kOverrides, run);
  INFO("resume output:\n" << r.output);
  REQUIRE(r.exit_code == 0);
  check_same_run(ref, run);
  REQUIRE(fs::exists(run + "/checkpoints/best/model.safetensors"));
  check_same_tensors_file(ref + "/checkpoints/best/model.safetensors", run + "/checkpoints/best/model.safetensors");
  CHECK(kg::read_file(run + "/oof_fold.csv") == kg::read_file(ref + "/oof_fold.csv"));
  CHECK(json::parse(kg::read_file(run + "/fold.json"))["oof"]["weights"] == "checkpoints/best");
}

TEST_CASE("SIGTERM saves a checkpoint that resumes exactly, a damaged last is skipped", "[integration][resume]") {
  auto& S = shared();
  const std::string& ref = S.reference(kOverrides);
  const std::string run = S.fresh("term"), log = run + ".log";
  int status = 0;
  pid_t pid = spawn(cat(cat({"fit", S.recipe}, kOverrides), {"--run-dir", run, "--quiet"}), log);
  REQUIRE(pid > 0);
  REQUIRE(signal_when(
      pid, [&] { return last_step(run) >= 8; }, SIGTERM, 0, status));
  INFO("first process log:\n" << log_text(log));
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 143);
  CHECK(json::parse(kg::read_file(run + "/summary.json"))["status"] == "interrupted");
  const int64_t saved = last_step(run);
  CHECK(saved >= 8);
  const std::string copy = S.fresh("term_damaged"), all_bad = S.fresh("term_all_damaged");
  fs::copy(run, copy, fs::copy_options::recursive);
  fs::copy(run, all_bad, fs::copy_options::recursive);

  {
    INFO("a resume whose recipe would change the split, the fold or a mid-epoch position is refused (exit 2)");
    auto r = S.resume(kOverrides, run, {"cv.folds=2", "cv.fold=1"});
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("splits the rows differently from the run's folds.csv") != std::string::npos);
    r = S.resume(kOverrides, run, {"cv.fold=2"});
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("is fold 1's checkpoint but the recipe trains fold 2") != std::string::npos);
    if (json::parse(kg::read_file(run + "/checkpoints/last/state.json")).at("batch").get<int64_t>() != 0) {
      r = S.resume(kOverrides, run, {"train.batch_size=4"});
      INFO(r.output);
      CHECK(r.exit_code == 2);
      CHECK(r.output.find("was saved mid-epoch") != std::string::npos);
    }
  }
  {
    INFO("resume from the SIGTERM checkpoint");
    auto r = S.resume(kOverrides, run);
    INFO("resume output:\n" << r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(resumed_update(r.output) == saved);
    check_same_run(ref, run);
  }
  {
    INFO("a truncated checkpoints/last/model.safetensors: resume skips it for the older step-* one");
    const std::string m = copy + "/checkpoints/last/model.safetensors";
    fs::resize_file(m, fs::file_size(m) / 2);
    auto r = S.resume(kOverrides, copy);
    INFO("resume output:\n" << r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("skipped") != std::string::npos);
    CHECK(r.output.find("checkpoints/last") != std::string::npos);
    CHECK(r.output.find("resumed from " + copy + "/checkpoints/step-") != std::string::npos);
    CHECK(resumed_update(r.output) < saved);
    check_same_run(ref, copy);
  }
  {
    INFO("every checkpoint damaged: an explicit --resume RUN stops (exit 3) instead of training afresh over them");
    for (auto& e : fs::directory_iterator(all_bad + "/checkpoints"))
      if (fs::exists(e.path() / "model.safetensors")) fs::resize_file(e.path() / "model.safetensors", 10);
    auto r = S.resume(kOverrides, all_bad);
    INFO("resume output:\n" << r.output);
    CHECK(r.exit_code == 3);
    CHECK(r.output.find("is damaged") != std::string::npos);
    CHECK(json::parse(kg::read_file(all_bad + "/summary.json"))["status"] == "interrupted");  // untouched
  }
}

TEST_CASE("an adversarial (AWP) fit killed mid-run resumes to the uninterrupted run's exact bytes",
          "[integration][resume]") {
  auto& S = shared();
  const auto awp =
      cat(kOverrides, {"train.adversarial.kind=awp", "train.adversarial.lr=0.05", "train.adversarial.start_epoch=1"});
  const std::string& ref = S.reference(awp);
  const int64_t target = jsonl(ref + "/metrics.jsonl").front()["step"].get<int64_t>() + 2;  // in epoch 2
  const std::string run = S.fresh("awp_killed"), log = run + ".log";
  int status = 0;
  pid_t pid = spawn(cat(cat({"fit", S.recipe}, awp), {"--run-dir", run}), log);
  REQUIRE(pid > 0);
  // Past the first epoch: the attack is on when it dies.
  REQUIRE(signal_when(
      pid, [&] { return last_step(run) >= target; }, SIGKILL, 0, status));
  INFO("killed process log:\n" << log_text(log));
  CHECK(log_text(log).find("adversarial awp:") != std::string::npos);
  auto r = S.resume(awp, run);
  INFO("resume output:\n" << r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(resumed_update(r.output) >= target);
  check_same_run(ref, run);
  // And the attack changes the run: its weights differ from the plain run's.
  CHECK(kg::read_file(ref + "/checkpoints/last/model.safetensors") !=
        kg::read_file(S.reference(kOverrides) + "/checkpoints/last/model.safetensors"));
}

TEST_CASE("a distilled fit (loss.distill) killed mid-run resumes to the uninterrupted run's exact bytes",
          "[integration][resume][distill]") {
  auto& S = shared();
  // A teacher of logits for every training row (the loader packs them into the targets).
  std::string teacher = "id,logit_left,logit_right\n";
  const auto train = kg::data::read_csv(S.ds.root + "/train.csv");
  for (size_t i = 0; i < train.rows.size(); ++i)
    teacher += train.rows[i][0] + "," + std::to_string(0.5 * static_cast<double>(i % 5)) + ",-0.7\n";
  const auto distill = cat(kOverrides, {"loss.distill.teacher=" + S.dir.write("teacher.csv", teacher),
                                        "loss.distill.alpha=0.7", "loss.distill.temperature=3"});
  const std::string& ref = S.reference(distill);
  const int64_t target = jsonl(ref + "/metrics.jsonl").front()["step"].get<int64_t>() + 2;  // in epoch 2
  const std::string run = S.fresh("distill_killed"), log = run + ".log";
  int status = 0;
  pid_t pid = spawn(cat(cat({"fit", S.recipe}, distill), {"--run-dir", run}), log);
  REQUIRE(pid > 0);
  REQUIRE(signal_when(
      pid, [&] { return last_step(run) >= target; }, SIGKILL, 0, status));
  INFO("killed process log:\n" << log_text(log));
  auto r = S.resume(distill, run);
  INFO("resume output:\n" << r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(resumed_update(r.output) >= target);
  check_same_run(ref, run);
  // The teacher changes the run: its weights differ from the plain run's.
  CHECK(kg::read_file(ref + "/checkpoints/last/model.safetensors") !=
        kg::read_file(S.reference(kOverrides) + "/checkpoints/last/model.safetensors"));
}

TEST_CASE("resume auto: a run dir that has no checkpoint starts fresh and says so", "[integration][resume]") {
  auto& S = shared();
  const std::string& ref = S.reference(kOverrides);
  auto auto_fit = [&](const std::string& run) {
    return kg::test::run_kgtrain(cat(cat({"fit", S.recipe}, kOverrides), {"--run-dir", run, "--resume", "auto"}));
  };
  SECTION("the run dir exists (killed before its first checkpoint; checkpoints removed)") {
    const std::string run = S.fresh("auto"), log = run + ".log";
    int status = 0;
    pid_t pid = spawn(cat(cat({"fit", S.recipe}, kOverrides), {"--run-dir", run, "--quiet"}), log);
    REQUIRE(pid > 0);
    REQUIRE(signal_when(
        pid, [&] { return fs::exists(run + "/folds.csv"); }, SIGKILL, 0, status));
    {
      std::error_code ec;
      kg::remove_tree(run + "/checkpoints", ec);
    }
    // Without --resume the killed run's folder is refused, not overwritten.
    auto again = kg::test::run_kgtrain(cat(cat({"fit", S.recipe}, kOverrides), {"--run-dir", run}));
    CHECK(again.exit_code == 2);
    CHECK(again.output.find("already holds a run (recipe.toml, folds.csv)") != std::string::npos);
    auto r = auto_fit(run);
    INFO("output:\n" << r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("no complete checkpoint to resume: starting fresh") != std::string::npos);
    check_same_run(ref, run);
  }
  SECTION("the run dir does not exist yet") {
    const std::string run = S.fresh("auto_new");
    auto r = auto_fit(run);
    INFO("output:\n" << r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("starting fresh") != std::string::npos);
    check_same_run(ref, run);
  }
}

TEST_CASE("EMA and Lookahead runs resume exactly", "[integration][resume]") {
  auto& S = shared();
  for (std::string extra : {"ema.enabled=true", "optim.name=lookahead"}) {
    DYNAMIC_SECTION(extra) {
      auto overrides = cat(kOverrides, {extra});
      const std::string& ref = S.reference(overrides);
      if (extra == "ema.enabled=true") REQUIRE(fs::exists(ref + "/checkpoints/last/ema.safetensors"));
      // Mid-epoch 2, away from Lookahead's k = 6 boundaries.
      const int64_t target = extra == "ema.enabled=true" ? 9 : 8;
      const std::string run = S.fresh("variant"), log = run + ".log";
      int status = 0;
      pid_t pid = spawn(cat(cat({"fit", S.recipe}, overrides), {"--run-dir", run, "--quiet"}), log);
      REQUIRE(pid > 0);
      REQUIRE(signal_when(
          pid, [&] { return last_step(run) >= target; }, SIGKILL, 3000, status));
      auto r = S.resume(overrides, run);
      INFO("resume output:\n" << r.output);
      REQUIRE(r.exit_code == 0);
      CHECK(resumed_update(r.output) >= target);
      check_same_run(ref, run);
    }
  }
}

// Lookahead's sync() (slow += alpha * (fast - slow); fast = slow) is an extra slow-weight update, so
// checkpoints store its synced view and the fast weights instead of syncing: mid-epoch saves
// (train.checkpoint_every_steps, the SIGTERM save) must not change the training itself.
TEST_CASE("Lookahead: mid-epoch checkpoints do not change training", "[integration][resume]") {
  auto& S = shared();
  const std::vector<std::string> plain{"train.epochs=3", "optim.name=lookahead", "train.log_every_s=0.001"};
  const std::string& ref = S.reference(plain);
  SECTION("train.checkpoint_every_steps = 1 trains the same weights as no mid-epoch checkpoints") {
    const std::string& every = S.reference(cat(plain, {"train.checkpoint_every_steps=1"}));
    check_same_tensors_file(ref + "/checkpoints/last/model.safetensors", every + "/checkpoints/last/model.safetensors");
  }
  SECTION("SIGTERM mid-epoch, then resume, gives the uninterrupted weights") {
    // Epoch 2's first progress line (after its first update; one line per update with log_every_s tiny),
    // then SIGTERM: the save lands at an update inside epoch 2, off Lookahead's k = 6 cycle.
    const std::string run = S.fresh("la_term"), log = run + ".log";
    int status = 0;
    pid_t pid = spawn(cat(cat({"fit", S.recipe}, plain), {"--run-dir", run}), log);
    REQUIRE(pid > 0);
    REQUIRE(signal_when(
        pid, [&] { return fs::exists(log) && kg::read_file(log).find("epoch 2/3 step 1/") != std::string::npos; },
        SIGTERM, 0, status));
    INFO("log:\n" << log_text(log));
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 143);
    auto st = json::parse(kg::read_file(run + "/checkpoints/last/state.json"));
    const int64_t saved = st.at("step").get<int64_t>();
    INFO("SIGTERM checkpoint at update " << saved << ", batch " << st.at("batch"));
    REQUIRE(st.at("batch").get<int64_t>() != 0);  // saved inside an epoch
    auto r = S.resume(plain, run);
    INFO("resume output:\n" << r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(resumed_update(r.output) == saved);
    check_same_tensors_file(ref + "/checkpoints/last/model.safetensors", run + "/checkpoints/last/model.safetensors");
  }
}

}  // namespace KG_UNITY_ID
}  // namespace
