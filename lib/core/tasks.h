// The four learning tasks a table can hold (data.task), and a table of which components (losses,
// metrics) support which task, filled by each component's own file at static-initialisation time.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace kg {

// data.task. The order is task_names()'s.
enum class Task { multiclass, multilabel, binary, regression };

const std::vector<std::string>& task_names();  // multiclass, multilabel, binary, regression
const std::string& task_name(Task t);
std::vector<std::string> task_names(const std::vector<Task>& tasks);
// ConfigError naming the allowed tasks.
Task parse_task(const std::string& name);

class TaskTable {
 public:
  bool add(const std::string& component, std::vector<Task> tasks);
  // The tasks `component` supports; empty = not declared (every task).
  const std::vector<Task>& supported(const std::string& component) const;
  // Components declared for `task`, sorted by name.
  std::vector<std::string> components_for(Task task) const;

 private:
  std::map<std::string, std::vector<Task>> table_;
};

}  // namespace kg
