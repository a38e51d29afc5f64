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

std::vector<std::string> task_names(const std::vector<Task>& tasks) {
  std::vector<std::string> out;
  for (Task t : tasks) out.push_back(task_name(t));
  return out;
}

bool TaskTable::add(const std::string& component, std::vector<Task> tasks) {
  table_[component] = std::move(tasks);
  return true;
}

const std::vector<Task>& TaskTable::supported(const std::string& component) const {
  static const std::vector<Task> none;
  auto it = table_.find(component);
  return it == table_.end() ? none : it->second;
}

std::vector<std::string> TaskTable::components_for(Task task) const {
  std::vector<std::string> out;
  for (auto& [name, tasks] : table_)
    for (auto& t : tasks)
      if (t == task) out.push_back(name);
  return out;
}

}  // namespace kg
