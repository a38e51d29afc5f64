// The recipe as a flat map of dotted keys to leaf values, each with the place that set it.
// Tables deep-merge by construction (their leaves are separate entries); scalars and arrays are
// leaves and replace as a whole (a one-element data.augment replaces the base list).
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kg::config {

using json = nlohmann::json;

// Where a value came from: a file position, the command line, an environment layer or a default.
struct Origin {
  enum class Kind { Default, File, CommandLine, EnvLayer } kind = Kind::Default;
  std::string file;  // for File (as the user spelled the path) and EnvLayer (the layer's file)
  int line = 0;      // 1-based, 0 when unknown
  int column = 0;
  std::string layer;  // for EnvLayer: the environment name (kaggle, colab, local, ...)

  static Origin defaults() { return {}; }
  static Origin command_line() { return {Kind::CommandLine, "", 0, 0, ""}; }
  static Origin at(std::string file, int line, int column) { return {Kind::File, std::move(file), line, column, ""}; }

  // "recipes/x.toml:7:14", "command line", "env layer kaggle (recipes/env/kaggle.toml:3:1)", "default".
  std::string str() const;
};

struct Entry {
  json value;                           // bool, integer, float, string or array (arrays may hold tables)
  Origin origin;                        // where the whole value was set
  std::map<std::string, Origin> inner;  // origins inside an array: "[2]", "[2].p" -> position
  bool extra = false;                   // added with +key=value: not checked against the schema
};

class Tree {
 public:
  using Map = std::map<std::string, Entry>;

  bool has(const std::string& key) const { return map_.count(key) > 0; }
  const Entry* find(const std::string& key) const;
  const Entry& at(const std::string& key) const;  // throws InternalError when absent

  // Sets a leaf, removing any leaves below `key` and any leaf that is a prefix table of it
  // (a scalar replaced by a table or the other way round).
  void set(const std::string& key, Entry e);
  // Removes `key` and every leaf below it; returns how many leaves were removed.
  size_t erase(const std::string& key);
  // Later layer wins: every leaf of `other` is set on this tree.
  void merge(const Tree& other);

  // Keys directly or indirectly below `prefix` ("optim" -> "optim.lr", "optim.inner.name").
  std::vector<std::string> keys_under(const std::string& prefix) const;

  const Map& entries() const { return map_; }
  Map& entries() { return map_; }

 private:
  Map map_;
};

}  // namespace kg::config
