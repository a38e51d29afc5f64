#include "train/callback.h"

#include <algorithm>

namespace kg::train {

CallbackRegistry& callback_registry() {
  static CallbackRegistry r("callback");
  return r;
}

std::vector<CallbackPtr> build_callbacks(const config::Recipe& recipe) {
  std::vector<CallbackPtr> out;
  for (auto* c : callback_registry().components())
    if (auto cb = callback_registry().create(c->name, recipe.section(c->name), recipe)) out.push_back(std::move(cb));
  std::stable_sort(out.begin(), out.end(),
                   [](const CallbackPtr& a, const CallbackPtr& b) { return a->order() < b->order(); });
  return out;
}

}  // namespace kg::train
