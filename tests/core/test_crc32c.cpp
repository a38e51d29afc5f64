// CRC-32C against the standard check values (RFC 3720 appendix B.4) and TFRecord's mask.
#include <catch2/catch.hpp>

#include <string>

#include "core/crc32c.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

TEST_CASE("crc32c matches the Castagnoli check values", "[unit][core]") {
  CHECK(kg::crc32c("") == 0x00000000u);
  CHECK(kg::crc32c("123456789") == 0xE3069283u);
  CHECK(kg::crc32c(std::string(32, '\0')) == 0x8A9136AAu);
  CHECK(kg::crc32c(std::string(32, '\xff')) == 0x62A8AB43u);
  std::string inc;
  for (int i = 0; i < 32; ++i) inc += static_cast<char>(i);
  CHECK(kg::crc32c(inc) == 0x46DD794Eu);
}

TEST_CASE("masked crc32c rotates right by 15 and adds TFRecord's constant", "[unit][core]") {
  const uint32_t c = kg::crc32c("123456789");
  CHECK(kg::masked_crc32c("123456789") == ((c >> 15) | (c << 17)) + 0xa282ead8u);
}

}  // namespace KG_UNITY_ID
}  // namespace
