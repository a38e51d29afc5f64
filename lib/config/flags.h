// A command's flags declared as recipe keys are: a Fields<T> (key, type, default, range, choices, doc) whose key
// "grad_checkpointing" is the flag --grad-checkpointing. app/flag_table.h makes each a CLI11 option (--help shows
// its doc, type and default; completion lists it); check_flags() is the one check of the values, with the messages
// recipe keys get.
#pragma once
#include <string>

#include "config/schema.h"

namespace kg::config {

// "grad_checkpointing" -> "--grad-checkpointing".
std::string flag_name(const std::string& key);
// A flag's default as --help shows it ("5", "nchw,channels_last"); "" for a flag (bool) and for an empty default.
std::string flag_default_text(const KeySpec& spec);
// Throws UsageError "--steps: expected an integer >= 1, got 0" when `value` fails the key's checks.
void check_flag(const KeySpec& spec, const json& value);

template <class T>
void check_flags(const Fields<T>& fields, const T& values) {
  const json all = fields.values_of(values);
  for (const auto& spec : fields.schema()) check_flag(spec, all.at(spec.key));
}

}  // namespace kg::config
