// Measures how many code points ICU classes differently from kgtrain's GPT-2 regex tables (\p{L}, \p{N}, \s as
// tokenizers' Oniguruma sees them): the figure quoted in lib/text/bpe_unicode.cpp. Not part of the build:
//   g++ -std=c++17 -I lib scripts/compare_gpt2_classes_icu.cpp lib/text/bpe_unicode.cpp -licuuc -o /tmp/cmp && /tmp/cmp
#include <unicode/uchar.h>
#include <cstdio>
#include "text/unicode.h"
int main() {
  long bad[4] = {0, 0, 0, 0}, total = 0;
  for (UChar32 c = 0; c <= 0x10FFFF; ++c) {
    if (c >= 0xD800 && c <= 0xDFFF) continue;
    const int8_t t = u_charType(c);
    const bool L = t == U_UPPERCASE_LETTER || t == U_LOWERCASE_LETTER || t == U_TITLECASE_LETTER || t == U_MODIFIER_LETTER || t == U_OTHER_LETTER;
    const bool N = t == U_DECIMAL_DIGIT_NUMBER || t == U_LETTER_NUMBER || t == U_OTHER_NUMBER;
    const bool S = u_isUWhiteSpace(c);
    const auto k = kg::text::gpt2_class(c);
    bad[1] += L != (k == kg::text::kGpt2Letter);
    bad[2] += N != (k == kg::text::kGpt2Number);
    bad[3] += S != (k == kg::text::kGpt2Space);
    total += (L != (k == kg::text::kGpt2Letter)) || (N != (k == kg::text::kGpt2Number)) || (S != (k == kg::text::kGpt2Space));
  }
  std::printf("ICU %s: \\p{L} %ld, \\p{N} %ld, \\s %ld code points differ; %ld in all\n", U_UNICODE_VERSION, bad[1], bad[2], bad[3], total);
}
