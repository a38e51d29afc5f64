// XXH64 against values from libxxhash 0.8.1 (XXH64, seed 0), one-shot and streamed in pieces.
#include <catch2/catch.hpp>

#include <string>

#include "core/xxh64.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {
std::string three_runs_of_every_byte() {
  std::string s;
  for (int r = 0; r < 3; ++r)
    for (int i = 0; i < 256; ++i) s += static_cast<char>(i);
  return s + "xyz";
}
}  // namespace

TEST_CASE("xxh64 matches the reference implementation", "[unit][core]") {
  CHECK(kg::xxh64("") == 0xef46db3751d8e999ULL);
  CHECK(kg::xxh64("a") == 0xd24ec4f1a98c6e5bULL);
  CHECK(kg::xxh64("abc") == 0x44bc2cf5ad770999ULL);
  CHECK(kg::xxh64("0123456789abcdefghijklmnopqrstuvwxyz-kgpack") == 0x24f106646e3debbaULL);
  CHECK(kg::xxh64(three_runs_of_every_byte()) == 0xe921a1b45bd779f8ULL);
}

TEST_CASE("xxh64 streamed in pieces of any size equals the one-shot hash", "[unit][core]") {
  const std::string s = three_runs_of_every_byte();
  for (size_t piece : {1, 3, 7, 31, 32, 33, 100, 1000}) {
    INFO("pieces of " << piece);
    kg::Xxh64 h;
    for (size_t at = 0; at < s.size(); at += piece) h.update(std::string_view(s).substr(at, piece));
    CHECK(h.digest() == 0xe921a1b45bd779f8ULL);
  }
  kg::Xxh64 h;
  h.update("ab");
  CHECK(h.digest() == kg::xxh64("ab"));  // digest() leaves the state as it was
  h.update("c");
  CHECK(h.digest() == 0x44bc2cf5ad770999ULL);
}

}  // namespace KG_UNITY_ID
}  // namespace
