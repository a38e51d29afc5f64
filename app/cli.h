// The command line: argv -> resolved, validated recipe -> jobs::run_*. CLI11 lives here only.
#pragma once
#include <string>

namespace kg::app {

// Returns the process exit code; never throws.
int run(int argc, char** argv);

// The kgtrain executable that fit --nproc and sweeps start as their children: /proc/self/exe unless set. The tests,
// which run commands in their own process (linking app/), set the kgtrain binary.
void set_executable(const std::string& path);
const std::string& executable();

}  // namespace kg::app
