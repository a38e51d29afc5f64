// `kgtrain completion bash|zsh`: a shell completion script generated from the command table (every
// command's flags, read from its own add_flags) and the registries (recipe keys, component names, string
// choices), so it never lists a flag or key kgtrain does not have.
#pragma once
#include <string>

namespace kg::app {

// The script for `shell` ("bash" or "zsh"; zsh loads the bash function through bashcompinit).
// UsageError for another shell.
std::string completion_script(const std::string& shell);

}  // namespace kg::app
