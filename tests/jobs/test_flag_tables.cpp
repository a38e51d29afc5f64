// Commands whose flags are declared once in a table (config::Fields, as recipe keys are): --help and
// docs/commands.md must follow the table, and a value the table refuses is a usage error (exit 2).
#include <catch2/catch.hpp>

#include <regex>

#include "config/flags.h"
#include "core/fs.h"
#include "jobs/bench.h"
#include "jobs/bench_data.h"
#include "jobs/bench_model.h"
#include "jobs/import_idx.h"
#include "jobs/interpret.h"
#include "jobs/pack.h"
#include "jobs/pseudo_label.h"
#include "jobs/show.h"
#include "jobs/tta_predict.h"
#include "jobs/show_batch.h"
#include "support/fixtures.h"

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
  REQUIRE(!table.empty());
  for (const auto& spec : table) {
    const std::string flag = kg::config::flag_name(spec.key);
    INFO(flag);
    CHECK(h.output.find(flag) != std::string::npos);
    CHECK(h.output.find(spec.doc) != std::string::npos);
    const std::string d = kg::config::flag_default_text(spec);
    if (!d.empty()) CHECK(h.output.find("=" + d) != std::string::npos);
    // The section's usage line names the flag: "[--out FILE]", "[--from-run RUN ...]".
    CHECK(std::regex_search(section, std::regex("\\[" + flag + "[ \\]]")));
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
}

}  // namespace KG_UNITY_ID
}  // namespace
