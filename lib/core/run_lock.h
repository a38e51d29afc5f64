// One run folder, one writer: an advisory lock (flock) on <dir>/.kgtrain.lock. A process that writes a run
// (fit, its --resume, lr-find, tta-predict, a sweep) holds it exclusively; one that reads a run's checkpoints
// (tta-predict / pseudo-label --from-run, interpret) holds it shared. A second writer, or a reader while a writer
// works, is refused at once with who holds it. The kernel drops the lock when its process exits or is killed,
// so a SIGKILL leaves nothing stuck. Locks last for the process's lifetime; taking one this process already
// holds is a no-op (a k-fold run, pseudo-label's rounds). The descriptor is close-on-exec: children started by
// --nproc or a sweep do not inherit it.
#pragma once
#include <string>

namespace kg {

enum class LockMode { exclusive, shared };

// Takes the lock of folder `dir` (which must exist) for `command` ("fit", "tta-predict", ...). UsageError
// naming the folder and the holder (command, pid) when another process holds a conflicting lock;
// DataError when the lock file cannot be created or written. A reader of a folder on a read-only
// file system takes no lock where it cannot create the file (no process can be writing there).
void lock_run_dir(const std::string& dir, const std::string& command, LockMode mode = LockMode::exclusive);

}  // namespace kg
