#include "config/schema.h"

#include <cmath>

#include "core/strings.h"

namespace kg::config {

std::string type_name(Type t) {
  switch (t) {
    case Type::Bool:
      return "a boolean";
    case Type::Int:
      return "an integer";
    case Type::Float:
      return "a number";
    case Type::String:
      return "a string";
    case Type::IntList:
      return "an array of integers";
    case Type::FloatList:
      return "an array of numbers";
    case Type::StringList:
      return "an array of strings";
    case Type::TableList:
      return "an array of tables";
    case Type::Any:
      return "any value";
  }
  return "?";
}

namespace {
bool is_number(const json& v) { return v.is_number_integer() || v.is_number_float(); }

// A non-finite number in `v` (itself or inside arrays, as TOML's nan / inf / -inf), or nullptr.
const json* non_finite(const json& v) {
  if (v.is_number_float() && !std::isfinite(v.get<double>())) return &v;
  if (v.is_array())
    for (auto& x : v)
      if (const json* bad = non_finite(x)) return bad;
  return nullptr;
}

std::string show(const json& v) {
  if (v.is_number_float() && !std::isfinite(v.get<double>()))  // json::dump writes null
    return std::isnan(v.get<double>()) ? "nan" : v.get<double>() > 0 ? "inf" : "-inf";
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

bool type_ok(Type t, const json& v) {
  auto all_of = [&](auto pred) {
    if (!v.is_array()) return false;
    for (auto& x : v)
      if (!pred(x)) return false;
    return true;
  };
  switch (t) {
    case Type::Bool:
      return v.is_boolean();
    case Type::Int:
      return v.is_number_integer();
    case Type::Float:
      return is_number(v);
    case Type::String:
      return v.is_string();
    case Type::IntList:
      return all_of([](const json& x) { return x.is_number_integer(); });
    case Type::FloatList:
      return all_of([](const json& x) { return is_number(x); });
    case Type::StringList:
      return all_of([](const json& x) { return x.is_string(); });
    case Type::TableList:
      return all_of([](const json& x) { return x.is_object(); });
    case Type::Any:
      return true;
  }
  return false;
}

// Bounds read as people write them: 0 and 1, not 0.0 and 1.0.
std::string bound(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  return format_double(v);
}

std::string range_text(const KeySpec& s) {
  bool lo = std::isfinite(s.min), hi = std::isfinite(s.max);
  if (lo && hi) return " in [" + bound(s.min) + ", " + bound(s.max) + "]";
  if (lo) return std::string(s.min_exclusive ? " > " : " >= ") + bound(s.min);
  if (hi) return " <= " + bound(s.max);
  return "";
}

bool in_range(const KeySpec& s, double x) {
  if (s.min_exclusive ? !(x > s.min) : !(x >= s.min)) return false;
  return x <= s.max;
}
}  // namespace

std::string check_value(const KeySpec& spec, const json& v) {
  if (v.is_null() && spec.optional) return "";
  // No key takes nan or inf: they would pass every range check below (and train on nan).
  if (const json* bad = non_finite(v)) return "expected a finite number, got " + show(*bad);
  if (!type_ok(spec.type, v)) return "expected " + type_name(spec.type) + ", got " + show(v);
  if (spec.size >= 0 && v.is_array() && static_cast<int>(v.size()) != spec.size)
    return "expected " + std::to_string(spec.size) + " values, got " + std::to_string(v.size());
  auto check_number = [&](const json& x) -> std::string {
    if (is_number(x) && !in_range(spec, x.get<double>()))
      return "expected " + type_name(spec.type) + range_text(spec) + ", got " + show(v);
    return "";
  };
  if (v.is_array() && spec.type != Type::TableList) {
    for (auto& x : v)
      if (auto e = check_number(x); !e.empty()) return e;
  } else if (auto e = check_number(v); !e.empty()) {
    return e;
  }
  // Choices hold for a string and for each string of a list.
  for (const json& x : v.is_array() ? v : json::array({v})) {
    if (spec.choices.empty() || !x.is_string()) continue;
    auto s = x.get<std::string>();
    bool ok = false;
    for (auto& c : spec.choices) ok = ok || c == s;
    if (!ok)
      return "expected one of " + join(spec.choices, ", ") + ", got \"" + s + "\"" + did_you_mean(s, spec.choices);
  }
  if (spec.check) return spec.check(v);
  return "";
}

const json* Options::find(const std::string& key) const {
  if (tree_) {
    const Entry* e = tree_->find(prefix_.empty() ? key : prefix_ + "." + key);
    return e ? &e->value : nullptr;
  }
  const json* cur = &table_;
  for (auto& part : split(key, '.')) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(part);
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur;
}

std::string Options::where(const std::string& key) const {
  if (tree_) {
    std::string full = prefix_.empty() ? key : prefix_ + "." + key;
    const Entry* e = tree_->find(full);
    return full + " (" + (e ? e->origin.str() : std::string("default")) + ")";
  }
  return table_where_.empty() ? key : table_where_ + "." + key;
}

}  // namespace kg::config
