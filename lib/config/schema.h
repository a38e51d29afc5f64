// Declared recipe keys. Every key a component reads is declared once, on its options struct:
//   struct AdamWOptions { std::vector<double> betas{0.9, 0.999}; double eps = 1e-8; };
//   Fields<AdamWOptions> f; f.field("betas", &AdamWOptions::betas, "Adam betas").size(2);
// The same Fields object gives the schema (types, defaults, docs, ranges) and loads the struct.
#pragma once
#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "config/tree.h"

namespace kg::config {

enum class Type { Bool, Int, Float, String, IntList, FloatList, StringList, TableList, Any };
std::string type_name(Type t);

struct KeySpec {
  std::string key;  // relative to its section or component ("lr", "inner.name")
  Type type = Type::Any;
  json default_value;                // null when the key has no default (optional keys)
  std::string doc;                   // one line: meaning, unit
  std::vector<std::string> choices;  // allowed string values (empty: any)
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_exclusive = false;
  int size = -1;               // exact list length (-1: any)
  bool optional = false;       // may be absent (default null)
  std::string component_kind;  // "transform" for a TableList of components; name key's registry
  std::string short_flag;      // a command-line flag's one-letter alias ("-m"); recipe keys have none
  // Extra check for values the type system cannot express; returns "" when fine, else "expected ...".
  std::function<std::string(const json&)> check;
};

// Returns "" when `v` fits `spec`, else a description such as "expected a float > 0, got -1".
std::string check_value(const KeySpec& spec, const json& v);

using Schema = std::vector<KeySpec>;

// Values for one section or component, relative keys; missing keys fall back to defaults.
class Options {
 public:
  Options() = default;
  Options(const Tree* tree, std::string prefix) : tree_(tree), prefix_(std::move(prefix)) {}
  // A component table inside an array (data.augment[2]); `where` names it for messages.
  Options(json table, std::string where) : table_(std::move(table)), table_where_(std::move(where)) {}
  const json* find(const std::string& key) const;
  std::string where(const std::string& key) const;  // origin text for messages
  const std::string& prefix() const { return prefix_; }

 private:
  const Tree* tree_ = nullptr;
  std::string prefix_;
  json table_;
  std::string table_where_;
};

namespace detail {
// A recipe value of several forms (optim.lr: a number, [lo, hi] or "find") is a type of its own: it names its
// schema type (static constexpr Type kRecipeType = Type::Any), converts with nlohmann's from_json/to_json found by
// ADL, and may check a value (static std::string check(const json&), "" when fine); Fields::field uses all three.
template <class T>
struct TypeOf {
  static constexpr Type value = T::kRecipeType;
};
template <class T, class = void>
struct HasCheck : std::false_type {};
template <class T>
struct HasCheck<T, std::void_t<decltype(T::check(std::declval<const json&>()))>> : std::true_type {};
template <>
struct TypeOf<bool> {
  static constexpr Type value = Type::Bool;
};
template <>
struct TypeOf<int> {
  static constexpr Type value = Type::Int;
};
template <>
struct TypeOf<int64_t> {
  static constexpr Type value = Type::Int;
};
template <>
struct TypeOf<double> {
  static constexpr Type value = Type::Float;
};
template <>
struct TypeOf<std::string> {
  static constexpr Type value = Type::String;
};
template <>
struct TypeOf<std::vector<int64_t>> {
  static constexpr Type value = Type::IntList;
};
template <>
struct TypeOf<std::vector<double>> {
  static constexpr Type value = Type::FloatList;
};
template <>
struct TypeOf<std::vector<std::string>> {
  static constexpr Type value = Type::StringList;
};
template <>
struct TypeOf<json> {
  static constexpr Type value = Type::Any;
};
template <class T>
struct TypeOf<std::optional<T>> {
  static constexpr Type value = TypeOf<T>::value;
};
template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

template <class T>
json to_json_value(const T& v) {
  return json(v);
}
template <class T>
json to_json_value(const std::optional<T>& v) {
  return v ? json(*v) : json();
}
template <class T>
void from_json_value(const json& j, T& out) {
  if constexpr (std::is_same_v<T, double>)
    out = j.get<double>();  // TOML ints accepted for floats
  else if constexpr (std::is_same_v<T, std::vector<double>>) {
    out.clear();
    for (auto& x : j) out.push_back(x.get<double>());
  } else
    out = j.get<T>();
}
template <class T>
void from_json_value(const json& j, std::optional<T>& out) {
  if (j.is_null()) {
    out.reset();
    return;
  }
  T v{};
  from_json_value(j, v);
  out = std::move(v);
}
}  // namespace detail

// The options of a component with no keys of its own (a callback whose section another component reads, a data
// source configured by [data]): Fields<NoOptions>().
struct NoOptions {};

template <class T>
class Fields {
 public:
  // Declares `key` backed by `member`; the default is the member's value in T{}.
  template <class M>
  Fields& field(std::string key, M T::*member, std::string doc) {
    KeySpec s;
    s.key = std::move(key);
    s.type = detail::TypeOf<M>::value;
    s.doc = std::move(doc);
    s.optional = detail::IsOptional<M>::value;
    s.default_value = detail::to_json_value(T{}.*member);
    if constexpr (detail::HasCheck<M>::value) s.check = &M::check;
    specs_.push_back(std::move(s));
    loaders_.push_back([member](const json& j, T& out) { detail::from_json_value(j, out.*member); });
    savers_.push_back([member](const T& in) { return detail::to_json_value(in.*member); });
    return *this;
  }
  // Declares `key`, a string naming one value of the enum E (names[i] is E(i)), backed by `member`: the recipe
  // spells the name, the struct holds the value, the schema's choices are `names`.
  template <class E>
  Fields& enum_field(std::string key, E T::*member, std::string doc, const std::vector<std::string>& names) {
    static_assert(std::is_enum_v<E>);
    KeySpec s;
    s.key = std::move(key);
    s.type = Type::String;
    s.doc = std::move(doc);
    s.choices = names;
    s.default_value = names.at(static_cast<size_t>(T{}.*member));
    specs_.push_back(std::move(s));
    loaders_.push_back([member, names](const json& j, T& out) {
      const auto it = std::find(names.begin(), names.end(), j.get<std::string>());
      out.*member = static_cast<E>(it - names.begin());  // validated against the choices before loading
    });
    savers_.push_back([member, names](const T& in) { return json(names.at(static_cast<size_t>(in.*member))); });
    return *this;
  }
  // Constraints on the key declared last.
  Fields& min(double v, bool exclusive = false) {
    last().min = v;
    last().min_exclusive = exclusive;
    return *this;
  }
  Fields& max(double v) {
    last().max = v;
    return *this;
  }
  Fields& range(double lo, double hi) { return min(lo).max(hi); }
  Fields& positive() { return min(0, true); }
  Fields& choices(std::vector<std::string> c) {
    last().choices = std::move(c);
    return *this;
  }
  Fields& size(int n) {
    last().size = n;
    return *this;
  }
  Fields& kind(std::string component_kind) {
    last().component_kind = std::move(component_kind);
    return *this;
  }
  // A command-line flag's one-letter alias: alias('m') makes -m the same as --multirun.
  Fields& alias(char letter) {
    last().short_flag = std::string("-") + letter;
    return *this;
  }
  Fields& check(std::function<std::string(const json&)> f) {
    last().check = std::move(f);
    return *this;
  }

  const Schema& schema() const { return specs_; }

  // The value of each key in `v` ({"steps": 5, ...}; a key with dots stays one name).
  json values_of(const T& v) const {
    json out = json::object();
    for (size_t i = 0; i < specs_.size(); ++i) out[specs_[i].key] = savers_[i](v);
    return out;
  }

  // Values were validated against the schema before any component is built, so loading cannot fail.
  T load(const Options& src) const {
    T out{};
    for (size_t i = 0; i < specs_.size(); ++i)
      if (const json* v = src.find(specs_[i].key)) loaders_[i](*v, out);
    return out;
  }

 private:
  KeySpec& last() { return specs_.back(); }
  Schema specs_;
  std::vector<std::function<void(const json&, T&)>> loaders_;
  std::vector<std::function<json(const T&)>> savers_;
};

}  // namespace kg::config
