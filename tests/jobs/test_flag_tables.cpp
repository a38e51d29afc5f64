// Commands whose flags are declared once in a table (config::Fields, as recipe keys are): --help and
// docs/commands.md must follow the table, and a value the table refuses is a usage error (exit 2).
#include <catch2/catch.hpp>

#include <regex>

#include "config/flags.h"
#include "core/fs.h"
#include "jobs/bench.h"
#include "jobs/bench_data.h"
#include "jobs/bench_model.h"
#include "jobs/fit.h"
#include "jobs/import_idx.h"
#include "jobs/interpret.h"
#include "jobs/merge_oof.h"
#include "jobs/pack.h"
#include "jobs/pseudo_label.h"
#include "jobs/show.h"
#include "jobs/tta_predict.h"
#include "session/common_flags.h"
#include "jobs/show_batch.h"
#include "support/fixtures.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

void check_table(const std::string& command, const kg::config::Schema& table) {
  INFO(command);
  auto h = kg::test::run_kgtrain({command, "--help"});
  REQUIRE(h.exit_code == 0);
  const std::string docs = kg::read_file(std::string(KGTRAIN_SOURCE_DIR) + "/docs/commands.md");
  const auto at = docs.find("## `kgtrain " + command + "`");
  REQUIRE(at != std::string::npos);
  const std::string section = docs.substr(at, docs.find("\n## ", at + 1) - at);
  // Its usage lines: those that start with `kgtrain.
  std::string usage;
  for (size_t p = section.find("\n`kgtrain "); p != std::string::npos; p = section.find("\n`kgtrain ", p + 1))
    usage += section.substr(p, section.find('\n', p + 1) - p);
  REQUIRE(!table.empty());
  for (const auto& spec : table) {
    const std::string flag = kg::config::flag_name(spec.key);
    INFO(flag);
    CHECK(h.output.find(flag) != std::string::npos);
    if (!spec.short_flag.empty()) CHECK(h.output.find(spec.short_flag + "," + flag) != std::string::npos);
    CHECK(h.output.find(spec.doc) != std::string::npos);
    const std::string d = kg::config::flag_default_text(spec);
    if (!d.empty()) CHECK(h.output.find("=" + d) != std::string::npos);
    // A usage line names the flag: "[--out FILE]", "[--from-run RUN ...]", "[-m|--multirun]", "--out DIR`".
    CHECK(std::regex_search(usage, std::regex("[\\[| ]" + flag + "[ \\]`]")));
  }
}

TEST_CASE("flag tables: --help and docs/commands.md follow each command's table", "[integration][jobs]") {
  check_table("bench-model", kg::jobs::bench_model_flags().schema());
  CHECK(kg::test::run_kgtrain({"bench-model", "--help"}).output.find("AdamW") == std::string::npos);
  check_table("show-batch", kg::jobs::show_batch_flags().schema());
  check_table("pack", kg::jobs::pack_flags().schema());
  check_table("bench-data", kg::jobs::bench_data_flags().schema());
  check_table("tta-predict", kg::jobs::tta_predict_flags().schema());
  check_table("pseudo-label", kg::jobs::pseudo_label_flags().schema());
  check_table("interpret", kg::jobs::interpret_flags().schema());
  check_table("show", kg::jobs::show_flags().schema());
  check_table("import-idx", kg::jobs::import_idx_flags().schema());
  check_table("bench", kg::jobs::bench_flags().schema());
  check_table("fit", kg::jobs::fit_flags().schema());
  check_table("merge-oof", kg::jobs::merge_oof_flags().schema());
}

TEST_CASE("flag tables: the flags every recipe command shares are one table", "[integration][jobs]") {
  const auto& table = kg::session::common_flags().schema();
  const std::string docs = kg::read_file(std::string(KGTRAIN_SOURCE_DIR) + "/docs/commands.md");
  const auto at = docs.find("## Common options");
  REQUIRE(at != std::string::npos);
  const std::string section = docs.substr(at, docs.find("\n## ", at + 1) - at);
  auto fit = kg::test::run_kgtrain({"fit", "--help"});  // fit takes every one of them
  for (const auto& spec : table) {
    const std::string flag = kg::config::flag_name(spec.key);
    INFO(flag);
    CHECK(section.find("| `" + flag) != std::string::npos);
    CHECK(fit.output.find(flag) != std::string::npos);
    CHECK(fit.output.find(spec.doc) != std::string::npos);
  }
  CHECK(fit.output.find("-q,--quiet") != std::string::npos);
  // Each command takes the ones it uses.
  auto has = [](const std::string& command, const std::string& flag) {
    return kg::test::run_kgtrain({command, "--help"}).output.find(flag + " ") != std::string::npos;
  };
  CHECK(has("lr-find", "--smoke"));
  CHECK(!has("lr-find", "--check-data"));
  CHECK(has("tta-predict", "--smoke"));
  CHECK(!has("pack", "--smoke"));
  CHECK(has("interpret", "--device"));
  CHECK(!has("interpret", "--seed"));
  CHECK(has("show", "--seed"));
  // Checked as a command's own flags are.
  auto seed = kg::test::run_kgtrain({"show", KGTRAIN_SOURCE_DIR "/recipes/fashion_mnist.toml", "--seed", "-1"});
  CHECK(seed.exit_code == 2);
  CHECK(seed.output.find("--seed: expected an integer >= 0") != std::string::npos);
}

TEST_CASE("flag tables: a value outside the table's range is a usage error naming the flag", "[integration][jobs]") {
  // Checked before any data is read: the table's own range, with the message a recipe key gets.
  auto r = kg::test::run_kgtrain({"show-batch", KGTRAIN_SOURCE_DIR "/recipes/fashion_mnist.toml", "--n", "300"});
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("--n") != std::string::npos);
  CHECK(r.output.find("256") != std::string::npos);
  // A list flag's own check, and a choice, the same way.
  const std::string recipe = KGTRAIN_SOURCE_DIR "/recipes/fashion_mnist.toml";
  auto size = kg::test::run_kgtrain({"pack", recipe, "--raw", "--size", "0", "8"});
  CHECK(size.exit_code == 2);
  CHECK(size.output.find("--size: expected") != std::string::npos);
  CHECK(size.output.find(">= 1") != std::string::npos);
  auto split = kg::test::run_kgtrain({"bench-data", recipe, "--split", "vaild"});
  CHECK(split.exit_code == 2);
  CHECK(split.output.find("did you mean") != std::string::npos);
  // A flag's alias is the flag (fit -m is --multirun: a sweep needs a sweep word), and a required flag says so.
  auto sweep = kg::test::run_kgtrain({"fit", "--multirun", recipe, "--jobs", "0"});
  CHECK(sweep.exit_code == 2);
  CHECK(sweep.output.find("--jobs: expected an integer >= 1") != std::string::npos);
  auto merge = kg::test::run_kgtrain({"merge-oof", "some_run"});
  CHECK(merge.exit_code == 2);
  CHECK(merge.output.find("merge-oof needs --out DIR") != std::string::npos);
}

}  // namespace KG_UNITY_ID
}  // namespace
