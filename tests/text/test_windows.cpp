// Tokenizer::encode_windows (lib/text/windows.cpp) against Hugging Face's fast tokenizers with
// return_overflowing_tokens=True and a stride: tests/text/fixtures/windows.json, written by
// scripts/gen_window_fixture.py (tokenizers 0.23.3, transformers 5.25.0), every window id for id; and the
// invariants every windowing keeps, on texts of every length.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "support/errors.h"
#include "text/tokenizer.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

const std::string kFixtures = KGTRAIN_SOURCE_DIR "/tests/text/fixtures/";

std::vector<std::vector<int64_t>> window_ids(const std::vector<kg::text::Encoding>& w) {
  std::vector<std::vector<int64_t>> out;
  for (const auto& e : w) out.push_back(e.ids);
  return out;
}

TEST_CASE("sliding windows are the fast tokenizer's overflowing encodings with a stride", "[unit][text]") {
  const auto j = nlohmann::json::parse(kg::read_file(kFixtures + "windows.json"));
  REQUIRE(j["cases"].size() >= 9);
  for (const auto& c : j["cases"]) {
    const std::string fixture = c["fixture"];
    INFO(fixture << " max_length " << c["max_length"] << " stride " << c["stride"] << " " << c["side"]);
    const auto tok = kg::text::Tokenizer::from_file(kFixtures + fixture);
    const auto side = c["side"] == "left" ? kg::text::TruncationOptions::kLeft : kg::text::TruncationOptions::kRight;
    const auto w = tok.encode_windows(c["text"].get<std::string>(), c["max_length"], c["stride"], side);
    CHECK(window_ids(w) == c["windows"].get<std::vector<std::vector<int64_t>>>());
  }
}

TEST_CASE("windows hold at most max_length tokens, share exactly the stride, and rebuild the whole text",
          "[unit][text]") {
  const auto tok = kg::text::Tokenizer::from_file(kFixtures + "bpe_roberta.json");
  const size_t specials = tok.special_tokens();
  REQUIRE(specials == 2);
  std::string text;
  for (int words = 0; words < 40; ++words) {
    text += (words % 3 ? " fox" : " the lazy dog");
    const std::vector<int64_t> all = tok.tokenize(text);
    for (size_t max_length : {4, 7, 16}) {
      for (size_t stride = 0; stride + specials < max_length; ++stride) {
        for (auto side : {kg::text::TruncationOptions::kRight, kg::text::TruncationOptions::kLeft}) {
          INFO(words << " words, max_length " << max_length << ", stride " << stride << ", side " << side);
          const auto w = tok.encode_windows(text, max_length, stride, side);
          REQUIRE(!w.empty());
          // Inner tokens of each window, in text order (left windows come from the end).
          std::vector<std::vector<int64_t>> inner;
          for (const auto& e : w) {
            CHECK(e.ids.size() <= max_length);
            CHECK(e.ids.front() == 0);  // <s> ... </s>
            CHECK(e.ids.back() == 2);
            inner.emplace_back(e.ids.begin() + 1, e.ids.end() - 1);
          }
          if (side == kg::text::TruncationOptions::kLeft) std::reverse(inner.begin(), inner.end());
          std::vector<int64_t> rebuilt = inner.front();
          for (size_t k = 1; k < inner.size(); ++k) {
            // Consecutive windows share exactly `stride` tokens.
            const auto& prev = inner[k - 1];
            const auto& cur = inner[k];
            REQUIRE(prev.size() >= stride);
            CHECK(std::vector<int64_t>(cur.begin(), cur.begin() + static_cast<std::ptrdiff_t>(stride)) ==
                  std::vector<int64_t>(prev.end() - static_cast<std::ptrdiff_t>(stride), prev.end()));
            rebuilt.insert(rebuilt.end(), cur.begin() + static_cast<std::ptrdiff_t>(stride), cur.end());
          }
          CHECK(rebuilt == all);
          if (all.size() + specials <= max_length) CHECK(w.size() == 1);
        }
      }
    }
  }
}

TEST_CASE("a stride not below the tokens a window holds is a config error naming data.stride", "[unit][text]") {
  const auto tok = kg::text::Tokenizer::from_file(kFixtures + "bpe_roberta.json");
  const std::string e = kg::test::error_of<kg::ConfigError>(
      [&] { (void)tok.encode_windows("hello world", 8, 6, kg::text::TruncationOptions::kRight); });
  CHECK(e.find("data.stride = 6: a window of data.max_length = 8 tokens") != std::string::npos);
  CHECK(e.find("holds 6 of the text's (2 are the tokenizer's special tokens)") != std::string::npos);
  CHECK_NOTHROW(tok.encode_windows("hello world", 8, 5, kg::text::TruncationOptions::kRight));
}

}  // namespace KG_UNITY_ID
}  // namespace
