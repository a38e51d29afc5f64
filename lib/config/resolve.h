// Recipe resolution: layers, config groups, the environment layer, overrides and interpolation.
// A pure function: everything it reads from the process (environment, file system roots) comes in
// through ResolveInput, so tests can drive it completely.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "config/tree.h"

namespace kg::config {

struct ResolveInput {
  std::vector<std::string> recipe_files;       // layered left to right, each with its `extends` chain
  std::vector<std::string> args;               // command-line words after the recipes: a.b=v, +a.b=v, ~a.b, group=name
  std::map<std::string, std::string> environ;  // the process environment (for env detection and ${env:...})
  std::string builtin_recipes_dir;             // the shipped recipes/ folder ("" when unknown)
  // Whether a path exists (used for the Kaggle probe /kaggle/input); defaults to the real file system.
  std::function<bool(const std::string&)> path_exists;
  // Schema defaults for ${key} references to keys no layer set (either may be empty). The second form
  // receives the merged, not yet interpolated tree, since defaults depend on the components it selects.
  std::function<const json*(const std::string& key)> default_of;
  std::function<const json*(const Tree& merged, const std::string& key)> default_of_in_tree;
};

struct Resolved {
  Tree tree;                        // merged and interpolated
  std::string env_name;             // kaggle | colab | local | forced name
  std::string env_file;             // the env layer file applied ("" when none was found)
  std::vector<std::string> layers;  // every file applied, in order (for show and provenance)
};

// Environment detection: kaggle (KAGGLE_KERNEL_RUN_TYPE set or /kaggle/input exists),
// colab (COLAB_RELEASE_TAG or COLAB_GPU set), else local.
std::string detect_environment(const std::map<std::string, std::string>& environ,
                               const std::function<bool(const std::string&)>& path_exists);

// Parses one TOML file into a tree with file:line:column origins (no extends handling).
// Throws ConfigError (syntax errors with position) or DataError when the file cannot be read.
Tree parse_toml_file(const std::string& path);
Tree parse_toml_string(const std::string& text, const std::string& name_for_errors);

// Parses an override's value as a TOML value; anything that does not parse is a verbatim string.
json parse_override_value(const std::string& text);

// Applies ${key}, ${env:VAR} and ${env:VAR,default} inside string values. A string that is exactly
// one ${key} takes the referenced value with its type. Cycles and unknown keys are ConfigErrors.
void interpolate(Tree& tree, const std::map<std::string, std::string>& environ);
// The same, consulting `default_of` (may be empty) for keys absent from the tree.
void interpolate(Tree& tree, const std::map<std::string, std::string>& environ,
                 const std::function<const json*(const Tree& tree, const std::string& key)>& default_of);

// The whole resolution described in docs/recipes.md. Throws ConfigError listing all problems.
Resolved resolve(const ResolveInput& in);

// The tree as TOML text, grouped by table, each key followed by "# <origin>" when annotate is set.
std::string to_toml(const Tree& tree, bool annotate);
// One value in TOML syntax: "s", 0.001, 1e-05, 3.0, inf, [1, 2], { name = "hflip", p = 0.5 }.
std::string to_toml_value(const json& v);

// Whether `key` is a dotted name whose parts are non-empty runs of [A-Za-z0-9_-].
bool is_dotted_key(const std::string& key);

}  // namespace kg::config
