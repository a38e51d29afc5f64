// ${key}, ${env:VAR} and ${env:VAR,default} inside string values, after all layers are merged.
#include <algorithm>
#include <optional>

#include "config/resolve.h"
#include "core/error.h"
#include "core/strings.h"

namespace kg::config {

namespace {

using DefaultFn = std::function<const json*(const Tree&, const std::string&)>;

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

class Interpolator {
 public:
  Interpolator(Tree& tree, const std::map<std::string, std::string>& environ, const DefaultFn& default_of)
      : tree_(tree), environ_(environ), default_of_(default_of) {}

  void run() {
    for (auto& kv : tree_.entries()) resolve_leaf(kv.first);
    if (!problems_.empty()) throw ConfigError(problems_);
  }

 private:
  enum class State { InProgress, Done, Failed };

  // What a problem message cites: the leaf being resolved and where it was written.
  struct Ctx {
    std::string key;
    std::string origin;
  };

  void problem(const Ctx& ctx, const std::string& what) {
    std::string p = ctx.key + ": " + what + " (" + ctx.origin + ")";
    for (const auto& q : problems_)
      if (q == p) return;
    problems_.push_back(p);
  }

  std::string origin_of(const std::string& key) const {
    const Entry* e = tree_.find(key);
    return e ? e->origin.str() : Origin::defaults().str();
  }

  // Resolves a leaf in place (or a default, kept aside); false when it failed. A failure is
  // reported once, where it happens, so the leaves depending on it fail silently.
  bool resolve_leaf(const std::string& key) {
    auto st = state_.find(key);
    if (st != state_.end()) {
      if (st->second == State::Done) return true;
      if (st->second == State::Failed) return false;
      std::string chain;
      for (auto it = std::find(stack_.begin(), stack_.end(), key); it != stack_.end(); ++it) chain += *it + " -> ";
      problem({key, origin_of(key)}, "interpolation cycle " + chain + key);
      return false;
    }
    Entry* e = tree_.entries().count(key) ? &tree_.entries().at(key) : nullptr;
    json v = e ? e->value : defaults_.at(key);
    state_[key] = State::InProgress;
    stack_.push_back(key);
    bool ok = resolve_json(v, {key, origin_of(key)});
    stack_.pop_back();
    state_[key] = ok ? State::Done : State::Failed;
    if (ok) (e ? e->value : defaults_.at(key)) = std::move(v);
    return ok;
  }

  bool resolve_json(json& v, const Ctx& ctx) {
    if (v.is_string()) {
      auto r = resolve_string(v.get_ref<const std::string&>(), ctx);
      if (!r) return false;
      v = std::move(*r);
      return true;
    }
    bool ok = true;
    if (v.is_array() || v.is_object())
      for (auto& x : v) ok = resolve_json(x, ctx) && ok;
    return ok;
  }

  std::optional<json> resolve_string(const std::string& s, const Ctx& ctx) {
    if (s.find("${") == std::string::npos) return json(s);
    // Exactly one reference: keep the referenced value's type (epochs = "${base.epochs}" stays an int).
    if (s.size() > 3 && s.compare(0, 2, "${") == 0 && s.find('}') == s.size() - 1)
      return evaluate(s.substr(2, s.size() - 3), ctx);
    std::string out;
    bool ok = true;
    for (size_t i = 0; i < s.size();) {
      if (s.compare(i, 3, "\\${") == 0) {
        out += "${";
        i += 3;
      } else if (s.compare(i, 2, "${") == 0) {
        size_t close = s.find('}', i + 2);
        if (close == std::string::npos) {
          problem(ctx, "unterminated ${ in \"" + s + "\"");
          return std::nullopt;
        }
        auto v = evaluate(s.substr(i + 2, close - i - 2), ctx);
        if (v) out += v->is_string() ? v->get<std::string>() : to_toml_value(*v);
        ok = ok && v.has_value();
        i = close + 1;
      } else {
        out += s[i++];
      }
    }
    if (!ok) return std::nullopt;
    return json(out);
  }

  std::optional<json> evaluate(const std::string& ref, const Ctx& ctx) {
    if (ref.compare(0, 4, "env:") == 0) {
      std::string body = ref.substr(4);
      size_t comma = body.find(',');
      std::string name = trim(body.substr(0, comma));
      if (name.empty()) {
        problem(ctx, "${" + ref + "} names no environment variable");
        return std::nullopt;
      }
      auto it = environ_.find(name);
      if (it != environ_.end() && invalid_utf8_at(it->second) != std::string::npos) {
        problem(ctx, "environment variable " + name + " is not UTF-8 text: ${" + ref + "} cannot use it");
        return std::nullopt;
      }
      if (it != environ_.end()) return json(it->second);
      if (comma != std::string::npos) return json(trim(body.substr(comma + 1)));
      problem(ctx, "environment variable " + name + " is not set and ${" + ref +
                       "} has no default (write ${env:" + name + ",default})");
      return std::nullopt;
    }
    if (!is_dotted_key(ref)) {
      problem(ctx, "bad reference ${" + ref + "} (expected ${key}, ${env:VAR} or ${env:VAR,default})");
      return std::nullopt;
    }
    if (!tree_.has(ref) && !defaults_.count(ref)) {
      const json* d = default_of_ ? default_of_(tree_, ref) : nullptr;
      if (!d) {
        bool table = !tree_.keys_under(ref).empty();
        problem(ctx, "${" + ref + "} " + (table ? "names a table, not a value" : "refers to an unknown key"));
        return std::nullopt;
      }
      defaults_[ref] = *d;
    }
    if (!resolve_leaf(ref)) return std::nullopt;
    const Entry* e = tree_.find(ref);
    return e ? e->value : defaults_.at(ref);
  }

  Tree& tree_;
  const std::map<std::string, std::string>& environ_;
  const DefaultFn& default_of_;
  std::map<std::string, State> state_;
  std::map<std::string, json> defaults_;  // referenced defaults, resolved too (they may hold ${...})
  std::vector<std::string> stack_;
  std::vector<std::string> problems_;
};

}  // namespace

void interpolate(Tree& tree, const std::map<std::string, std::string>& environ, const DefaultFn& default_of) {
  Interpolator(tree, environ, default_of).run();
}

void interpolate(Tree& tree, const std::map<std::string, std::string>& environ) {
  interpolate(tree, environ, DefaultFn());
}

}  // namespace kg::config
