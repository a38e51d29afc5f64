// Environment variables that make hardware-only paths run on any machine, for the tests (docs/devices.md
// "Devices, mixed precision and memory"):
//   KGTRAIN_FAKE_OOM_ABOVE=N        training micro-batches of more than N images fail as a CUDA out-of-memory error
//   KGTRAIN_EMULATE_CUDA_GRAPHS=1   device.cuda_graphs replays the step by running it again (no speed-up)
#pragma once
#include <map>
#include <string>

#include "jobs/job.h"

namespace kg::app {

// Sets `o`'s test hooks from `environ`; UsageError for a malformed value.
void read_test_hooks(const std::map<std::string, std::string>& environ, jobs::JobOptions& o);

}  // namespace kg::app
