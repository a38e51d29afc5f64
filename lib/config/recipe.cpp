#include "config/recipe.h"

#include "config/validate.h"

namespace kg::config {

Recipe::Recipe() : state_(std::make_shared<State>()) {}

Recipe Recipe::validate(const Tree& merged) {
  auto v = config::validate(merged);
  auto s = std::make_shared<State>();
  s->tree = std::move(v.tree);
  s->warnings = std::move(v.warnings);
  return Recipe(std::move(s));
}

Recipe Recipe::edited(const std::function<void(Tree&)>& edit) const {
  Tree t = tree();
  edit(t);
  return validate(t);
}

Recipe Recipe::with_entries(const std::vector<std::pair<std::string, Entry>>& changes) const {
  return edited([&](Tree& t) {
    for (auto& [key, e] : changes) t.set(key, e);
  });
}

Recipe Recipe::with(const std::vector<std::pair<std::string, json>>& changes, const Origin& origin) const {
  std::vector<std::pair<std::string, Entry>> entries;
  for (auto& [key, value] : changes) entries.emplace_back(key, Entry{value, origin, {}, false});
  return with_entries(entries);
}

}  // namespace kg::config
