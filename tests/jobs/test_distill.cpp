// loss.distill end to end on the tiny image dataset: a student distils from a teacher run fitted with cv.fold = "all"
// (alpha = 0 trains exactly the plain student, alpha > 0 another one), and the teacher's problems are exit 3 naming
// the first difference (a missing id, an extra id, a class out of place, no oof.csv) while a misuse is exit 2.
#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <string>

#include "core/fs.h"
#include "data/csv.h"
#include "support/fixtures.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace fs = std::filesystem;

struct DistillRuns {
  kg::test::TempDir dir;
  kg::test::TinyDataset ds;
  std::string recipe, teacher;
  kg::test::RunResult teacher_fit;
  DistillRuns() {
    ds = kg::test::make_tiny_dataset(dir, 64, 8);
    recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
    teacher = dir / "teacher";
    teacher_fit = fit({"cv.fold=all", "train.epochs=1", "--run-dir", teacher});
  }
  kg::test::RunResult fit(std::vector<std::string> args) const {
    args.insert(args.begin(), {"fit", recipe});
    args.push_back("--quiet");
    return kg::test::run_kgtrain(args);
  }
  // The training ids with a teacher line each: "id,prob_left,prob_right" rows from `line(id, i)`.
  std::string teacher_csv(const std::string& name, const std::string& header,
                          const std::function<std::string(const std::string&, size_t)>& line) const {
    std::string text = header + "\n";
    const auto t = kg::data::read_csv(ds.root + "/train.csv");
    for (size_t i = 0; i < t.rows.size(); ++i) text += line(t.rows[i][0], i);
    return dir.write(name, text);
  }
};

DistillRuns& runs() {
  static auto s = std::make_unique<DistillRuns>();
  INFO(s->teacher_fit.output);
  REQUIRE(s->teacher_fit.exit_code == 0);
  return *s;
}

std::string model_bytes(const std::string& run) { return kg::read_file(run + "/checkpoints/last/model.safetensors"); }

TEST_CASE("images: a student distils from a teacher run; alpha = 0 trains exactly the plain student",
          "[integration][jobs][distill]") {
  auto& S = runs();
  REQUIRE(fs::exists(S.teacher + "/oof.csv"));
  const std::string plain = S.dir / "plain", off = S.dir / "alpha0", on = S.dir / "alpha05";
  auto p = S.fit({"train.epochs=2", "--run-dir", plain});
  auto a0 = S.fit({"train.epochs=2", "loss.distill.teacher=" + S.teacher, "loss.distill.alpha=0", "--run-dir", off});
  auto a5 = kg::test::run_kgtrain({"fit", S.recipe, "train.epochs=2", "loss.distill.teacher=" + S.teacher,
                                   "loss.distill.alpha=0.5", "loss.distill.temperature=2", "--run-dir", on});
  INFO(p.output << a0.output << a5.output);
  REQUIRE(p.exit_code == 0);
  REQUIRE(a0.exit_code == 0);
  REQUIRE(a5.exit_code == 0);
  CHECK(a5.output.find("teacher " + S.teacher + ": logits for 64 rows, 2 outputs") != std::string::npos);
  CHECK(model_bytes(off) == model_bytes(plain));  // the teacher rides in the targets without touching the hard loss
  CHECK(model_bytes(on) != model_bytes(plain));   // and with alpha > 0 it changes the training
}

TEST_CASE("images: a teacher CSV of logits or probabilities for every training row trains",
          "[integration][jobs][distill]") {
  auto& S = runs();
  const auto logits = S.teacher_csv("logits.csv", "id,logit_left,logit_right", [](const std::string& id, size_t i) {
    return id + "," + std::to_string(i % 3) + ",-1.5\n";
  });
  auto r = S.fit({"train.epochs=1", "loss.distill.teacher=" + logits, "--run-dir", S.dir / "from_logits"});
  INFO(r.output);
  CHECK(r.exit_code == 0);
}

TEST_CASE("images: a single-fold student needs no teacher prediction for its validation rows",
          "[integration][jobs][distill]") {
  auto& S = runs();
  // The teacher's OOF less fold 1's rows (the student's validation fold): a teacher that never saw them.
  const auto split = kg::data::read_csv(S.teacher + "/folds.csv");
  const auto oof = kg::data::read_csv(S.teacher + "/oof.csv");
  std::set<std::string> held_out;
  for (auto& r : split.rows)
    if (r[static_cast<size_t>(split.column("fold"))] == "1")
      held_out.insert(r[static_cast<size_t>(split.column("id"))]);
  REQUIRE(!held_out.empty());
  std::string text = kg::data::csv_line(oof.header);
  for (auto& r : oof.rows)
    if (!held_out.count(r[0])) text += kg::data::csv_line(r);
  const std::string teacher = S.dir.write("no_fold1.csv", text);
  auto r = S.fit({"train.epochs=1", "cv.fold=1", "loss.distill.teacher=" + teacher, "--run-dir", S.dir / "no_fold1"});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  // Fold 0's student trains on fold 1's rows: it needs them.
  auto f0 = S.fit({"train.epochs=1", "cv.fold=0", "loss.distill.teacher=" + teacher, "--run-dir", S.dir / "f0"});
  CHECK(f0.exit_code == 3);
  CHECK(f0.output.find("a row the student trains on") != std::string::npos);
}

TEST_CASE("images: a teacher whose ids or classes differ from the student's is exit 3 naming the first difference",
          "[integration][jobs][distill]") {
  auto& S = runs();
  int n = 0;
  auto fails = [&](const std::string& teacher, const std::string& needle, int code = 3) {
    // cv.fold = "all": every row is trained on by some fold, so every row needs a teacher prediction.
    auto r = S.fit({"train.epochs=1", "cv.fold=all", "loss.distill.teacher=" + teacher, "--run-dir",
                    S.dir / ("bad" + std::to_string(n++))});
    INFO(r.output);
    CHECK(r.exit_code == code);
    CHECK(r.output.find(needle) != std::string::npos);
    return r.output;
  };
  const auto good = [](const std::string& id, size_t) { return id + ",0.75,0.25\n"; };
  std::string first_id;
  const auto missing = S.teacher_csv("missing.csv", "id,prob_left,prob_right", [&](const std::string& id, size_t i) {
    if (i == 5) first_id = id;
    return i == 5 ? std::string() : id + ",0.75,0.25\n";
  });
  fails(missing, "has no prediction for id " + first_id + " (" + S.ds.root +
                     "/train.csv row 6 (line 7)), a row the student trains on");
  const auto extra = S.teacher_csv("extra.csv", "id,prob_left,prob_right", good);
  kg::write_file_atomic(extra, kg::read_file(extra) + "not_a_training_id,0.5,0.5\n");
  fails(extra, "id not_a_training_id is not a row of the student's training table");
  const auto wrong_class = S.teacher_csv("wrong_class.csv", "id,prob_right,prob_left", good);
  fails(wrong_class, "the teacher's output 1 is class \"right\", the student's is \"left\"");
  // The teacher's OOF with its class columns swapped: the first difference is output 1.
  const std::string swapped =
      S.dir.write("swapped_oof.csv", "id,fold,target,prediction,right,left\n" + std::string("x,0,left,left,0.1,0.9\n"));
  fails(swapped, "the teacher's output 1 is class \"right\"");
  // A teacher fitted on one fold has no out-of-fold prediction for the other rows.
  const std::string one_fold = S.dir / "one_fold";
  REQUIRE(S.fit({"train.epochs=1", "--run-dir", one_fold}).exit_code == 0);
  fails(one_fold, "cv.fold = \"all\"");
  // Misuse: mixup would mix the images but not the teacher's predictions (exit 2, before any data is read).
  auto mixed = S.fit(
      {"train.epochs=1", "mixup.mixup_alpha=0.4", "loss.distill.teacher=" + S.teacher, "--run-dir", S.dir / "mixed"});
  CHECK(mixed.exit_code == 2);
  CHECK(mixed.output.find("mixup") != std::string::npos);
}

}  // namespace KG_UNITY_ID
}  // namespace
