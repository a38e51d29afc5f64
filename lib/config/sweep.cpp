#include "config/sweep.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <set>

#include "core/error.h"
#include "core/strings.h"

namespace kg::config {
namespace {

std::string number_text(double v, bool integral) {
  if (integral) return std::to_string(static_cast<int64_t>(std::llround(v)));
  char b[32];
  // The shortest text within rounding error of v: 0.1 + 2 * 0.1 is written 0.3, as a user would.
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(b, sizeof b, "%.*g", prec, v);
    if (std::fabs(std::stod(b) - v) <= 1e-12 * std::max(1.0, std::fabs(v))) break;
  }
  return b;
}

double number_of(const std::string& word, const std::string& text) {
  try {
    size_t used = 0;
    const double v = std::stod(trim(text), &used);
    if (used == trim(text).size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  throw ConfigError(word + ": range() takes numbers, got \"" + text + "\"");
}

// range([start, ]stop[, step]) as Python (and Hydra: floats too).
std::vector<std::string> range_values(const std::string& word, const std::vector<std::string>& args, size_t max_runs) {
  KG_CHECK(!args.empty() && args.size() <= 3 && !args[0].empty(), ConfigError,
           word + ": range() takes (stop), (start, stop) or (start, stop, step)");
  const double start = args.size() == 1 ? 0.0 : number_of(word, args[0]);
  const double stop = number_of(word, args[args.size() == 1 ? 0 : 1]);
  const double step = args.size() == 3 ? number_of(word, args[2]) : 1.0;
  KG_CHECK(step != 0, ConfigError, word + ": range() step must not be 0");
  bool integral = true;
  for (auto& a : args) integral = integral && trim(a).find_first_of(".eE") == std::string::npos;
  std::vector<std::string> out;
  for (int64_t i = 0;; ++i) {
    const double v = start + static_cast<double>(i) * step;
    if (step > 0 ? v >= stop - 1e-12 * std::fabs(step) : v <= stop + 1e-12 * std::fabs(step)) break;
    KG_CHECK(out.size() < max_runs, ConfigError,
             word + ": range() gives more than " + std::to_string(max_runs) + " values");
    out.push_back(number_text(v, integral));
  }
  KG_CHECK(!out.empty(), ConfigError, word + ": range() gives no value (Python's range: stop is excluded)");
  return out;
}

}  // namespace

std::vector<std::string> split_top_level(const std::string& value) {
  std::vector<std::string> parts;
  std::string cur;
  int depth = 0;
  char quote = 0;
  for (char c : value) {
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '[' || c == '{' || c == '(') {
      ++depth;
    } else if ((c == ']' || c == '}' || c == ')') && depth > 0) {
      --depth;
    } else if (c == ',' && depth == 0) {
      parts.push_back(trim(cur));
      cur.clear();
      continue;
    }
    cur += c;
  }
  parts.push_back(trim(cur));
  return parts;
}

SweepSpec parse_sweep(const std::vector<std::string>& words, size_t max_runs) {
  SweepSpec spec;
  std::set<std::string> swept;
  for (const auto& w : words) {
    const size_t eq = w.find('=');
    if (eq == std::string::npos || w.empty() || w[0] == '~') {
      spec.fixed.push_back(w);
      continue;
    }
    const std::string key = w.substr(0, eq), value = w.substr(eq + 1);
    std::vector<std::string> values;
    const auto call = [&](const std::string& fn) {
      return starts_with(value, fn + "(") && ends_with(trim(value), ")");
    };
    if (call("range") || call("choice")) {
      const std::string inner = value.substr(value.find('(') + 1, trim(value).size() - value.find('(') - 2);
      const auto args = split_top_level(inner);
      values = call("range") ? range_values(w, args, max_runs) : args;
    } else {
      for (const char* fn : {"interval", "glob", "tag", "sort", "shuffle", "extend_list"})
        KG_CHECK(
            !call(fn), ConfigError,
            w + ": " + std::string(fn) + "() is not a grid sweep; kgtrain sweeps value lists, range() and choice()");
      values = split_top_level(value);
      if (values.size() == 1) {
        spec.fixed.push_back(w);
        continue;
      }
    }
    for (auto& v : values)
      KG_CHECK(!v.empty(), ConfigError, w + ": an empty value in the sweep list (\"a,,b\" or a trailing comma)");
    KG_CHECK(swept.insert(key).second, ConfigError, w + ": " + key + " is swept twice");
    spec.axes.push_back({key, values});
    KG_CHECK(spec.size() <= max_runs, ConfigError,
             "the sweep has " + std::to_string(spec.size()) + " runs; at most " + std::to_string(max_runs));
  }
  return spec;
}

size_t SweepSpec::size() const {
  size_t n = 1;
  for (auto& a : axes) {
    if (a.values.empty()) return 0;
    if (n > SIZE_MAX / a.values.size()) return SIZE_MAX;  // saturates: parse_sweep refuses it
    n *= a.values.size();
  }
  return n;
}

std::vector<std::vector<std::string>> SweepSpec::runs() const {
  std::vector<std::vector<std::string>> out(1);
  for (auto& a : axes) {
    std::vector<std::vector<std::string>> next;
    for (auto& prefix : out)
      for (auto& v : a.values) {
        next.push_back(prefix);
        next.back().push_back(a.key + "=" + v);
      }
    out = std::move(next);
  }
  return out;
}

}  // namespace kg::config
