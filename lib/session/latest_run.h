// `<paths.runs>/latest`: the newest run `fit` created under the runs root, so the next notebook cell can say
// `--from-run latest` instead of copying a timestamped path. It is a relative symbolic link
// (`latest -> <run.name>/<UTC time>-fit`), replaced atomically (a temporary link renamed over it); on a file
// system without symbolic links it is a small text file holding the same relative path. Readers accept both.
#pragma once
#include <string>

namespace kg::session {

// The word commands accept in place of a run folder.
inline constexpr const char* kLatestWord = "latest";

// Points <runs_root>/latest at `run_dir` (a folder inside runs_root). Never throws: what prevents it (a real
// folder named latest, e.g. run.name = "latest"; a read-only root) is returned as a warning ("" = done).
std::string point_latest(const std::string& runs_root, const std::string& run_dir);

// The run folder <runs_root>/latest names. UsageError "no run under DIR yet: run kgtrain fit first" when
// there is no link, and a UsageError naming the folder when it points at one that no longer exists.
std::string resolve_latest(const std::string& runs_root);

}  // namespace kg::session
