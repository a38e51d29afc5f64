// The command line: argv -> resolved, validated recipe -> jobs::run_*. CLI11 lives here only.
#pragma once

namespace kg::app {

// Returns the process exit code; never throws.
int run(int argc, char** argv);

}  // namespace kg::app
