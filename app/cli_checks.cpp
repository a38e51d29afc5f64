#include "cli_checks.h"

#include <cmath>
#include <cstdlib>
#include <string>

#include "core/strings.h"

namespace kg::app {

CLI::Validator at_least(double lo, bool whole, bool exclusive) {
  const std::string bound = lo == std::floor(lo) ? std::to_string(static_cast<long long>(lo)) : format_double(lo);
  const std::string what = std::string(whole ? "a whole number" : "a number") + (exclusive ? " > " : " >= ") + bound;
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        const std::string t = trim(s);
        char* end = nullptr;
        const double v = std::strtod(t.c_str(), &end);
        const bool number = !t.empty() && end == t.c_str() + t.size() && std::isfinite(v);
        if (number && (exclusive ? v > lo : v >= lo) && (!whole || v == std::floor(v))) return "";
        return "expected " + what + ", got \"" + s + "\"";
      },
      what);
}

void one_value_per_flag(CLI::App& app) {
  const CLI::Validator non_empty(
      [](std::string& v) { return v.empty() ? std::string("expected a value, got ''") : std::string(); }, "",
      "non-empty");
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    for (CLI::Option* opt : sub->get_options())
      if (opt->nonpositional()) {
        opt->allow_extra_args(false);
        if (opt->get_expected_min() > 0) opt->check(non_empty);
      }
}

}  // namespace kg::app
