#include "config/sections.h"

#include "config/registry.h"
#include "core/error.h"
#include "core/strings.h"

namespace kg::config {
namespace {
std::map<std::string, SectionInfo>& mutable_sections() {
  static std::map<std::string, SectionInfo> s;
  return s;
}
std::vector<std::string>& duplicate_sections() {
  static std::vector<std::string> d;
  return d;
}
}  // namespace

const std::map<std::string, SectionInfo>& sections() { return mutable_sections(); }

bool add_section(SectionInfo info) {
  auto& all = mutable_sections();
  if (all.count(info.name)) {
    duplicate_sections().push_back(info.name);
    return false;
  }
  all.emplace(info.name, std::move(info));
  return true;
}

void check_sections() {
  std::vector<std::string> problems;
  for (auto& d : duplicate_sections()) problems.push_back("section \"" + d + "\" is declared twice");
  for (auto& [name, s] : sections()) {
    if (!s.component_kind.empty() && !RegistryBase::by_kind(s.component_kind))
      problems.push_back("section \"" + name + "\" selects from unknown registry \"" + s.component_kind + "\"");
    for (auto& k : s.schema)
      if (!k.component_kind.empty() && !RegistryBase::by_kind(k.component_kind))
        problems.push_back(name + "." + k.key + " names unknown registry \"" + k.component_kind + "\"");
  }
  if (!problems.empty()) throw InternalError("recipe schema: " + join(problems, "; "));
}

}  // namespace kg::config
