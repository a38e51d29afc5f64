// Slurm's job-step environment, as `srun kgtrain fit ...` sees it (no torchrun in between): which host serves the
// rendezvous and how many tasks share this node. Slurm writes both compressed: a node list "gpu[01-04,07],cpu5"
// (its first host: gpu01) and tasks per node "2(x3),1" (two tasks on each of the first three nodes, one on the
// fourth). Pure string functions; dist_env_from (device/distributed.h) maps SLURM_PROCID, SLURM_STEP_NUM_TASKS,
// SLURM_LOCALID and these to a DistEnv.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "device/distributed.h"

namespace kg::device {

// The first host of a Slurm node list ("node[01-04]" -> "node01", "a,b" -> "a", "r[1-2]-n[3,5]" -> "r1-n3"). A
// UsageError naming `var` when it is empty or its brackets do not close.
std::string slurm_first_host(const std::string& nodelist, const std::string& var);

// "2(x3),1" -> {2, 2, 2, 1}. A UsageError naming `var` when it is malformed.
std::vector<int> slurm_tasks_per_node(const std::string& spec, const std::string& var);

// srun's tasks as a DistEnv (dist_env_from's Slurm branch, documented there).
DistEnv slurm_env(const std::map<std::string, std::string>& environ);

namespace detail {  // distributed.cpp's readers of launcher variables, shared with slurm_env
int env_int(const std::map<std::string, std::string>& environ, const std::string& name, int lo, int hi,
            const char* what);
const std::string* env_value(const std::map<std::string, std::string>& environ, const std::string& name);
}  // namespace detail

}  // namespace kg::device
