// [gpu] test cases start with KG_REQUIRE_GPU(). Without a CUDA device the case prints the skip marker (a Catch2
// warning, which the console reporter always shows) and returns; ctest matches the marker
// (SKIP_REGULAR_EXPRESSION in CMakeLists.txt) and reports the case as skipped instead of passed.
#pragma once
#include <catch2/catch.hpp>

#include "device/device.h"

#define KG_TEST_SKIPPED_MARKER "kgtrain-test-skipped"

#define KG_REQUIRE_GPU()                               \
  do {                                                 \
    if (!kg::device::cuda_available()) {               \
      WARN(KG_TEST_SKIPPED_MARKER ": no CUDA device"); \
      return;                                          \
    }                                                  \
  } while (0)
