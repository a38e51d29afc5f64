// kgtrain's TensorBoard events against a golden file written by TensorBoard's own protos and record
// writer (scripts/golden/gen_tb_events.py): byte-for-byte, and every record's framing and CRCs.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "core/crc32c.h"
#include "core/error.h"
#include "core/fs.h"
#include "report/tb_events.h"
#include "support/tb_reader.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

const double T0 = 1700000000.5;

std::vector<std::string> ours() {
  using namespace kg::report;
  return {
      event_file_version(T0),
      event_scalar("train/loss", 0, 2.25f, T0 + 1),
      event_scalar("valid/accuracy", 300, 0.875f, T0 + 2),
      event_image("samples", 3, "\x89PNG not really", 2, 3, 3, T0 + 3),
      event_session_start(5, T0 + 4),
      event_hparams_start({{"optim.lr", 0.001}}, "", T0, T0 + 5),
      event_hparams_start({{"model", std::string("resnet9")}}, "g", 0, T0 + 6),
      event_hparams_start({{"tta", false}}, "", 0, T0 + 7),
      event_hparams_end(SessionStatus::success, T0 + 8, T0 + 8),
  };
}

}  // namespace

TEST_CASE("TensorBoard events equal TensorBoard's own serialization, record for record", "[unit][report]") {
  const std::string golden = kg::read_file(std::string(KGTRAIN_SOURCE_DIR) + "/tests/golden/tb_events.tfevents");
  const auto want = kg::test::tb_records(golden);
  const auto got = ours();
  REQUIRE(want.size() == got.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("event " << i);
    CHECK(got[i] == want[i]);
  }
  std::string framed;
  for (auto& e : got) framed += kg::report::tfrecord(e);
  CHECK(framed == golden);
}

TEST_CASE("EventWriter makes a new TensorBoard-named file per writer and appends framed records", "[unit][report]") {
  kg::ScratchDir tmp("kg-tb");
  const std::string dir = tmp.path() + "/run/tb";
  std::string first, second;
  {
    kg::report::EventWriter w(dir);
    first = w.path();
    CHECK(std::filesystem::path(first).filename().string().rfind("events.out.tfevents.", 0) == 0);
    w.write(kg::report::event_scalar("a", 1, 0.5f, T0));
    w.flush();
    kg::report::EventWriter w2(dir);
    second = w2.path();
  }
  CHECK(first != second);
  const auto recs = kg::test::tb_records(kg::read_file(first));
  REQUIRE(recs.size() == 2);  // file_version, then the scalar
  CHECK(recs[0].find("brain.Event:2") != std::string::npos);
  CHECK(recs[1] == kg::report::event_scalar("a", 1, 0.5f, T0));
  CHECK(kg::test::tb_records(kg::read_file(second)).size() == 1);
}

TEST_CASE("EventWriter names the file it cannot create", "[unit][report]") {
  kg::ScratchDir tmp("kg-tb");
  kg::write_file_atomic(tmp.path() + "/file", "x");
  CHECK_THROWS_AS(kg::report::EventWriter(tmp.path() + "/file/tb"), kg::DataError);
}

}  // namespace KG_UNITY_ID
}  // namespace
