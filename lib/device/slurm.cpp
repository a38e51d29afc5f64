#include "device/slurm.h"

#include <cctype>

#include "core/error.h"
#include "device/distributed.h"

namespace kg::device {
namespace {

UsageError malformed(const std::string& var, const std::string& value, const std::string& want) {
  return UsageError(var + "=" + value + ": expected " + want + " (Slurm sets it for srun's tasks)");
}

}  // namespace

std::string slurm_first_host(const std::string& nodelist, const std::string& var) {
  const std::string want = "a Slurm node list such as node[01-04,07],gpu5";
  if (nodelist.empty()) throw malformed(var, nodelist, want);
  std::string host;
  for (size_t i = 0; i < nodelist.size(); ++i) {
    const char c = nodelist[i];
    if (c == ',') break;  // the first entry's end
    if (c != '[') {
      if (c == ']') throw malformed(var, nodelist, want);
      host += c;
      continue;
    }
    // A bracket group: its first range's first number, zero padding kept ("[01-04,07]" -> "01").
    const size_t close = nodelist.find(']', i);
    if (close == std::string::npos) throw malformed(var, nodelist, want);
    const std::string group = nodelist.substr(i + 1, close - i - 1);
    size_t n = 0;
    while (n < group.size() && std::isdigit(static_cast<unsigned char>(group[n]))) ++n;
    if (n == 0) throw malformed(var, nodelist, want);
    host += group.substr(0, n);
    i = close;
  }
  if (host.empty()) throw malformed(var, nodelist, want);
  return host;
}

std::vector<int> slurm_tasks_per_node(const std::string& spec, const std::string& var) {
  const std::string want = "tasks per node such as 2(x3),1";
  std::vector<int> out;
  size_t i = 0;
  auto number = [&]() -> long {
    const size_t start = i;
    while (i < spec.size() && std::isdigit(static_cast<unsigned char>(spec[i]))) ++i;
    if (i == start || i - start > 6) throw malformed(var, spec, want);
    return std::stol(spec.substr(start, i - start));
  };
  while (i < spec.size()) {
    const long tasks = number();
    long times = 1;
    if (i < spec.size() && spec[i] == '(') {
      if (spec.compare(i, 2, "(x") != 0) throw malformed(var, spec, want);
      i += 2;
      times = number();
      if (i >= spec.size() || spec[i] != ')') throw malformed(var, spec, want);
      ++i;
    }
    if (tasks < 1 || times < 1 || out.size() + static_cast<size_t>(times) > 65536) throw malformed(var, spec, want);
    out.insert(out.end(), static_cast<size_t>(times), static_cast<int>(tasks));
    if (i < spec.size()) {
      if (spec[i] != ',' || i + 1 == spec.size()) throw malformed(var, spec, want);
      ++i;
    }
  }
  if (out.empty()) throw malformed(var, spec, want);
  return out;
}

using detail::env_int;
using detail::env_value;

// srun's tasks without torchrun: SLURM_PROCID, SLURM_STEP_NUM_TASKS (the step's tasks; srun sets it, a batch
// script's own shell does not, so kgtrain started there stays one process), SLURM_LOCALID, the tasks on this node
// from SLURM_STEP_TASKS_PER_NODE at SLURM_NODEID, and the store at MASTER_ADDR:MASTER_PORT, else the node list's
// first host and 15000 + the job id's last 4 digits (Lightning's SLURMEnvironment rule).
DistEnv slurm_env(const std::map<std::string, std::string>& environ) {
  DistEnv e;
  e.launcher = "slurm";
  auto need = [&](const std::string& name) -> const std::string& {
    const std::string* v = env_value(environ, name);
    if (!v) throw UsageError(name + " is not set: srun sets it for each task of a step with SLURM_STEP_NUM_TASKS > 1");
    return *v;
  };
  e.world_size = env_int(environ, "SLURM_STEP_NUM_TASKS", 1, 65536, "the step's number of tasks");
  e.rank = env_int(environ, "SLURM_PROCID", 0, e.world_size - 1, "this task's rank, below SLURM_STEP_NUM_TASKS");
  need("SLURM_LOCALID");
  e.local_rank = env_int(environ, "SLURM_LOCALID", 0, e.world_size - 1, "this task's rank on its node");
  e.local_world_size = e.world_size;
  const char* per_node_var = env_value(environ, "SLURM_STEP_TASKS_PER_NODE") ? "SLURM_STEP_TASKS_PER_NODE"
                             : env_value(environ, "SLURM_TASKS_PER_NODE")    ? "SLURM_TASKS_PER_NODE"
                                                                             : nullptr;
  if (per_node_var) {
    const auto per_node = slurm_tasks_per_node(need(per_node_var), per_node_var);
    const int node = env_value(environ, "SLURM_NODEID")
                         ? env_int(environ, "SLURM_NODEID", 0, static_cast<int>(per_node.size()) - 1,
                                   ("this node's index in " + std::string(per_node_var)).c_str())
                         : 0;
    e.local_world_size = per_node[static_cast<size_t>(node)];
    if (e.local_rank >= e.local_world_size)
      throw UsageError("SLURM_LOCALID=" + std::to_string(e.local_rank) + ": expected a rank below this node's " +
                       std::to_string(e.local_world_size) + " tasks (" + per_node_var + ")");
  }
  if (const std::string* addr = env_value(environ, "MASTER_ADDR")) {
    e.master_addr = *addr;
  } else {
    const char* list_var = env_value(environ, "SLURM_STEP_NODELIST")  ? "SLURM_STEP_NODELIST"
                           : env_value(environ, "SLURM_JOB_NODELIST") ? "SLURM_JOB_NODELIST"
                                                                      : "SLURM_NODELIST";
    e.master_addr = slurm_first_host(need(list_var), list_var);
  }
  if (env_value(environ, "MASTER_PORT")) {
    e.master_port = env_int(environ, "MASTER_PORT", 1, 65535, "a TCP port");
  } else {
    const std::string& job = need("SLURM_JOB_ID");
    if (job.find_first_not_of("0123456789") != std::string::npos)
      throw UsageError("SLURM_JOB_ID=" + job + ": expected a number (or set MASTER_PORT)");
    e.master_port = 15000 + std::stoi(job.size() > 4 ? job.substr(job.size() - 4) : job);
  }
  return e;
}

}  // namespace kg::device
