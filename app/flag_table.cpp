#include "flag_table.h"

#include <cerrno>
#include <cstdlib>

#include "core/error.h"
#include "core/strings.h"

namespace kg::app {
namespace {

std::string type_label(const config::KeySpec& spec) {
  std::string label = spec.choices.empty() ? "" : "{" + join(spec.choices, ",") + "}";
  switch (spec.type) {
    case config::Type::Int:
      return "INT";
    case config::Type::Float:
      return "FLOAT";
    case config::Type::IntList:
      return "INT";  // CLI11 adds " ..." to a list
    case config::Type::FloatList:
      return "FLOAT";
    default:
      return label.empty() ? "TEXT" : label;
  }
}

bool is_list(config::Type t) {
  return t == config::Type::IntList || t == config::Type::FloatList || t == config::Type::StringList;
}

config::json word_value(const config::KeySpec& spec, const std::string& w) {
  const bool whole = spec.type == config::Type::Int || spec.type == config::Type::IntList;
  if (!whole && spec.type != config::Type::Float && spec.type != config::Type::FloatList) return w;
  char* end = nullptr;
  errno = 0;
  if (whole) {
    const long long v = std::strtoll(w.c_str(), &end, 10);
    KG_CHECK(!w.empty() && *end == '\0' && errno == 0, UsageError, config::flag_name(spec.key),
             ": expected an integer, got \"", w, "\"");
    return static_cast<int64_t>(v);
  }
  const double v = std::strtod(w.c_str(), &end);
  KG_CHECK(!w.empty() && *end == '\0' && errno == 0, UsageError, config::flag_name(spec.key),
           ": expected a number, got \"", w, "\"");
  return v;
}

}  // namespace

CLI::Option* add_table_flag(CLI::App& cmd, const config::KeySpec& spec, FlagWords& sink) {
  const std::string name = spec.short_flag.empty() ? config::flag_name(spec.key)
                                                   : spec.short_flag + "," + config::flag_name(spec.key);
  if (spec.type == config::Type::Bool) return cmd.add_flag(name, sink.on, spec.doc);
  CLI::Option* opt = cmd.add_option(name, sink.words, spec.doc)->type_name(type_label(spec));
  if (is_list(spec.type)) {
    opt->delimiter(',');
    // A list of a fixed length also takes its values as separate words (--size H W).
    if (spec.size > 0) opt->expected(1, spec.size);
  } else
    opt->expected(1);  // one word per use (a second use is refused in flag_value)
  const std::string d = config::flag_default_text(spec);
  if (!d.empty()) opt->default_str(d);
  return opt;
}

config::json flag_value(const config::KeySpec& spec, const CLI::Option& opt, const FlagWords& given) {
  if (spec.type == config::Type::Bool) return given.on ? config::json(true) : config::json();
  if (opt.count() == 0) return nullptr;
  if (is_list(spec.type)) {
    config::json out = config::json::array();
    for (const auto& w : given.words) out.push_back(word_value(spec, w));
    return out;
  }
  KG_CHECK(given.words.size() == 1, UsageError, config::flag_name(spec.key), " takes one value, got ",
           given.words.size(), " (", join(given.words, " "), ")");
  return word_value(spec, given.words[0]);
}

}  // namespace kg::app
