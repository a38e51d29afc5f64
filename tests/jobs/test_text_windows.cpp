// Text's sliding windows (data.stride, data.window_pool) end to end through the binary, on the tiny DeBERTa-v3-shaped
// folder: a fit trains on windows and writes one OOF row per text, tta-predict's pooled OOF predictions equal fit's,
// the test submission has one row per text; bad keys exit 2 naming them; a windowed fit killed mid-epoch resumes to
// the uninterrupted run's bytes.
#include <catch2/catch.hpp>

#include <csignal>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "data/csv.h"
#include "support/fixtures.h"
#include "support/process.h"
#include "support/text_fixtures.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace fs = std::filesystem;
using nlohmann::json;

// Windows of 24 tokens sharing 8: most of the tiny task's texts (4..60 words) have several.
const std::vector<std::string> kWindows{"data.max_length=24", "data.stride=8"};

std::vector<std::string> cat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

struct WindowTask {
  kg::test::TempDir dir;
  std::string data, model, recipe, runs;
  WindowTask() {
    data = kg::test::make_tiny_text_task(dir, 64, 16);
    model = kg::test::make_tiny_deberta(dir);
    recipe = dir.write("text.toml", kg::test::tiny_text_recipe(data, model));
    runs = dir / "runs";
  }
  kg::test::RunResult kgtrain(std::vector<std::string> args) {
    args.insert(args.begin() + 1, recipe);
    args.push_back("paths.runs=" + runs);
    return kg::test::run_kgtrain(args);
  }
};

WindowTask& task() {
  static auto s = std::make_unique<WindowTask>();
  return *s;
}

std::map<std::string, std::vector<double>> probs_by_id(const std::string& path) {
  auto t = kg::data::read_csv(path);
  std::map<std::string, std::vector<double>> out;
  for (auto& r : t.rows)
    for (size_t c = 0; c < t.header.size(); ++c)
      if (t.header[c].rfind("prob_", 0) == 0 || t.header[c] == "dog" || t.header[c] == "fox")
        out[r[0]].push_back(std::stod(r[c]));
  return out;
}

TEST_CASE("text windows: fit trains on windows, OOF and tta-predict pool them to one row per text",
          "[integration][jobs][text]") {
  auto& S = task();
  const std::string run = S.dir / "fit";
  auto fit = S.kgtrain(cat(cat({"fit"}, kWindows), {"cv.fold=all", "train.epochs=1", "--run-dir", run}));
  INFO(fit.output);
  REQUIRE(fit.exit_code == 0);
  CHECK(fit.output.find("windows of 24 tokens sharing 8 (predictions pooled by mean)") != std::string::npos);
  CHECK(fit.output.find("of rows longer than 24") != std::string::npos);
  CHECK(fit.output.find("windows a row on average") != std::string::npos);
  REQUIRE(kg::data::read_csv(run + "/oof.csv").rows.size() == 64);
  // tta-predict --oof: the same pooled predictions, in other batches (windows of a text across two of them).
  auto r = S.kgtrain(cat(cat({"tta-predict"}, kWindows),
                         {"--from-run", run, "--oof", "--run-dir", S.dir / "oof_pred", "train.eval_batch_size=5"}));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto mine = probs_by_id(S.dir / "oof_pred/oof_tta.csv"), fit_oof = probs_by_id(run + "/oof.csv");
  REQUIRE(mine.size() == 64);
  for (auto& [id, p] : mine) {
    INFO(id);
    for (size_t k = 0; k < p.size(); ++k) CHECK(p[k] == Approx(fit_oof.at(id)[k]).margin(1e-5));
  }
  // The test table: one submission row per text, in its order.
  auto p = S.kgtrain(
      cat(cat({"tta-predict"}, kWindows), {"--from-run", run, "--out", S.dir / "sub.csv", "--run-dir", S.dir / "P"}));
  INFO(p.output);
  REQUIRE(p.exit_code == 0);
  auto sub = kg::data::read_csv(S.dir / "sub.csv");
  auto test = kg::data::read_csv(S.data + "/test.csv");
  REQUIRE(sub.rows.size() == 16);
  for (size_t i = 0; i < 16; ++i) CHECK(sub.rows[i][0] == test.rows[i][0]);
  // max pools differently: other OOF values.
  const std::string max_run = S.dir / "fit_max";
  auto m = S.kgtrain(
      cat(cat({"fit"}, kWindows), {"data.window_pool=max", "cv.fold=all", "train.epochs=1", "--run-dir", max_run}));
  INFO(m.output);
  REQUIRE(m.exit_code == 0);
  CHECK(m.output.find("(predictions pooled by max)") != std::string::npos);
  CHECK(probs_by_id(max_run + "/oof.csv") != fit_oof);
}

TEST_CASE("text windows: a bad data.stride or data.window_pool exits 2 naming the key and why",
          "[integration][jobs][text]") {
  auto& S = task();
  auto expect = [&](const std::vector<std::string>& overrides, const std::string& says) {
    auto r = S.kgtrain(cat(cat({"fit"}, overrides), {"cv.fold=0", "train.epochs=1", "--run-dir", S.dir / "bad"}));
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find(says) != std::string::npos);
    CHECK_FALSE(fs::exists(S.dir / "bad/checkpoints"));
  };
  expect({"data.stride=-1"}, "data.stride");
  expect({"data.max_length=24", "data.stride=22"},
         "data.stride = 22: a window of data.max_length = 24 tokens holds 22 of the text's (2 are the tokenizer's "
         "special tokens)");
  expect({"data.stride=4", "data.window_pool=median"}, "data.window_pool");
  expect({"data.stride=4", "data.text_cols=[\"text\",\"words\"]", "data.feature_cols=[]"},
         "data.stride = 4: sliding windows cut one text");
}

int64_t last_update(const std::string& run) { return kg::test::last_step(run); }

std::vector<json> metric_lines(const std::string& path) {
  std::vector<json> out;
  std::istringstream is(kg::read_file(path));
  for (std::string l; std::getline(is, l);)
    if (!l.empty()) out.push_back(json::parse(l));
  return out;
}

TEST_CASE("text windows: a windowed fit killed mid-epoch resumes to the uninterrupted run's bytes",
          "[integration][jobs][text][resume]") {
  auto& S = task();
  const auto overrides = cat(kWindows, {"cv.fold=0", "train.epochs=2", "train.checkpoint_every_steps=1",
                                        "data.group_by_length=true", "paths.runs=" + S.runs});
  const std::string ref = S.dir / "ref";
  auto r = kg::test::run_kgtrain(cat(cat({"fit", S.recipe}, overrides), {"--run-dir", ref, "--quiet"}));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto ref_lines = metric_lines(ref + "/metrics.jsonl");
  REQUIRE(ref_lines.size() == 2);
  const int64_t per_epoch = ref_lines.front()["step"].get<int64_t>();
  // More updates than the 32 training texts make in batches of 8: the epoch counts windows.
  CHECK(per_epoch > 4);
  const int64_t target = per_epoch + per_epoch / 2;  // mid second epoch
  const std::string run = S.dir / "killed", log = run + ".log";
  int status = 0;
  const pid_t pid = kg::test::spawn(cat(cat({"fit", S.recipe}, overrides), {"--run-dir", run}), log);
  REQUIRE(pid > 0);
  REQUIRE(kg::test::signal_when(
      pid, [&] { return last_update(run) >= target; }, SIGKILL, 0, status));
  const int64_t at = last_update(run);
  INFO("killed at update " << at << " of " << 2 * per_epoch);
  CHECK(at < 2 * per_epoch);
  auto res = kg::test::run_kgtrain(cat(cat({"fit", S.recipe}, overrides), {"--run-dir", run, "--resume", run}));
  INFO(res.output);
  REQUIRE(res.exit_code == 0);
  CHECK(res.output.find("resumed from") != std::string::npos);
  for (auto& e : fs::directory_iterator(ref + "/checkpoints/last"))
    if (e.path().extension() == ".safetensors") {
      INFO(e.path().filename());
      CHECK(kg::read_file(e.path().string()) ==
            kg::read_file(run + "/checkpoints/last/" + e.path().filename().string()));
    }
  const auto got = metric_lines(run + "/metrics.jsonl");
  REQUIRE(got.size() == ref_lines.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i]["step"] == ref_lines[i]["step"]);
    for (auto k : {"train_loss", "valid_loss", "accuracy"})
      CHECK(got[i][k].get<double>() == Approx(ref_lines[i][k].get<double>()).epsilon(1e-12).margin(1e-15));
  }
  if (fs::exists(ref + "/oof.csv")) CHECK(kg::read_file(run + "/oof.csv") == kg::read_file(ref + "/oof.csv"));
}

}  // namespace KG_UNITY_ID
}  // namespace
