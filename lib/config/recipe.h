// The recipe a job runs: resolved, validated once (defaults filled in), then immutable. Components read their
// typed options from it (recipe.get<train::TrainOptions>()), decoded once per recipe and shared by its copies.
// A changed recipe (auto batch size, a pseudo-label round's extra rows, show-batch's one-batch settings) is a new
// one made by with(), which validates the changed tree again: no code edits a recipe in place.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <typeindex>
#include <utility>
#include <vector>

#include "config/schema.h"
#include "config/tree.h"

namespace kg::config {

class Recipe {
 public:
  // An empty recipe: every get<>() gives the schema's defaults, at() finds nothing. a session::Session's default.
  Recipe();
  // Validates `merged` (throws ConfigError listing every problem); warnings() keeps what validation warned about.
  static Recipe validate(const Tree& merged);

  // The whole tree, for what serializes or fingerprints a recipe (recipe.toml, provenance, TensorBoard's hparams).
  // Components read values through their typed options (get<>()), never from the tree: scripts/check_code_shape.py
  // refuses tree().at()/find() outside lib/config.
  const Tree& tree() const { return state_->tree; }
  const std::vector<std::string>& warnings() const { return state_->warnings; }
  // Where `key` was set: a layer's file:line, the command line, or Origin::Kind::Default when nothing set it.
  Origin origin_of(const std::string& key) const;
  // A section's or component's keys, for a registry's factory: recipe.section("model").
  Options section(const std::string& prefix) const { return Options(&state_->tree, prefix); }

  // The typed options of a section, decoded on first use (its cross-key checks throw ConfigError then) and kept.
  // A section's options struct says how it is decoded: `static TrainOptions load(const config::Tree& recipe);`.
  template <class Opt>
  const Opt& get() const {
    const std::type_index key(typeid(Opt));
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      for (auto& [k, v] : state_->decoded)
        if (k == key) return *static_cast<const Opt*>(v.get());
    }
    auto made = std::make_shared<const Opt>(Opt::load(tree()));
    std::lock_guard<std::mutex> lock(state_->mu);
    for (auto& [k, v] : state_->decoded)
      if (k == key) return *static_cast<const Opt*>(v.get());
    state_->decoded.emplace_back(key, made);
    return *made;
  }

  // A new recipe with `changes` (key -> value, each set at `origin`) applied and validated again.
  Recipe with(const std::vector<std::pair<std::string, json>>& changes, const Origin& origin) const;
  // A multi-form key resolved to the value it stands for (train.batch_size "auto" -> 32, optim.lr "find" -> 3e-4):
  // `key` set to `value`, keeping where it was set, validated again.
  Recipe resolved(const std::string& key, json value) const;
  // `key`'s value replaced by `value`, keeping where it was set, with `parts` ("[2].mean" -> origin) recording
  // where the changed parts of it came from (model.pretrained's config.json filling in data.augment's normalize).
  Recipe amended(const std::string& key, json value, const std::map<std::string, Origin>& parts) const;
  // A new recipe from `edit` applied to a copy of the tree (keys set or erased), validated again.
  Recipe edited(const std::function<void(Tree&)>& edit) const;

 private:
  Recipe with_entries(const std::vector<std::pair<std::string, Entry>>& changes) const;
  struct State {
    Tree tree;
    std::vector<std::string> warnings;
    std::mutex mu;
    std::vector<std::pair<std::type_index, std::shared_ptr<const void>>> decoded;
  };
  explicit Recipe(std::shared_ptr<State> s) : state_(std::move(s)) {}
  std::shared_ptr<State> state_;
};

}  // namespace kg::config
