#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace kg {

size_t edit_distance(std::string_view a, std::string_view b);
// Candidates close to `word` (best first), for "did you mean ...".
std::vector<std::string> closest(const std::string& word, const std::vector<std::string>& candidates, size_t max_n = 3);
// " (did you mean optim.lr?)" or "" when nothing is close.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);
std::string join(const std::vector<std::string>& parts, const std::string& sep);
std::vector<std::string> split(const std::string& s, char sep);
bool starts_with(std::string_view s, std::string_view prefix);
bool ends_with(std::string_view s, std::string_view suffix);
std::string trim(std::string_view s);
// Shortest text that reads back as the same double (0.001, 1e-05, 3.0).
std::string format_double(double v);
// printf's %.<digits>g: "0.00123", "1.2e-07" (what std::ostream prints at precision(digits)).
std::string format_significant(double v, int digits);
// Offset of the first byte of `s` that is not part of well-formed UTF-8 (RFC 3629: no overlong forms,
// surrogates or code points past U+10FFFF), or std::string_view::npos when all of it is.
size_t invalid_utf8_at(std::string_view s);

}  // namespace kg
