#include "config/validate.h"

#include <set>

#include "config/registry.h"
#include "config/schema.h"
#include "config/sections.h"
#include "core/error.h"
#include "core/strings.h"

namespace kg::config {
namespace {

const KeySpec* find_spec(const Schema& schema, const std::string& key) {
  for (auto& s : schema)
    if (s.key == key) return &s;
  return nullptr;
}

// The component a section selects: its `name` value, or the declared default.
std::string selected_name(const Tree& tree, const SectionInfo& sec) {
  if (const Entry* e = tree.find(sec.name + ".name"); e && e->value.is_string()) return e->value.get<std::string>();
  if (sec.default_name)
    if (std::string n = sec.default_name(tree); !n.empty()) return n;
  if (const KeySpec* s = find_spec(sec.schema, "name"); s && s->default_value.is_string())
    return s->default_value.get<std::string>();
  return "";
}

const ComponentInfo* selected(const Tree& tree, const SectionInfo& sec) {
  if (sec.component_kind.empty()) return nullptr;
  const RegistryBase* reg = RegistryBase::by_kind(sec.component_kind);
  return reg ? reg->find_info(selected_name(tree, sec)) : nullptr;
}

// A component key "<p>.name" naming a registry declares a nested component whose own keys live under
// "<p>." (lookahead's inner.name: [optim.inner] name = "radam", betas = [...]). Returns "<p>" or "".
std::string nested_prefix(const KeySpec& s) {
  if (s.component_kind.empty() || s.type != Type::String || !ends_with(s.key, ".name")) return "";
  return s.key.substr(0, s.key.size() - 5);
}

bool has_nested(const ComponentInfo& c) {
  for (auto& s : c.schema)
    if (!nested_prefix(s).empty()) return true;
  return false;
}

// A nested component of the component a section selects: "optim.inner" -> the optimizer it names.
struct Nested {
  std::string prefix;              // full key prefix: "optim.inner"
  const KeySpec* name_spec;        // the declaring key ("inner.name")
  const ComponentInfo* component;  // nullptr when the name is unknown (reported at <prefix>.name)
};

std::vector<Nested> nested_of(const Tree& tree, const SectionInfo& sec) {
  std::vector<Nested> out;
  const ComponentInfo* c = selected(tree, sec);
  if (!c) return out;
  for (auto& s : c->schema) {
    std::string p = nested_prefix(s);
    if (p.empty()) continue;
    std::string full = sec.name + "." + p, name;
    if (const Entry* e = tree.find(full + ".name"); e && e->value.is_string())
      name = e->value.get<std::string>();
    else if (s.default_value.is_string())
      name = s.default_value.get<std::string>();
    const RegistryBase* reg = RegistryBase::by_kind(s.component_kind);
    out.push_back({full, &s, reg ? reg->find_info(name) : nullptr});
  }
  return out;
}

// Whether component `c` reads the section-relative key `rest` itself or through a nested component.
bool declares(const ComponentInfo& c, const std::string& rest) {
  if (find_spec(c.schema, rest)) return true;
  for (auto& s : c.schema)
    if (auto p = nested_prefix(s); !p.empty() && starts_with(rest, p + ".")) return true;
  return false;
}

std::string origin_of(const Entry& e, const std::string& inner) {
  auto it = e.inner.find(inner);
  return (it != e.inner.end() ? it->second : e.origin).str();
}

// Checks one table of a component list (data.augment[i]) against its component's schema.
void check_component_table(const std::string& key, const Entry& e, size_t i, const std::string& kind,
                           std::vector<std::string>& problems) {
  const json& t = e.value[i];
  const std::string at = key + "[" + std::to_string(i) + "]";
  const std::string idx = "[" + std::to_string(i) + "]";
  const RegistryBase* reg = RegistryBase::by_kind(kind);
  auto name = t.find("name");
  if (name == t.end() || !name->is_string()) {
    problems.push_back(at + ": missing name = \"...\" (" + origin_of(e, idx) + "; known " + kind +
                       "s: " + join(reg->names(), ", ") + ")");
    return;
  }
  const ComponentInfo* c = reg->find_info(name->get<std::string>());
  if (!c && !reg->unavailable(name->get<std::string>()).empty()) {
    problems.push_back(at + ".name: " + reg->unavailable(name->get<std::string>()) + " (" +
                       origin_of(e, idx + ".name") + ")");
    return;
  }
  if (!c) {
    auto known = reg->names();
    problems.push_back(at + ".name: unknown " + kind + " \"" + name->get<std::string>() + "\" (" +
                       origin_of(e, idx + ".name") + "; known: " + join(known, ", ") + ")" +
                       did_you_mean(name->get<std::string>(), known));
    return;
  }
  std::vector<std::string> keys{"name"};
  for (auto& s : c->schema) keys.push_back(s.key);
  for (auto& [k, v] : t.items()) {
    if (k == "name") continue;
    const KeySpec* spec = find_spec(c->schema, k);
    std::string where = origin_of(e, idx + "." + k);
    if (!spec) {
      problems.push_back(at + "." + k + ": unknown key for " + kind + " " + c->name + " (" + where +
                         "; allowed: " + join(keys, ", ") + ")" + did_you_mean(k, keys));
    } else if (auto err = check_value(*spec, v); !err.empty()) {
      problems.push_back(at + "." + k + ": " + err + " (" + where + ")");
    }
  }
}

void check_spec_value(const std::string& key, const Entry& e, const KeySpec& spec, std::vector<std::string>& problems);

// A key under a nested component's prefix ("optim.inner.betas"): checked against the schema of the
// component "optim.inner.name" selects.
void check_nested_leaf(const std::string& key, const Entry& e, const Nested& n, std::vector<std::string>& problems,
                       std::vector<std::string>& warnings) {
  if (!n.component) return;  // an unknown inner name is reported at its own key
  const std::string rest = key.substr(n.prefix.size() + 1);
  const std::string& kind = n.name_spec->component_kind;
  if (const KeySpec* spec = find_spec(n.component->schema, rest)) return check_spec_value(key, e, *spec, problems);
  std::vector<std::string> owners;
  for (auto* c : RegistryBase::by_kind(kind)->components())
    if (declares(*c, rest)) owners.push_back(c->name);
  if (!owners.empty()) {
    warnings.push_back(key + " (" + e.origin.str() + ") is an option of " + kind + " " + join(owners, ", ") +
                       ", not of the selected " + kind + " \"" + n.component->name + "\" (" + n.prefix +
                       ".name): ignored");
    return;
  }
  if (e.extra) return;  // added with +key / ++key: a key of the user's own, not checked
  std::vector<std::string> allowed{"name"}, full{n.prefix + ".name"};
  for (auto& s : n.component->schema) {
    allowed.push_back(s.key);
    full.push_back(n.prefix + "." + s.key);
  }
  problems.push_back(key + ": unknown key for " + kind + " " + n.component->name + " (" + e.origin.str() +
                     "; allowed: " + join(allowed, ", ") + ")" + did_you_mean(key, full));
}

void check_leaf(const Tree& tree, const std::string& key, const Entry& e, std::vector<std::string>& problems,
                std::vector<std::string>& warnings) {
  auto dot = key.find('.');
  std::string section = key.substr(0, dot), rest = dot == std::string::npos ? "" : key.substr(dot + 1);
  auto unknown = [&](const std::string& extra) {
    if (e.extra) return;  // added with +key / ++key: a key of the user's own, not checked
    problems.push_back(key + ": unknown key (" + e.origin.str() + ")" + extra + did_you_mean(key, declared_keys(tree)));
  };
  auto sit = sections().find(section);
  if (sit != sections().end() && rest.empty()) {  // optim=3, train = 3, [[train]]
    problems.push_back(key + ": is a section of keys, not a value (" + e.origin.str() +
                       "); set its keys instead, e.g. " + key + "." +
                       (sit->second.schema.empty() ? std::string("KEY") : sit->second.schema.front().key) +
                       "=... or a [" + key + "] table");
    return;
  }
  if (sit == sections().end() || rest.empty()) return unknown("");
  const SectionInfo& sec = sit->second;
  const KeySpec* spec = find_spec(sec.schema, rest);
  const ComponentInfo* comp = selected(tree, sec);
  if (!spec && comp) spec = find_spec(comp->schema, rest);
  if (!spec)
    for (auto& n : nested_of(tree, sec))
      if (starts_with(key, n.prefix + ".")) return check_nested_leaf(key, e, n, problems, warnings);
  if (!spec && !sec.component_kind.empty()) {
    std::vector<std::string> owners;
    for (auto* c : RegistryBase::by_kind(sec.component_kind)->components())
      if (declares(*c, rest)) owners.push_back(c->name);
    if (!owners.empty()) {
      warnings.push_back(key + " (" + e.origin.str() + ") is an option of " + sec.component_kind + " " +
                         join(owners, ", ") + ", not of the selected " + sec.component_kind + " \"" +
                         selected_name(tree, sec) + "\": ignored");
      return;
    }
  }
  if (!spec) return unknown("");
  check_spec_value(key, e, *spec, problems);
}

void check_spec_value(const std::string& key, const Entry& e, const KeySpec& spec, std::vector<std::string>& problems) {
  if (auto err = check_value(spec, e.value); !err.empty()) {
    problems.push_back(key + ": " + err + " (" + e.origin.str() + ")");
    return;
  }
  if (!spec.component_kind.empty()) {
    const RegistryBase* reg = RegistryBase::by_kind(spec.component_kind);
    if (e.value.is_string() && !reg->find_info(e.value.get<std::string>())) {
      auto known = reg->names();
      auto name = e.value.get<std::string>();
      problems.push_back(key + ": unknown " + spec.component_kind + " \"" + name + "\" (" + e.origin.str() +
                         "; known: " + join(known, ", ") + ")" + did_you_mean(name, known));
    } else if (e.value.is_array()) {
      for (size_t i = 0; i < e.value.size(); ++i) check_component_table(key, e, i, spec.component_kind, problems);
    }
  }
}

// Declared keys of a section plus its selected component, with their specs.
std::vector<std::pair<std::string, const KeySpec*>> section_specs(const Tree& tree, const SectionInfo& sec) {
  std::vector<std::pair<std::string, const KeySpec*>> out;
  for (auto& s : sec.schema) out.emplace_back(sec.name + "." + s.key, &s);
  if (const ComponentInfo* c = selected(tree, sec))
    for (auto& s : c->schema)
      if (!find_spec(sec.schema, s.key)) out.emplace_back(sec.name + "." + s.key, &s);
  for (auto& n : nested_of(tree, sec))
    if (n.component && !has_nested(*n.component))
      for (auto& s : n.component->schema) out.emplace_back(n.prefix + "." + s.key, &s);
  return out;
}

}  // namespace

std::vector<std::string> declared_keys(const Tree& tree) {
  std::vector<std::string> out;
  for (auto& [name, sec] : sections()) {
    for (auto& s : sec.schema) out.push_back(name + "." + s.key);
    // Keys of every component of the kind, so a key of an unselected component is still suggested.
    if (!sec.component_kind.empty())
      for (auto* c : RegistryBase::by_kind(sec.component_kind)->components())
        for (auto& s : c->schema) {
          out.push_back(name + "." + s.key);
          if (auto p = nested_prefix(s); !p.empty())
            for (auto* d : RegistryBase::by_kind(s.component_kind)->components())
              for (auto& t : d->schema) out.push_back(name + "." + p + "." + t.key);
        }
  }
  (void)tree;
  std::set<std::string> uniq(out.begin(), out.end());
  return {uniq.begin(), uniq.end()};
}

const json* default_of(const Tree& tree, const std::string& key) {
  auto dot = key.find('.');
  if (dot == std::string::npos) return nullptr;
  auto sit = sections().find(key.substr(0, dot));
  if (sit == sections().end()) return nullptr;
  for (auto& [k, spec] : section_specs(tree, sit->second))
    if (k == key && !spec->default_value.is_null()) return &spec->default_value;
  return nullptr;
}

Validated validate(const Tree& merged) {
  std::vector<std::string> problems, warnings;
  // Every entry, also those added with +key / ++key: a declared key is checked whatever way it is set.
  for (auto& [key, e] : merged.entries()) {
    check_leaf(merged, key, e, problems, warnings);
  }
  for (auto& [name, sec] : sections())
    for (auto& n : nested_of(merged, sec))
      if (n.component && has_nested(*n.component)) {
        const Entry* e = merged.find(n.prefix + ".name");
        problems.push_back(n.prefix + ".name: " + n.name_spec->component_kind + " \"" + n.component->name +
                           "\" wraps another " + n.name_spec->component_kind + " itself and cannot be nested (" +
                           (e ? e->origin.str() : std::string("default")) + ")");
      }
  Validated out{merged, warnings};
  for (auto& [name, sec] : sections()) {
    for (auto& [key, spec] : section_specs(merged, sec)) {
      if (merged.has(key)) continue;
      if (spec->default_value.is_null()) {
        if (!spec->optional) problems.push_back(key + ": required key is missing (" + spec->doc + ")");
        continue;
      }
      Entry d;
      // A section's own default component (loss: data.task's) rather than the schema's fixed one.
      d.value = key == name + ".name" && sec.default_name ? json(selected_name(merged, sec)) : spec->default_value;
      out.tree.set(key, d);
    }
  }
  if (!problems.empty()) throw ConfigError(problems);
  return out;
}

}  // namespace kg::config
