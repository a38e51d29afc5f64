// toml++'s implementation, compiled once into kgtrain. Debian builds toml++ as a shared library
// (libtomlplusplus.so.3); compiling it here means a kgtrain binary copied elsewhere (the Docker runtime stage, a
// Kaggle dataset, a machine with only PyTorch) needs no toml++ of its own. Built without the precompiled header,
// which includes toml++ without TOML_IMPLEMENTATION.
#define TOML_IMPLEMENTATION
#include <toml++/toml.h>

static_assert(TOML_LIB_MAJOR >= 3, "kgtrain needs toml++ 3.x");
