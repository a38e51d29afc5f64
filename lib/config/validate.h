// Strict schema check of a merged recipe: every problem at once, each with its origin and a suggestion.
#pragma once
#include <string>
#include <vector>

#include "config/tree.h"

namespace kg::config {

struct Validated {
  Tree tree;                          // the recipe with defaults filled in (origin "default")
  std::vector<std::string> warnings;  // keys of another component of the same kind, ...
};

// Throws ConfigError listing all problems: unknown keys (with did-you-mean over declared keys),
// wrong types, out-of-range values, unknown component names, bad component tables in lists.
Validated validate(const Tree& merged);

// The value a key has by default given the components `tree` selects (nullptr if undeclared).
// Used for ${key} interpolation of keys no layer set.
const json* default_of(const Tree& tree, const std::string& key);

// Every key the schema declares for the sections and the selected components, for suggestions.
std::vector<std::string> declared_keys(const Tree& tree);

}  // namespace kg::config
