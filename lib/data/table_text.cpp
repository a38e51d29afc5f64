// table_text (data/table_read.h): values as the text a CSV would hold, shared by the Parquet and Arrow readers.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/strings.h"
#include "data/table_read.h"

namespace kg::data::table_text {

std::string half_to_text(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 31, man = h & 1023;
  float f;
  if (exp == 0)
    f = std::ldexp(static_cast<float>(man), -24);
  else if (exp == 31)
    f = man ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else
    f = std::ldexp(static_cast<float>(man | 1024), exp - 25);
  if (sign) f = -f;
  if (std::isnan(f)) return "";
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, f);
  std::string s(buf, r.ptr);
  if (std::isfinite(f) && s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string decimal_text(int64_t v, int64_t scale) {
  const bool neg = v < 0;
  const uint64_t mag = neg ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  std::string digits = std::to_string(mag);
  if (scale > 0) {
    if (scale > 38) return "";
    if (static_cast<int64_t>(digits.size()) <= scale)
      digits.insert(0, static_cast<size_t>(scale) - digits.size() + 1, '0');
    digits.insert(digits.size() - static_cast<size_t>(scale), ".");
  }
  return (neg ? "-" : "") + digits;
}

std::string date_text(int64_t days) {
  // Howard Hinnant's civil_from_days.
  days += 719468;
  const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const int64_t doe = days - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t d = doy - (153 * mp + 2) / 5 + 1;
  const int64_t m = mp < 10 ? mp + 3 : mp - 9;
  const int64_t y = yoe + era * 400 + (m <= 2);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04lld-%02lld-%02lld", static_cast<long long>(y), static_cast<long long>(m),
                static_cast<long long>(d));
  return buf;
}

std::string float_text(float f) {
  if (std::isnan(f)) return "";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, f);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string double_text(double d) { return std::isnan(d) ? std::string() : format_double(d); }

std::string in_table_images() {
  return "image bytes inside the table (the Hugging Face Image feature, struct<bytes, path>): kgtrain reads images "
         "from files for now; save them as files and name them in a path column (docs/data.md, Tables)";
}

}  // namespace kg::data::table_text
