#include "config/flags.h"

#include "core/error.h"
#include "core/strings.h"

namespace kg::config {

std::string flag_name(const std::string& key) {
  std::string out = "--" + key;
  for (auto& c : out)
    if (c == '_') c = '-';
  return out;
}

std::string flag_default_text(const KeySpec& spec) {
  const json& d = spec.default_value;
  if (spec.type == Type::Bool || d.is_null()) return "";
  if (d.is_string()) return d.get<std::string>();
  if (d.is_array()) {
    std::vector<std::string> parts;
    for (const auto& x : d) parts.push_back(x.is_string() ? x.get<std::string>() : x.dump());
    return join(parts, ",");
  }
  return d.dump();
}

void check_flag(const KeySpec& spec, const json& value) {
  const std::string problem = check_value(spec, value);
  KG_CHECK(problem.empty(), UsageError, flag_name(spec.key), ": ", problem);
}

}  // namespace kg::config
