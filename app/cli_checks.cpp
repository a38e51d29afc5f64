#include "cli_checks.h"

namespace kg::app {

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
