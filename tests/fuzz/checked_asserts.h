// Force-included in sanitizer builds (CMake KGTRAIN_SANITIZE): NDEBUG stays defined, as LibTorch was built (its
// headers lay structs out differently without it), yet nlohmann/json's and toml++'s internal assertions still stop
// the process, so a const json operator[] on a missing key or a toml++ invariant is a finding, not silent.
#pragma once
#define JSON_ASSERT(x) ((x) ? (void)0 : __builtin_trap())
#define TOML_ASSERT(x) ((x) ? (void)0 : __builtin_trap())
