// `kgtrain fit --nproc N`: N copies of this command on this machine, each with torchrun's environment
// (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT = a free port),
// so one cell in a Kaggle 2xT4 notebook trains on both GPUs without torchrun.
#pragma once
#include <string>
#include <vector>

namespace kg::app {

// argv without the --nproc option (both "--nproc N" and "--nproc=N").
std::vector<std::string> without_nproc(int argc, char** argv);

// This process's environment with `assignments` ("NAME=value") replacing or adding those names: a child's
// environment, built before fork (setenv after fork in a threaded parent is not async-signal-safe).
std::vector<std::string> environment_with(const std::vector<std::string>& assignments);

// Null-terminated pointers into `strings`, for execv/execve (`strings` must outlive them).
std::vector<char*> c_pointers(std::vector<std::string>& strings);

// A child's waitpid status as a process exit code: its exit status, or 128 + the signal that ended it.
int exit_code_of(int status);

// Runs `args` (args[0] is ignored: the children run this binary) as `nproc` ranks and waits for them.
// When one rank fails, the others are stopped (SIGTERM, then SIGKILL after 30 s) and its exit code
// is returned; SIGINT/SIGTERM to this process reach every rank (each saves at its step boundary).
int launch_local(int nproc, const std::vector<std::string>& args);

}  // namespace kg::app
