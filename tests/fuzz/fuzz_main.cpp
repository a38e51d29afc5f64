// libFuzzer's entry point for one harness (KG_FUZZ_TARGET, set per executable by CMake).
#include <torch/torch.h>

#include "fuzz/harnesses.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  at::set_num_threads(1);  // one input at a time; no thread pool to race with
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return kg::fuzz::KG_FUZZ_TARGET(data, size); }
