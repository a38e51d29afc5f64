// Arrow IPC reading (lib/data/arrow_ipc.cpp): the streams, files and save_to_disk folders pyarrow and datasets
// wrote (tests/data/fixtures/tables, scripts/gen_table_fixtures.py) against expected.json, and damaged ones.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "data/table_codecs.h"
#include "data/table_read.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::data::CsvTable;
using nlohmann::json;

const std::string kTables = KGTRAIN_SOURCE_DIR "/tests/data/fixtures/tables/";

void check_fixture(const std::string& name) {
  static const json all = json::parse(kg::read_file(kTables + "expected.json"));
  INFO(name);
  const json& e = all.at(name);
  const CsvTable t = kg::data::read_table(kTables + name);
  CHECK(t.header == e["header"].get<std::vector<std::string>>());
  std::vector<std::string> unusable;
  for (const auto& [c, why] : t.unusable) unusable.push_back(t.header[static_cast<size_t>(c)]);
  std::sort(unusable.begin(), unusable.end());
  CHECK(unusable == e["unusable"].get<std::vector<std::string>>());
  REQUIRE(t.rows.size() == e["rows"].size());
  for (size_t r = 0; r < t.rows.size(); ++r)
    for (size_t c = 0; c < t.header.size(); ++c) {
      const json& want = e["rows"][r][c];
      const std::string& got = t.rows[r][c];
      INFO(t.where(r + 1) << " column " << t.header[c] << ": " << got << " vs " << want.dump());
      if (want.is_null()) {
        CHECK(got.empty());
      } else if (want.is_number()) {
        const double v = std::strtod(got.c_str(), nullptr);
        if (t.header[c] == "f32")
          CHECK(static_cast<float>(v) == static_cast<float>(want.get<double>()));
        else
          CHECK(v == want.get<double>());
      } else {
        CHECK(got == want.get<std::string>());
      }
    }
}

std::string error_of_arrow(const std::string& bytes) {
  try {
    CsvTable t;
    t.path = "train.arrow";
    kg::data::TableLimits limits;
    limits.max_cells = 1 << 16;
    limits.max_block_bytes = 1 << 20;
    kg::data::parse_arrow_ipc(bytes, "train.arrow", t, limits);
  } catch (const kg::DataError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST_CASE("arrow: streams and files with every type, dictionary and null columns, large strings", "[unit][data]") {
  check_fixture("stream.arrow");
  check_fixture("file_format.arrow");
  if (kg::data::have_zstd()) check_fixture("zstd.arrow");
}

TEST_CASE("arrow: a datasets save_to_disk folder in two shards, and one with its images inside", "[unit][data]") {
  check_fixture("hf_dataset");
  const CsvTable t = kg::data::read_table(kTables + "hf_dataset");
  CHECK(t.where(5) == kTables + "hf_dataset row 5");
  check_fixture("hf_images");
  const CsvTable img = kg::data::read_table(kTables + "hf_images");
  CHECK_THROWS_WITH(img.require_column("image", "data.path_col"),
                    Catch::Contains("holds image bytes inside the table"));
}

TEST_CASE("arrow: LZ4 bodies, wrong formats and damaged streams are DataErrors", "[unit][data]") {
  CHECK(error_of_arrow(kg::read_file(kTables + "lz4.arrow")).find("LZ4_FRAME") != std::string::npos);
  CHECK(error_of_arrow("PAR1xxxxxxxxxxxx").find("not an Arrow IPC stream") != std::string::npos);
  CHECK(error_of_arrow("").find("not an Arrow IPC stream") != std::string::npos);
  const std::string good = kg::read_file(kTables + "stream.arrow");
  CHECK(error_of_arrow(good.substr(0, 100)).find("longer than the file") != std::string::npos);
  CHECK(error_of_arrow(good.substr(0, good.size() / 2)).find("train.arrow") == 0);
  // A metadata length of 4 GB.
  std::string huge = good;
  huge.replace(4, 4, std::string("\xff\xff\xff\x7f", 4));
  CHECK(error_of_arrow(huge).find("longer than the file") != std::string::npos);
}

TEST_CASE("arrow: every byte of a stream flipped is read or refused, never a crash", "[unit][data]") {
  const std::string good = kg::read_file(kTables + "hf_dataset/data-00000-of-00002.arrow");
  int refused = 0;
  for (size_t i = 0; i < good.size(); ++i) {
    std::string b = good;
    b[i] = static_cast<char>(b[i] ^ 0xa5);
    if (error_of_arrow(b) != "(no error)") ++refused;
  }
  CHECK(refused > 0);
}

}  // namespace KG_UNITY_ID
}  // namespace
