// UTF-8 validation against the well-formed byte sequences of the Unicode standard (table 3-7) and its
// classic ill-formed cases: overlong forms, surrogates, code points past U+10FFFF, cut sequences.
#include <catch2/catch.hpp>

#include <string>

#include "core/strings.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::invalid_utf8_at;
constexpr size_t kOk = std::string_view::npos;

TEST_CASE("strings: invalid_utf8_at accepts well-formed UTF-8", "[unit]") {
  CHECK(invalid_utf8_at("") == kOk);
  CHECK(invalid_utf8_at("id,label\n") == kOk);
  CHECK(invalid_utf8_at("caf\xC3\xA9") == kOk);   // U+00E9
  CHECK(invalid_utf8_at("\xE0\xA0\x80") == kOk);  // U+0800, the first 3-byte form
  CHECK(invalid_utf8_at("\xED\x9F\xBF") == kOk);  // U+D7FF, just below the surrogates
  CHECK(invalid_utf8_at("\xEF\xBB\xBF"
                        "a") == kOk);                              // BOM
  CHECK(invalid_utf8_at("\xF0\x90\x80\x80") == kOk);               // U+10000
  CHECK(invalid_utf8_at("\xF4\x8F\xBF\xBF") == kOk);               // U+10FFFF, the last code point
  CHECK(invalid_utf8_at("\xE7\x8C\xAB,\xF0\x9F\x90\x88") == kOk);  // 猫,🐈
}

TEST_CASE("strings: invalid_utf8_at finds the first ill-formed byte", "[unit]") {
  CHECK(invalid_utf8_at("caf\xE9,dog") == 3);  // Latin-1 é
  CHECK(invalid_utf8_at("ab\x80") == 2);       // a continuation byte without a lead
  CHECK(invalid_utf8_at("\xC0\xAF") == 0);     // overlong '/'
  CHECK(invalid_utf8_at("\xC1\xBF") == 0);
  CHECK(invalid_utf8_at("\xE0\x9F\xBF") == 0);      // overlong 3-byte form
  CHECK(invalid_utf8_at("x\xED\xA0\x80") == 1);     // U+D800, a surrogate
  CHECK(invalid_utf8_at("\xF0\x8F\xBF\xBF") == 0);  // overlong 4-byte form
  CHECK(invalid_utf8_at("\xF4\x90\x80\x80") == 0);  // U+110000
  CHECK(invalid_utf8_at("\xF5\x80\x80\x80") == 0);
  CHECK(invalid_utf8_at("\xFF\xFE"
                        "a") == 0);           // a UTF-16 BOM
  CHECK(invalid_utf8_at("ok\xE7\x8C") == 2);  // cut at the end
  CHECK(invalid_utf8_at("\xC3"
                        "a") == 0);  // a lead byte followed by ASCII
  CHECK(invalid_utf8_at("\xF0\x9F\x90"
                        "a") == 0);
}

}  // namespace KG_UNITY_ID
}  // namespace
