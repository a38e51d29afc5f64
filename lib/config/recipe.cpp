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

Origin Recipe::origin_of(const std::string& key) const {
  const Entry* e = tree().find(key);
  return e ? e->origin : Origin{};
}

Recipe Recipe::resolved(const std::string& key, json value) const { return amended(key, std::move(value), {}); }

Recipe Recipe::amended(const std::string& key, json value, const std::map<std::string, Origin>& parts) const {
  Entry e;
  if (const Entry* old = tree().find(key)) e = *old;
  if (parts.empty()) e.inner.clear();  // a resolved value: nothing inside it was set anywhere
  e.value = std::move(value);
  for (auto& [part, origin] : parts) e.inner[part] = origin;
  return with_entries({{key, e}});
}

Recipe Recipe::with(const std::vector<std::pair<std::string, json>>& changes, const Origin& origin) const {
  std::vector<std::pair<std::string, Entry>> entries;
  for (auto& [key, value] : changes) entries.emplace_back(key, Entry{value, origin, {}, false});
  return with_entries(entries);
}

}  // namespace kg::config
