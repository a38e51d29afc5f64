#include "config/registry.h"

#include "core/error.h"
#include "core/strings.h"

namespace kg {

std::map<std::string, const RegistryBase*>& RegistryBase::mutable_all() {
  static std::map<std::string, const RegistryBase*> all;
  return all;
}
const std::map<std::string, const RegistryBase*>& RegistryBase::all() { return mutable_all(); }

RegistryBase::RegistryBase(std::string kind) : kind_(std::move(kind)) {
  if (mutable_all().count(kind_)) duplicates_.push_back("(the registry itself)");
  mutable_all()[kind_] = this;
}

const RegistryBase* RegistryBase::by_kind(const std::string& kind) {
  auto it = all().find(kind);
  return it == all().end() ? nullptr : it->second;
}

const ComponentInfo* RegistryBase::find_info(const std::string& name) const {
  for (auto* c : components())
    if (c->name == name) return c;
  return nullptr;
}

std::vector<std::string> RegistryBase::names() const {
  std::vector<std::string> out;
  for (auto* c : components()) out.push_back(c->name);
  return out;
}

std::string RegistryBase::unavailable(const std::string& name) const {
  auto it = unavailable_.find(name);
  return it == unavailable_.end() ? "" : kind_ + " \"" + name + "\" is not in this build: " + it->second;
}

void RegistryBase::unknown(const std::string& name, const std::string& where) const {
  if (auto why = unavailable(name); !why.empty()) throw ConfigError(why + (where.empty() ? "" : " (at " + where + ")"));
  auto known = names();
  throw ConfigError("unknown " + kind_ + " \"" + name + "\"" + (where.empty() ? "" : " at " + where) +
                    " (known: " + join(known, ", ") + ")" + did_you_mean(name, known));
}

void RegistryBase::check_all() {
  std::vector<std::string> problems;
  for (auto& [kind, r] : all())
    for (auto& d : r->duplicates_) problems.push_back(kind + " \"" + d + "\" is registered twice");
  if (!problems.empty()) throw InternalError("component registry: " + join(problems, "; "));
}

}  // namespace kg
