// TOML in and out. toml++ is confined to this file: it is a heavy header and nothing else needs it.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <toml++/toml.h>

#include "config/resolve.h"
#include "core/strings.h"
#include "core/error.h"

namespace kg::config {

namespace {

bool is_key_part(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// Converts toml++ nodes to json, recording where every array element and element key was written.
class Reader {
 public:
  explicit Reader(std::string name) : name_(std::move(name)) {}

  Origin at(const toml::node& n) const {
    const auto& b = n.source().begin;
    return Origin::at(name_, static_cast<int>(b.line), static_cast<int>(b.column));
  }

  // `path` locates `n` inside its leaf ("" for the leaf itself, "[2]", "[2].p").
  json value(const toml::node& n, const std::string& path, std::map<std::string, Origin>* inner) {
    if (auto* t = n.as_table()) {
      json obj = json::object();
      for (const auto& [k, v] : *t) {
        std::string sub = path + "." + std::string(k.str());
        if (inner) (*inner)[sub] = at(v);
        obj[std::string(k.str())] = value(v, sub, inner);
      }
      return obj;
    }
    if (auto* a = n.as_array()) {
      json arr = json::array();
      for (size_t i = 0; i < a->size(); ++i) {
        std::string sub = path + "[" + std::to_string(i) + "]";
        if (inner) (*inner)[sub] = at((*a)[i]);
        arr.push_back(value((*a)[i], sub, inner));
      }
      return arr;
    }
    if (auto* v = n.as_integer()) return json(v->get());
    if (auto* v = n.as_floating_point()) return json(v->get());
    if (auto* v = n.as_boolean()) return json(v->get());
    if (auto* v = n.as_string()) return json(v->get());
    // Recipes have no use for TOML dates; a quoted string says what the user meant.
    problems.push_back(at(n).str() + ": dates and times are not supported here (quote the value)");
    return json();
  }

  void table(const toml::table& t, const std::string& prefix, Tree& out) {
    for (const auto& [k, node] : t) {
      std::string part(k.str());
      if (!is_key_part(part)) {
        problems.push_back(at(node).str() + ": bad key \"" + part + "\" (key parts are letters, digits, _ and -)");
        continue;
      }
      std::string key = prefix.empty() ? part : prefix + "." + part;
      if (auto* sub = node.as_table()) {
        table(*sub, key, out);
        continue;
      }
      Entry e;
      e.origin = at(node);
      e.value = value(node, "", &e.inner);
      out.set(key, std::move(e));
    }
  }

  std::vector<std::string> problems;

 private:
  std::string name_;
};

std::string format_float(double d) { return kg::format_double(d); }

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04X", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string key_text(const std::string& key) {
  std::string out;
  size_t start = 0;
  while (true) {
    size_t dot = key.find('.', start);
    std::string part = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!out.empty()) out += '.';
    out += is_key_part(part) ? part : quote(part);
    if (dot == std::string::npos) return out;
    start = dot + 1;
  }
}

// The first byte TOML allows only escaped (control characters other than tab, LF and CR; DEL), npos when none.
// toml++ 3.3 asserts on some of them (a NUL inside a table header, found by tests/fuzz): they never reach it.
size_t first_control_char(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) return i;
  }
  return std::string_view::npos;
}

// What a light pass over the text outside strings and comments finds before toml++ parses it:
//  - the most dotted parts of one key or table name: toml++'s parser and this file's reader recurse once per part, and
//    a key of a million parts overflowed the stack (scripts/reliability.py hostile). Values hold at most one dot.
//  - the first non-ASCII byte there (a leading BOM aside): TOML allows none outside strings and comments, and toml++
//    3.3's whitespace test reaches __builtin_unreachable on some such characters (U+FEFC, found by tests/fuzz).
struct Lexed {
  size_t key_parts = 1;
  size_t non_ascii_at = std::string_view::npos;
};

Lexed lex(std::string_view s) {
  Lexed out;
  size_t dots = 0;
  for (size_t i = s.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '#') {
      while (i < s.size() && s[i] != '\n') ++i;
      dots = 0;
    } else if (c == '"' || c == '\'') {
      const bool multi = s.compare(i, 3, std::string(3, c)) == 0;
      i += multi ? 3 : 1;
      while (i < s.size()) {
        if (c == '"' && s[i] == '\\') {
          i += 2;  // an escape: \" or \\ does not end the string
        } else if (multi ? s.compare(i, 3, std::string(3, c)) == 0 : (s[i] == c || s[i] == '\n')) {
          if (multi) i += 2;
          break;
        } else {
          ++i;
        }
      }
    } else if (c == '.') {
      out.key_parts = std::max(out.key_parts, ++dots + 1);
    } else if (c == '=' || c == '\n' || c == '[' || c == ']' || c == '{' || c == '}' || c == ',') {
      dots = 0;
    } else if (static_cast<unsigned char>(c) >= 0x80 && out.non_ascii_at == std::string_view::npos) {
      out.non_ascii_at = i;
    }
  }
  return out;
}

// "line:column" (1-based) of byte `at`.
std::string position_of(std::string_view text, size_t at) {
  const size_t nl = at == 0 ? std::string_view::npos : text.rfind('\n', at - 1);
  const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
  return std::to_string(line) + ":" + std::to_string(nl == std::string_view::npos ? at + 1 : at - nl);
}

constexpr size_t kMaxKeyParts = 64;

}  // namespace

bool is_dotted_key(const std::string& key) {
  size_t start = 0;
  while (true) {
    size_t dot = key.find('.', start);
    std::string_view part(key.data() + start, (dot == std::string::npos ? key.size() : dot) - start);
    if (!is_key_part(part)) return false;
    if (dot == std::string::npos) return true;
    start = dot + 1;
  }
}

Tree parse_toml_string(const std::string& text, const std::string& name_for_errors) {
  if (const size_t at = first_control_char(text); at != std::string_view::npos) {
    char code[8];
    std::snprintf(code, sizeof code, "%04X", static_cast<unsigned>(static_cast<unsigned char>(text[at])));
    throw ConfigError(name_for_errors + ":" + position_of(text, at) + ": control character U+" + code +
                      " is not allowed in TOML (only tab, line feed and carriage return; inside a string write it "
                      "escaped, \\u" +
                      code + ")");
  }
  const Lexed lexed = lex(text);
  KG_CHECK(lexed.key_parts <= kMaxKeyParts, ConfigError, name_for_errors, ": a key or table name of more than ",
           kMaxKeyParts, " dotted parts (recipe keys are section.key, a component's a part or two more)");
  KG_CHECK(lexed.non_ascii_at == std::string_view::npos, ConfigError, name_for_errors, ":",
           position_of(text, lexed.non_ascii_at),
           ": a non-ASCII character outside a string or comment (TOML keys are ASCII: put text in quotes)");
  toml::table doc;
  try {
    doc = toml::parse(text, name_for_errors);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    throw ConfigError(name_for_errors + ":" + std::to_string(b.line) + ":" + std::to_string(b.column) + ": " +
                      std::string(e.description()));
  }
  Reader reader(name_for_errors);
  Tree tree;
  reader.table(doc, "", tree);
  if (!reader.problems.empty()) throw ConfigError(reader.problems);
  return tree;
}

Tree parse_toml_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  KG_CHECK(f.good(), DataError, "cannot read ", path, ": ", std::strerror(errno));
  std::ostringstream ss;
  ss << f.rdbuf();
  KG_CHECK(!f.bad(), DataError, "cannot read ", path, ": ", std::strerror(errno));
  return parse_toml_string(ss.str(), path);
}

json parse_override_value(const std::string& text) {
  const Lexed lexed = lex(text);
  if (first_control_char(text) != std::string_view::npos || lexed.key_parts > kMaxKeyParts ||
      lexed.non_ascii_at != std::string_view::npos)
    return text;  // not a TOML value kgtrain reads (toml++ never sees it): a verbatim string
  try {
    toml::table t = toml::parse("v = " + text);
    // More than one key means the text smuggled in a newline and more TOML: not one value.
    if (t.size() == 1) {
      if (const toml::node* n = t.get("v")) {
        Reader reader("");
        json j = reader.value(*n, "", nullptr);
        if (reader.problems.empty()) return j;
      }
    }
  } catch (const toml::parse_error&) {
  }
  return json(text);
}

std::string to_toml_value(const json& v) {
  switch (v.type()) {
    case json::value_t::boolean:
      return v.get<bool>() ? "true" : "false";
    case json::value_t::number_integer:
      return std::to_string(v.get<int64_t>());
    case json::value_t::number_unsigned:
      return std::to_string(v.get<uint64_t>());
    case json::value_t::number_float:
      return format_float(v.get<double>());
    case json::value_t::string:
      return quote(v.get<std::string>());
    case json::value_t::array: {
      std::string out = "[";
      for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + to_toml_value(v[i]);
      return out + "]";
    }
    case json::value_t::object: {
      if (v.empty()) return "{}";
      std::string out = "{ ";
      bool first = true;
      for (const auto& [k, x] : v.items()) {
        out += (first ? "" : ", ") + (is_key_part(k) ? k : quote(k)) + " = " + to_toml_value(x);
        first = false;
      }
      return out + " }";
    }
    default:
      break;
  }
  KG_ASSERT(false, "value has no TOML form: ", v.dump());
  return "";
}

std::string to_toml(const Tree& tree, bool annotate) {
  // Top-level keys first as one group, then one group per table, so the output reads like the recipe.
  std::vector<const std::pair<const std::string, Entry>*> order;
  for (const auto& kv : tree.entries())
    if (kv.first.find('.') == std::string::npos) order.push_back(&kv);
  for (const auto& kv : tree.entries())
    if (kv.first.find('.') != std::string::npos) order.push_back(&kv);

  std::string out, group;
  bool first = true;
  for (const auto* kv : order) {
    const std::string& key = kv->first;
    size_t dot = key.find('.');
    std::string g = dot == std::string::npos ? "" : key.substr(0, dot);
    if (!first && g != group) out += "\n";
    first = false;
    group = g;
    out += key_text(key) + " = " + to_toml_value(kv->second.value);
    if (annotate) out += "  # " + kv->second.origin.str();
    out += "\n";
  }
  return out;
}

}  // namespace kg::config
