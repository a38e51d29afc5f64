// Text end to end through the binary, on a tiny DeBERTa-v3-shaped folder made at test time: fit with k-fold and
// OOF, tta-predict from the run (its OOF predictions, sorted by length and padded per batch, equal fit's own), the
// ensemble's test predictions, pseudo-label writing the texts, and a fit that trains on them; and the errors a text
// recipe gets for what only images have.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>

#include "core/fs.h"
#include "data/csv.h"
#include "support/fixtures.h"
#include "support/text_fixtures.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace fs = std::filesystem;

struct TextRun {
  kg::test::TempDir dir;
  std::string data, model, recipe, runs;
  kg::test::RunResult fit;
  TextRun() {
    data = kg::test::make_tiny_text_task(dir, 64, 16);
    model = kg::test::make_tiny_deberta(dir);
    recipe = dir.write("text.toml", kg::test::tiny_text_recipe(data, model));
    runs = dir / "runs";
    fit = kg::test::run_kgtrain({"fit", recipe, "cv.fold=all", "paths.runs=" + runs});
  }
  kg::test::RunResult kgtrain(std::vector<std::string> args) {
    args.insert(args.begin() + 1, recipe);
    args.push_back("paths.runs=" + runs);
    return kg::test::run_kgtrain(args);
  }
};

TextRun& text_run() {
  static auto s = std::make_unique<TextRun>();
  INFO(s->fit.output);
  REQUIRE(s->fit.exit_code == 0);
  return *s;
}

// id -> the probability columns of an OOF or probs CSV (by header name).
std::map<std::string, std::vector<double>> probs_by_id(const std::string& path) {
  auto t = kg::data::read_csv(path);
  std::vector<int> cols;
  for (size_t c = 0; c < t.header.size(); ++c)
    if (t.header[c].rfind("prob_", 0) == 0 || t.header[c] == "dog" || t.header[c] == "fox")
      cols.push_back(static_cast<int>(c));
  REQUIRE(cols.size() == 2);
  std::map<std::string, std::vector<double>> out;
  for (auto& r : t.rows)
    for (int c : cols) out[r[0]].push_back(std::stod(r[static_cast<size_t>(c)]));
  return out;
}

TEST_CASE("text: fit trains a DeBERTa folder with k-fold OOF and says what the tokenizer did",
          "[integration][jobs][text]") {
  auto& S = text_run();
  const std::string& out = S.fit.output;
  CHECK(out.find("input text text, up to 48 tokens") != std::string::npos);
  CHECK(out.find("of rows truncated at 48") != std::string::npos);  // the longest texts are cut
  CHECK(out.find("deberta-v2") != std::string::npos);
  const std::string latest = fs::read_symlink(S.runs + "/latest").string();
  const std::string run = fs::path(latest).is_absolute() ? latest : S.runs + "/" + latest;
  CHECK(kg::data::read_csv(run + "/oof.csv").rows.size() == 64);
  CHECK(fs::exists(run + "/cv.json"));
  // The tokens were cached: a second fit reads them.
  auto again = S.kgtrain({"fit", "cv.fold=0", "train.epochs=1", "--run-dir", S.dir / "again"});
  INFO(again.output);
  REQUIRE(again.exit_code == 0);
  CHECK(again.output.find("tokens from the cache") != std::string::npos);
}

TEST_CASE("text: tta-predict's OOF predictions, sorted by length and padded per batch, are fit's own",
          "[integration][jobs][text]") {
  auto& S = text_run();
  const std::string O = S.dir / "oof_pred";
  auto r = S.kgtrain({"tta-predict", "--from-run", "latest", "--oof", "--run-dir", O, "train.eval_batch_size=5"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const std::string latest = fs::read_symlink(S.runs + "/latest").string();
  const std::string run = fs::path(latest).is_absolute() ? latest : S.runs + "/" + latest;
  auto mine = probs_by_id(O + "/oof_tta.csv"), fit = probs_by_id(run + "/oof.csv");
  REQUIRE(mine.size() == 64);
  for (auto& [id, p] : mine) {
    INFO(id);
    for (size_t k = 0; k < p.size(); ++k) CHECK(p[k] == Approx(fit.at(id)[k]).margin(1e-5));
  }
}

TEST_CASE("text: tta-predict on the test table, pseudo-label with the texts, a fit on them",
          "[integration][jobs][text]") {
  auto& S = text_run();
  auto p = S.kgtrain({"tta-predict", "--from-run", "latest", "--out", S.dir / "sub.csv", "--probs", S.dir / "probs.csv",
                      "--run-dir", S.dir / "P"});
  INFO(p.output);
  REQUIRE(p.exit_code == 0);
  auto sub = kg::data::read_csv(S.dir / "sub.csv");
  auto test = kg::data::read_csv(S.data + "/test.csv");
  REQUIRE(sub.rows.size() == 16);
  for (size_t i = 0; i < 16; ++i) CHECK(sub.rows[i][0] == test.rows[i][0]);  // in the test table's order

  const std::string out = S.dir / "pseudo";
  auto ps = S.kgtrain({"pseudo-label", "--from-run", "latest", "pseudo.threshold=0", "--out", out});
  INFO(ps.output);
  REQUIRE(ps.exit_code == 0);
  auto pseudo = kg::data::read_csv(out + "/pseudo.csv");
  REQUIRE(pseudo.column("text") >= 0);
  REQUIRE(pseudo.rows.size() == 16);
  std::map<std::string, std::string> text_of;
  for (auto& r : test.rows) text_of[r[0]] = r[1];
  for (auto& r : pseudo.rows) CHECK(r[static_cast<size_t>(pseudo.column("text"))] == text_of.at(r[0]));
  auto f = S.kgtrain({"fit", out + "/pseudo.toml", "cv.fold=0", "train.epochs=1", "--run-dir", S.dir / "F"});
  INFO(f.output);
  REQUIRE(f.exit_code == 0);
  CHECK(kg::data::read_csv(S.dir / "F/folds.csv").rows.size() == 64 + 16);
}

TEST_CASE("text: interpret lists the top losses with their texts; --cam is refused", "[integration][jobs][text]") {
  auto& S = text_run();
  const std::string latest = fs::read_symlink(S.runs + "/latest").string();
  const std::string run = fs::path(latest).is_absolute() ? latest : S.runs + "/" + latest;
  auto r = kg::test::run_kgtrain({"interpret", run, "--top", "5", "--out", S.dir / "interp", "--quiet"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto top = kg::data::read_csv(S.dir / "interp/top_losses.csv");
  REQUIRE(top.rows.size() == 5);
  REQUIRE(top.column("text") >= 0);
  std::map<std::string, std::string> text_of;
  for (auto& row : kg::data::read_csv(S.data + "/train.csv").rows) text_of[row[0]] = row[1];
  for (auto& row : top.rows) CHECK(row[static_cast<size_t>(top.column("text"))] == text_of.at(row[0]));
  CHECK_FALSE(fs::exists(S.dir / "interp/top_losses.png"));
  auto cam = kg::test::run_kgtrain({"interpret", run, "--cam", "--out", S.dir / "interp2", "--quiet"});
  CHECK(cam.exit_code == 2);
  CHECK(cam.output.find("--cam") != std::string::npos);
}

TEST_CASE("text: image-only options and commands are refused with the key (exit 2)", "[integration][jobs][text]") {
  kg::test::TempDir dir;
  const std::string data = kg::test::make_tiny_text_task(dir, 16, 4);
  const std::string model = kg::test::make_tiny_deberta(dir);
  const std::string recipe = dir.write("text.toml", kg::test::tiny_text_recipe(data, model));
  auto expect = [&](std::vector<std::string> args, const std::string& words) {
    args.insert(args.begin() + 1, recipe);
    auto r = kg::test::run_kgtrain(args);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find(words) != std::string::npos);
  };
  expect({"fit", "mixup.mixup_alpha=0.4", "--dry-run"}, "mixup");
  expect({"fit", "data.augment=[{name=\"hflip\"}]", "--dry-run"}, "data.augment");
  expect({"fit", "model.name=bert", "--dry-run"}, "deberta-v2");
  expect({"fit", "model.pretrained=", "--dry-run"}, "model.pretrained");
  expect({"show-batch", "--views"}, "text task");
}

TEST_CASE("text: FGM perturbs the word embeddings, AWP the weights; both train", "[integration][jobs][text]") {
  kg::test::TempDir dir;
  const std::string data = kg::test::make_tiny_text_task(dir, 16, 4);
  const std::string model = kg::test::make_tiny_deberta(dir);
  const std::string recipe = dir.write("text.toml", kg::test::tiny_text_recipe(data, model));
  const std::string runs = "paths.runs=" + (dir / "runs"), batch = "train.batch_size=4";  // 2 updates of 8 rows
  auto fgm = kg::test::run_kgtrain({"fit", recipe, "--smoke", runs, batch, "train.adversarial.kind=fgm"});
  INFO(fgm.output);
  CHECK(fgm.exit_code == 0);
  CHECK(fgm.output.find("adversarial fgm: 1 tensors perturbed, eps 1,") != std::string::npos);
  auto awp = kg::test::run_kgtrain({"fit", recipe, "--smoke", runs, batch, "train.adversarial.kind=awp"});
  INFO(awp.output);
  CHECK(awp.exit_code == 0);
  CHECK(awp.output.find("adversarial awp:") != std::string::npos);
  CHECK(awp.output.find("eps 0.2, lr 1,") != std::string::npos);
  auto none = kg::test::run_kgtrain(
      {"fit", recipe, "--smoke", runs, batch, "train.adversarial.kind=fgm", "train.adversarial.emb_name=no_such"});
  INFO(none.output);
  CHECK(none.exit_code == 2);
  CHECK(none.output.find("train.adversarial.emb_name = \"no_such\"") != std::string::npos);
  // The head and init tricks from the recipe, in TOML's inline-table form too.
  const std::string tricks =
      dir.write("tricks.toml", "[model]\nreinit_layers = 1\nmulti_sample_dropout = { samples = 4, p = 0.3 }\n");
  auto head = kg::test::run_kgtrain({"fit", recipe, tricks, "--smoke", runs, batch});
  INFO(head.output);
  CHECK(head.exit_code == 0);
  CHECK(head.output.find("re-initialised (model.reinit_layers) (1): layer.1") != std::string::npos);
  auto shown = kg::test::run_kgtrain({"show", recipe, tricks, runs});
  CHECK(shown.output.find("samples = 4") != std::string::npos);
}

TEST_CASE("text: a student distils from a teacher run's OOF; alpha = 0 trains exactly the plain student",
          "[integration][jobs][text][distill]") {
  auto& S = text_run();
  const std::string teacher = S.dir / "distill_teacher";
  auto t = S.kgtrain({"fit", "cv.fold=all", "train.epochs=1", "--run-dir", teacher});
  INFO(t.output);
  REQUIRE(t.exit_code == 0);
  auto student = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> args{"fit", "cv.fold=0", "train.epochs=1", "--run-dir", S.dir / name};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = S.kgtrain(args);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    return std::make_pair(r.output, kg::read_file(S.dir / name + "/checkpoints/last/model.safetensors"));
  };
  const auto plain = student("distill_plain", {});
  const auto off = student("distill_a0", {"loss.distill.teacher=" + teacher, "loss.distill.alpha=0"});
  const auto on = student("distill_a07", {"loss.distill.teacher=" + teacher, "loss.distill.alpha=0.7"});
  CHECK(on.first.find("teacher " + teacher + ": logits for 64 rows, 2 outputs") != std::string::npos);
  CHECK(off.second == plain.second);
  CHECK(on.second != plain.second);
}

TEST_CASE("text: show-batch prints a training batch's rows with their text, label and tokens",
          "[integration][jobs][text]") {
  kg::test::TempDir dir;
  const std::string data = kg::test::make_tiny_text_task(dir, 16, 4);
  const std::string model = kg::test::make_tiny_deberta(dir);
  const std::string recipe = dir.write("text.toml", kg::test::tiny_text_recipe(data, model));
  auto r = kg::test::run_kgtrain({"show-batch", recipe, "--n", "3", "paths.runs=" + (dir / "runs")});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("training batch, epoch 1") != std::string::npos);
  std::map<std::string, std::string> text_of;
  for (auto& row : kg::data::read_csv(data + "/train.csv").rows) text_of[row[0]] = row[1];
  // Each row: "<where>: id <id>, label <class>, <n> tokens", its text, then its n tokens from [CLS] to [SEP].
  int rows = 0;
  for (size_t at = r.output.find(": id "); at != std::string::npos; at = r.output.find(": id ", at + 1)) {
    const size_t id_end = r.output.find(',', at);
    const std::string id = r.output.substr(at + 5, id_end - at - 5);
    const size_t count_end = r.output.find(" tokens\n", id_end);
    const size_t count_at = r.output.rfind(", ", count_end) + 2;
    const int count = std::stoi(r.output.substr(count_at, count_end - count_at));
    const size_t text_at = r.output.find("  text  ", count_end) + 8;
    std::string shown = r.output.substr(text_at, r.output.find('\n', text_at) - text_at);
    const bool cut = shown.size() > 4 && shown.substr(shown.size() - 4) == " ...";  // texts over 200 bytes
    if (cut) shown.resize(shown.size() - 4);
    CHECK(text_of.at(id).rfind(shown, 0) == 0);
    CHECK((cut ? shown.size() == 200 : shown == text_of.at(id)));
    const size_t ids_at = r.output.find("  ids   ", count_end) + 8;
    const std::string ids = r.output.substr(ids_at, r.output.find('\n', ids_at) - ids_at);
    CHECK(ids.rfind("[CLS] ", 0) == 0);
    CHECK(ids.size() >= 6);
    CHECK(ids.substr(ids.size() - 5) == "[SEP]");
    CHECK(std::count(ids.begin(), ids.end(), ' ') + 1 == count);
    ++rows;
  }
  CHECK(rows == 3);
}

TEST_CASE("text: an empty text is a bad row, named; a CSV that is not UTF-8 names its line and byte",
          "[integration][jobs][text]") {
  kg::test::TempDir dir;
  const std::string data = kg::test::make_tiny_text_task(dir, 16, 4);
  const std::string model = kg::test::make_tiny_deberta(dir);
  auto csv = kg::read_file(data + "/train.csv");
  kg::write_file_atomic(data + "/train.csv", csv + "bad1,\"  \",1,dog\nbad2,\"\",2,fox\n");
  const std::string recipe = dir.write("text.toml", kg::test::tiny_text_recipe(data, model));
  auto r = kg::test::run_kgtrain({"fit", recipe, "--dry-run"});
  INFO(r.output);
  CHECK(r.exit_code == 3);
  CHECK(r.output.find("empty text in text") != std::string::npos);
  CHECK(r.output.find("bad1") != std::string::npos);
  auto skip = kg::test::run_kgtrain({"fit", recipe, "--dry-run", "data.on_bad_row=skip"});
  INFO(skip.output);
  CHECK(skip.exit_code == 0);
  CHECK(skip.output.find("2 bad rows skipped") != std::string::npos);
  kg::write_file_atomic(data + "/train.csv", csv + "bad3,\"caf\xe9 latte\",2,fox\n");
  auto latin1 = kg::test::run_kgtrain({"fit", recipe, "--dry-run"});
  INFO(latin1.output);
  CHECK(latin1.exit_code == 3);
  CHECK(latin1.output.find("0xE9 is not valid UTF-8") != std::string::npos);
}

}  // namespace KG_UNITY_ID
}  // namespace
