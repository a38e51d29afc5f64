#include "core/tasks.h"

#include "core/error.h"
#include "core/strings.h"

namespace kg {

const std::vector<std::string>& task_names() {
  static const std::vector<std::string> t{"multiclass", "multilabel", "binary", "regression"};
  return t;
}

const std::string& task_name(Task t) { return task_names().at(static_cast<size_t>(t)); }

Task parse_task(const std::string& name) {
  const auto& names = task_names();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<Task>(i);
  throw ConfigError("data.task = \"" + name + "\" is not a task (allowed: " + join(names, ", ") + ")");
}

void check_task_name(const std::string& task) { parse_task(task); }

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
