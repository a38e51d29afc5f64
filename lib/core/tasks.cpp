#include "core/tasks.h"

#include "core/error.h"
#include "core/strings.h"

namespace kg {

const std::vector<std::string>& task_names() {
  static const std::vector<std::string> t{"multiclass", "multilabel", "binary", "regression"};
  return t;
}

void check_task_name(const std::string& task) {
  for (auto& t : task_names())
    if (t == task) return;
  throw ConfigError("data.task = \"" + task + "\" is not a task (allowed: " + join(task_names(), ", ") + ")");
}

bool TaskTable::add(const std::string& component, std::vector<std::string> tasks) {
  table_[component] = std::move(tasks);
  return true;
}

const std::vector<std::string>& TaskTable::supported(const std::string& component) const {
  static const std::vector<std::string> none;
  auto it = table_.find(component);
  return it == table_.end() ? none : it->second;
}

std::vector<std::string> TaskTable::components_for(const std::string& task) const {
  std::vector<std::string> out;
  for (auto& [name, tasks] : table_)
    for (auto& t : tasks)
      if (t == task) out.push_back(name);
  return out;
}

}  // namespace kg
