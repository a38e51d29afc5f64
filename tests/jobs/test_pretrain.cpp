// kgtrain pretrain end to end through the binary, on the tiny DeBERTa-v3-shaped folder of support/text_fixtures.h:
// the masked-token loss falls over the epochs, RUN/model is a Hugging Face *ForMaskedLM folder that a second
// pretrain continues (its head read back) and that fit fine-tunes; a run killed by SIGKILL resumes to the
// uninterrupted run's bytes; a tokenizer without a mask token and an image recipe are exit 2. The head itself is
// checked against transformers' *ForMaskedLM in scripts/check_text_encoders.py (CI's text parity stage).
#include <catch2/catch.hpp>

#include <csignal>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "model/weights/safetensors.h"
#include "support/fixtures.h"
#include "support/job_helpers.h"
#include "support/process.h"
#include "support/text_fixtures.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<json> metrics_of(const std::string& run) { return kg::test::read_jsonl(run + "/metrics.jsonl"); }

struct PretrainFixture {
  kg::test::TempDir dir;
  std::string data, model, recipe;
  PretrainFixture() {
    data = kg::test::make_tiny_text_task(dir, 64, 32);
    model = kg::test::make_tiny_deberta(dir);
    recipe = dir.write("text.toml", kg::test::tiny_text_recipe(data, model));
  }
  std::vector<std::string> args(const std::string& run, std::vector<std::string> extra = {}) const {
    std::vector<std::string> a{"pretrain",
                               recipe,
                               "paths.runs=" + dir / "runs",
                               "train.epochs=3",
                               "optim.lr=0.01",
                               "pretrain.valid_fraction=0.2",
                               "--run-dir",
                               run};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
};

PretrainFixture& fixture() {
  static auto f = std::make_unique<PretrainFixture>();
  return *f;
}

TEST_CASE("pretrain: the masked-token loss falls and RUN/model is a *ForMaskedLM folder that fit fine-tunes",
          "[integration][jobs][text][pretrain]") {
  auto& F = fixture();
  const std::string run = F.dir / "pretrain";
  auto r = kg::test::run_kgtrain(F.args(run));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("96 texts, 77 train, 19 valid") != std::string::npos);  // train + test texts
  CHECK(r.output.find("whole words masked, 15 %") != std::string::npos);
  CHECK(r.output.find("MLM head new") != std::string::npos);
  const auto m = metrics_of(run);
  REQUIRE(m.size() == 3);
  CHECK(m.back()["train_loss"].get<double>() < m.front()["train_loss"].get<double>() - 0.1);
  CHECK(m.back()["valid_loss"].get<double>() < m.front()["valid_loss"].get<double>());
  CHECK(m.back()["perplexity"].get<double>() == Approx(std::exp(m.back()["valid_loss"].get<double>())));
  CHECK(m.back()["masked_accuracy"].get<double>() >= 0.0);

  const std::string out = run + "/model";
  const auto cfg = json::parse(kg::read_file(out + "/config.json"));
  CHECK(cfg["architectures"] == json::array({"DebertaV2ForMaskedLM"}));
  CHECK(cfg["model_type"] == "deberta-v2");
  for (const char* f : {"spm.model", "added_tokens.json", "special_tokens_map.json", "tokenizer_config.json"})
    CHECK(fs::exists(out + "/" + f));
  const auto w = kg::model::read_safetensors(out + "/model.safetensors");
  CHECK(w.count("deberta.embeddings.word_embeddings.weight"));
  CHECK(w.count("cls.predictions.transform.dense.weight"));
  CHECK(w.count("cls.predictions.bias"));
  CHECK_FALSE(w.count("cls.predictions.decoder.weight"));  // tied to the word embeddings, as transformers saves it
  // The encoder moved away from the folder it started from.
  const auto start = kg::model::read_safetensors(F.model + "/model.safetensors");
  CHECK_FALSE(
      torch::equal(start.at("embeddings.word_embeddings.weight"), w.at("deberta.embeddings.word_embeddings.weight")));

  {  // a second pretrain continues from it, its head read back
    auto again = kg::test::run_kgtrain({"pretrain", F.recipe, "paths.runs=" + F.dir / "runs", "model.pretrained=" + out,
                                        "train.epochs=1", "--run-dir", F.dir / "pretrain_again"});
    INFO(again.output);
    REQUIRE(again.exit_code == 0);
    CHECK(again.output.find("MLM head from the file") != std::string::npos);
  }
  {  // fit fine-tunes it: the encoder loads, the MLM head is left out
    auto fit = kg::test::run_kgtrain({"fit", F.recipe, "paths.runs=" + F.dir / "runs", "model.pretrained=" + out,
                                      "train.epochs=1", "--run-dir", F.dir / "finetune"});
    INFO(fit.output);
    REQUIRE(fit.exit_code == 0);
    CHECK(fit.output.find("model.pretrained " + out) != std::string::npos);
  }
}

TEST_CASE("pretrain killed by SIGKILL mid-run resumes to the uninterrupted run's exact bytes",
          "[integration][jobs][text][pretrain][resume]") {
  auto& F = fixture();
  const std::string ref = F.dir / "pt_ref", run = F.dir / "pt_killed";
  auto r = kg::test::run_kgtrain(F.args(ref, {"train.checkpoint_every_steps=1", "--quiet"}));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const int64_t target = metrics_of(ref).front()["step"].get<int64_t>() + 2;  // inside epoch 2
  int status = 0;
  pid_t pid = kg::test::spawn(F.args(run, {"train.checkpoint_every_steps=1"}), run + ".log");
  REQUIRE(pid > 0);
  REQUIRE(kg::test::signal_when(
      pid, [&] { return kg::test::last_step(run) >= target; }, SIGKILL, 0, status));
  CHECK_FALSE(fs::exists(run + "/model"));
  auto resumed = kg::test::run_kgtrain(F.args(run, {"train.checkpoint_every_steps=1", "--resume"}));
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK(resumed.output.find("resume  from " + run + "/checkpoints/last") != std::string::npos);
  CHECK(kg::read_file(ref + "/model/model.safetensors") == kg::read_file(run + "/model/model.safetensors"));
  CHECK(kg::read_file(ref + "/checkpoints/last/model.safetensors") ==
        kg::read_file(run + "/checkpoints/last/model.safetensors"));
  const auto a = metrics_of(ref), b = metrics_of(run);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(b[i]["valid_loss"].get<double>() == a[i]["valid_loss"].get<double>());
}

TEST_CASE("pretrain: a tokenizer without a mask token, an image recipe, --resume without --run-dir",
          "[integration][jobs][text][pretrain]") {
  auto& F = fixture();
  SECTION("no mask token: exit 2 naming the folder") {
    const std::string folder = F.dir / "no_mask";
    fs::create_directories(folder);
    for (const auto& e : fs::directory_iterator(F.model))
      if (e.path().filename() == "config.json" || e.path().filename() == "model.safetensors")
        fs::copy_file(e.path(), fs::path(folder) / e.path().filename(), fs::copy_options::overwrite_existing);
    // A byte-level BPE tokenizer without its <mask>.
    auto j = json::parse(kg::read_file(std::string(KGTRAIN_SOURCE_DIR) + "/tests/text/fixtures/bpe_roberta.json"));
    auto& added = j["added_tokens"];
    for (size_t i = 0; i < added.size(); ++i)
      if (added[i]["content"] == "<mask>") added.erase(i);
    j["model"]["vocab"].erase("<mask>");
    kg::write_file_atomic(folder + "/tokenizer.json", j.dump());
    auto r = kg::test::run_kgtrain(F.args(F.dir / "pt_no_mask", {"model.pretrained=" + folder}));
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("has no mask token ([MASK] or <mask>)") != std::string::npos);
    CHECK(r.output.find(folder) != std::string::npos);
  }
  SECTION("an image recipe: exit 2 naming data.text_cols") {
    auto ds = kg::test::make_tiny_dataset(F.dir, 16, 4);
    const std::string img = F.dir.write("img.toml", kg::test::tiny_recipe(ds.root));
    auto r = kg::test::run_kgtrain({"pretrain", img, "paths.runs=" + F.dir / "runs"});
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("set data.text_cols and model.pretrained") != std::string::npos);
  }
  SECTION("--resume without --run-dir") {
    auto r = kg::test::run_kgtrain({"pretrain", F.recipe, "paths.runs=" + F.dir / "runs", "--resume"});
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("--resume continues the run of --run-dir") != std::string::npos);
  }
}

}  // namespace KG_UNITY_ID
}  // namespace
