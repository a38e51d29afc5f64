// Layering: env layer -> recipe files (each after its extends chain) -> config groups -> overrides,
// then interpolation. Problems are collected while the tree is still meaningful, then thrown together.
#include <cstdio>
#include <filesystem>
#include <set>

#include "config/resolve.h"
#include "core/error.h"
#include "core/strings.h"

namespace kg::config {

namespace {

namespace fs = std::filesystem;

std::string shown(const fs::path& dir) { return dir.empty() ? "." : dir.string(); }

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

std::string canonical(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(path, ec);
  return ec ? fs::absolute(path).lexically_normal().string() : p.string();
}

// Stems of the *.toml files directly in `sub` of each directory, sorted.
std::vector<std::string> options_in(const std::vector<fs::path>& dirs, const std::string& sub) {
  std::set<std::string> names;
  for (const auto& d : dirs) {
    std::error_code ec;
    for (const auto& f : fs::directory_iterator(d / sub, ec))
      if (f.path().extension() == ".toml") names.insert(f.path().stem().string());
  }
  return {names.begin(), names.end()};
}

std::string available(const std::vector<std::string>& names) {
  return names.empty() ? "none exist" : "available: " + join(names, ", ");
}

struct Override {
  enum class Kind { Set, Add, Upsert, Delete } kind;
  std::string word, key;
  json value;
};

class Resolver {
 public:
  explicit Resolver(const ResolveInput& in) : in_(in) {
    std::set<std::string> seen;
    for (const auto& r : in.recipe_files) {
      fs::path d = fs::path(r).parent_path().lexically_normal();
      if (seen.insert(d.string()).second) dirs_.push_back(d);
    }
    if (!in.builtin_recipes_dir.empty() && seen.insert(in.builtin_recipes_dir).second)
      dirs_.push_back(in.builtin_recipes_dir);
  }

  Resolved run() {
    for (const auto& r : in_.recipe_files) {
      std::error_code ec;
      if (!fs::is_regular_file(r, ec)) fatal("recipe file not found: " + r);
    }
    for (const auto& w : in_.args) classify(w);
    find_env_layer();
    if (incomplete_) throw ConfigError(problems_);

    if (!out_.env_file.empty()) layer(out_.env_file, out_.env_name);
    for (const auto& r : in_.recipe_files) layer(r, "");
    for (const auto& g : groups_) layer(g, "");
    if (incomplete_) throw ConfigError(problems_);

    for (const auto& o : overrides_) apply(o);
    try {
      interpolate(out_.tree, in_.environ, [this](const Tree& t, const std::string& k) -> const json* {
        if (in_.default_of_in_tree)
          if (const json* d = in_.default_of_in_tree(t, k)) return d;
        return in_.default_of ? in_.default_of(k) : nullptr;
      });
    } catch (const ConfigError& e) {
      problems_.insert(problems_.end(), e.problems().begin(), e.problems().end());
    }
    if (!problems_.empty()) throw ConfigError(problems_);
    return std::move(out_);
  }

 private:
  // A problem after which the merged tree would be missing layers: later checks would only add noise.
  void fatal(const std::string& p) {
    problems_.push_back(p);
    incomplete_ = true;
  }

  void classify(const std::string& word) {
    // Recipes are UTF-8 (toml++ checks files); a command-line word is checked here, before any of it becomes a
    // JSON string (whose output would throw on it: found by tests/fuzz).
    if (const size_t bad = invalid_utf8_at(word); bad != std::string::npos) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned>(static_cast<unsigned char>(word[bad])));
      problems_.push_back("the override starting \"" + word.substr(0, bad) + "\" is not UTF-8 text (byte " + hex +
                          " at position " + std::to_string(bad + 1) + ")");
      return;
    }
    Override o{Override::Kind::Set, word, "", json()};
    size_t eq = word.find('=');
    if (word.compare(0, 1, "~") == 0) {
      o.kind = Override::Kind::Delete;
      o.key = word.substr(1, eq == std::string::npos ? std::string::npos : eq - 1);
      if (eq != std::string::npos) {
        problems_.push_back("not an override: " + word + " (delete takes no value: write ~" + o.key + ")");
        return;
      }
    } else if (eq == std::string::npos) {
      problems_.push_back("not an override: " + word + " (expected key=value, +key=value, ~key or group=option)");
      return;
    } else {
      std::string lhs = word.substr(0, eq), rhs = word.substr(eq + 1);
      size_t plus = lhs.compare(0, 2, "++") == 0 ? 2 : lhs.compare(0, 1, "+") == 0 ? 1 : 0;
      o.kind = plus == 2 ? Override::Kind::Upsert : plus == 1 ? Override::Kind::Add : Override::Kind::Set;
      o.key = lhs.substr(plus);
      if (o.kind == Override::Kind::Set && o.key == "env") {
        if (rhs.empty()) problems_.push_back("env= needs an environment name (env=kaggle, env=colab, env=local)");
        forced_env_ = rhs;
        return;
      }
      if (o.kind == Override::Kind::Set && is_dotted_key(o.key) && o.key.find('.') == std::string::npos &&
          select_group(o.key, rhs))
        return;
      o.value = parse_override_value(rhs);
    }
    if (!is_dotted_key(o.key)) {
      problems_.push_back("bad key \"" + o.key + "\" in " + word +
                          " (keys are dotted names of letters, digits, _ and -)");
      return;
    }
    overrides_.push_back(std::move(o));
  }

  // True when `group` is a config-group folder (the word is then handled here, maybe as an error).
  bool select_group(const std::string& group, const std::string& option) {
    std::vector<std::string> folders;
    for (const auto& d : dirs_) {
      std::error_code ec;
      if (!fs::is_directory(d / group, ec)) continue;
      folders.push_back(shown(d / group));
      fs::path f = d / group / (option + ".toml");
      // An option is a file of the group's folder: a name, not a path (model=../fashion_mnist).
      const bool name = !option.empty() && option.find('/') == std::string::npos && option != "." && option != "..";
      if (name && fs::is_regular_file(f, ec)) {
        groups_.push_back(f.string());
        return true;
      }
    }
    if (folders.empty()) return false;
    fatal("no option \"" + option + "\" in config group " + group + " (" + available(options_in(dirs_, group)) +
          "; looked in " + join(folders, ", ") + ")");
    return true;
  }

  void find_env_layer() {
    out_.env_name = forced_env_.empty() ? detect_environment(in_.environ, in_.path_exists) : forced_env_;
    if (out_.env_name.empty()) return;
    for (const auto& d : dirs_) {
      std::error_code ec;
      fs::path f = d / "env" / (out_.env_name + ".toml");
      if (fs::is_regular_file(f, ec)) {
        out_.env_file = f.string();
        return;
      }
    }
    if (forced_env_.empty()) return;
    std::vector<std::string> looked;
    for (const auto& d : dirs_) looked.push_back(shown(d / "env"));
    fatal("env=" + forced_env_ + ": no environment layer " + forced_env_ + ".toml (" +
          available(options_in(dirs_, "env")) + "; looked in " + (looked.empty() ? "no folder" : join(looked, ", ")) +
          ")");
  }

  // Applies one top-level layer file with its extends chain; `env` names the env layer it is, if any.
  void layer(const std::string& path, const std::string& env) {
    try {
      std::vector<std::pair<std::string, std::string>> chain;
      Tree t;
      load(path, chain, t);
      if (!env.empty())
        for (auto& [key, e] : t.entries()) {
          to_env(e.origin, env);
          for (auto& [where, o] : e.inner) to_env(o, env);
        }
      out_.tree.merge(t);
    } catch (const ConfigError& e) {
      for (const auto& p : e.problems()) fatal(p);
    } catch (const DataError& e) {
      fatal(e.what());
    }
  }

  static void to_env(Origin& o, const std::string& env) {
    if (o.kind != Origin::Kind::File) return;
    o.kind = Origin::Kind::EnvLayer;
    o.layer = env;
  }

  // Depth-first: parents (each with its own parents) in listed order, then the file itself.
  // A parent already applied is skipped, so a shared base does not undo what a sibling changed; a file
  // named on the command line (recipe, group option) is always applied, since the user asked for it there.
  void load(const std::string& path, std::vector<std::pair<std::string, std::string>>& chain, Tree& into) {
    std::string canon = canonical(path);
    for (size_t i = 0; i < chain.size(); ++i)
      if (chain[i].first == canon) {
        std::vector<std::string> names;
        for (size_t j = i; j < chain.size(); ++j) names.push_back(chain[j].second);
        names.push_back(path);
        throw ConfigError("extends cycle: " + join(names, " -> "));
      }
    if (!chain.empty() && applied_.count(canon)) return;
    Tree t = parse_toml_file(path);
    std::vector<std::string> parents = extends_of(t, path);
    chain.emplace_back(canon, path);
    for (const auto& p : parents) load(p, chain, into);
    chain.pop_back();
    applied_.insert(canon);
    into.merge(t);
    out_.layers.push_back(path);
  }

  // Takes `extends` out of the file's tree; its paths are relative to the file's directory.
  static std::vector<std::string> extends_of(Tree& t, const std::string& path) {
    const Entry* e = t.find("extends");
    if (!e) return {};
    std::vector<std::pair<std::string, Origin>> items;
    if (e->value.is_string()) items.emplace_back(e->value.get<std::string>(), e->origin);
    bool ok = e->value.is_string() || e->value.is_array();
    for (size_t i = 0; ok && e->value.is_array() && i < e->value.size(); ++i) {
      ok = e->value[i].is_string();
      auto it = e->inner.find("[" + std::to_string(i) + "]");
      if (ok) items.emplace_back(e->value[i].get<std::string>(), it == e->inner.end() ? e->origin : it->second);
    }
    if (!ok) throw ConfigError(e->origin.str() + ": extends: expected a path or a list of paths");
    std::vector<std::string> out, problems;
    for (const auto& [rel, origin] : items) {
      fs::path p(rel);
      std::string full = (p.is_absolute() ? p : fs::path(path).parent_path() / p).lexically_normal().string();
      std::error_code ec;
      if (fs::is_regular_file(full, ec))
        out.push_back(full);
      else
        problems.push_back(origin.str() + ": extends target not found: " + full);
    }
    if (!problems.empty()) throw ConfigError(problems);
    t.erase("extends");
    return out;
  }

  void apply(const Override& o) {
    Tree& t = out_.tree;
    const Entry* old = t.find(o.key);
    bool present = old || !t.keys_under(o.key).empty();
    Entry e{o.value, Origin::command_line(), {}, old && old->extra};
    switch (o.kind) {
      case Override::Kind::Delete:
        if (t.erase(o.key) == 0) problems_.push_back(o.word + ": nothing is set at " + o.key);
        return;
      case Override::Kind::Add:
        if (present) {
          problems_.push_back(o.word + ": " + o.key + " is already set" + (old ? " (" + old->origin.str() + ")" : "") +
                              "; use " + o.word.substr(1) + " to change it");
          return;
        }
        for (size_t dot = o.key.find('.'); dot != std::string::npos; dot = o.key.find('.', dot + 1))
          if (const Entry* p = t.find(o.key.substr(0, dot))) {
            problems_.push_back(o.word + ": " + o.key.substr(0, dot) + " is a value, not a table (" + p->origin.str() +
                                ")");
            return;
          }
        e.extra = true;
        break;
      case Override::Kind::Upsert:
        e.extra = present ? e.extra : true;
        break;
      case Override::Kind::Set:
        break;
    }
    put(o, o.key, e);
  }

  // An inline table value (optim={name="sgd", lr=0.1}) replaces the whole table with its leaves.
  void put(const Override& o, const std::string& key, const Entry& e) {
    if (!e.value.is_object()) {
      out_.tree.set(key, e);
      return;
    }
    out_.tree.erase(key);
    for (const auto& [k, v] : e.value.items()) {
      if (!is_dotted_key(k) || k.find('.') != std::string::npos) {
        problems_.push_back(o.word + ": bad key \"" + k + "\" (keys are names of letters, digits, _ and -)");
        continue;
      }
      Entry sub = e;
      sub.value = v;
      put(o, key + "." + k, sub);
    }
  }

  const ResolveInput& in_;
  std::vector<fs::path> dirs_;  // where env/ and group folders are looked up, recipes' folders first
  std::vector<std::string> problems_;
  bool incomplete_ = false;
  std::string forced_env_;
  std::vector<std::string> groups_;
  std::vector<Override> overrides_;
  std::set<std::string> applied_;
  Resolved out_;
};

}  // namespace

Resolved resolve(const ResolveInput& in) { return Resolver(in).run(); }

}  // namespace kg::config
