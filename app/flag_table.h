// A command's flags from a table declared once in lib/ (config::Fields<T>, as recipe keys are; config/flags.h):
// each key becomes the CLI11 option --key (dashes for underscores) with its doc, type and default in --help and
// in completion. Only parsing happens here: the job checks the values with config::check_flags, the one check
// (in-process callers get the same), so a flag's range or choices are written nowhere else.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "config/flags.h"

namespace kg::app {

// What the command line gave for one key: its words, and whether a bool flag was set.
struct FlagWords {
  std::vector<std::string> words;
  bool on = false;
};
// The CLI11 option for `spec`, writing into `sink`.
CLI::Option* add_table_flag(CLI::App& cmd, const config::KeySpec& spec, FlagWords& sink);
// The value the words give, as the key's JSON type ("--steps: expected an integer, got \"x\"" otherwise); null
// when the flag was not given.
config::json flag_value(const config::KeySpec& spec, const CLI::Option& opt, const FlagWords& given);

template <class T>
class FlagTable {
 public:
  explicit FlagTable(const config::Fields<T>& fields) : fields_(fields), given_(fields.schema().size()) {}
  // Every key of the table as a flag of `cmd`, or only the keys `only` names.
  void add_to(CLI::App& cmd, const std::vector<std::string>& only = {}) {
    options_.assign(given_.size(), nullptr);
    for (size_t i = 0; i < given_.size(); ++i) {
      const auto& spec = fields_.schema()[i];
      if (only.empty() || std::find(only.begin(), only.end(), spec.key) != only.end())
        options_[i] = add_table_flag(cmd, spec, given_[i]);
    }
  }
  // T{} with the given flags' values in place.
  T values() const {
    config::json table = config::json::object();
    for (size_t i = 0; i < options_.size(); ++i) {
      const auto& spec = fields_.schema()[i];
      if (!options_[i]) continue;
      if (config::json v = flag_value(spec, *options_[i], given_[i]); !v.is_null()) table[spec.key] = std::move(v);
    }
    return fields_.load(config::Options(table, "the command line"));
  }

 private:
  const config::Fields<T>& fields_;
  std::vector<FlagWords> given_;
  std::vector<CLI::Option*> options_;
};

}  // namespace kg::app
