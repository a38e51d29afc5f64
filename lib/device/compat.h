// Every LibTorch 1.13 vs 2.x difference lives here (Debian ships 1.13.1; PyTorch installs bring 2.x).
#pragma once
#include <torch/version.h>

#define KG_TORCH_VERSION_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace kg::compat {

inline const char* torch_version() { return TORCH_VERSION; }

}  // namespace kg::compat
