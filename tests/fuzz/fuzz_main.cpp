// libFuzzer's entry point for every harness in one executable (kgtrain_fuzz; one link, not one per harness):
// KG_FUZZ_HARNESS=<name> picks the harness (scripts/fuzz.sh sets it).
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fuzz/harnesses.h"

namespace {
int (*harness)(const uint8_t*, size_t) = nullptr;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  at::set_num_threads(1);  // one input at a time; no thread pool to race with
  const char* name = std::getenv("KG_FUZZ_HARNESS");
#define KG_FUZZ_PICK(n, what) \
  if (name && std::strcmp(name, #n) == 0) harness = kg::fuzz::n;
  KG_FUZZ_HARNESSES(KG_FUZZ_PICK)
#undef KG_FUZZ_PICK
  if (!harness) {
#define KG_FUZZ_NAME(n, what) " " #n
    std::fprintf(stderr, "kgtrain_fuzz: KG_FUZZ_HARNESS must name a harness:" KG_FUZZ_HARNESSES(KG_FUZZ_NAME) "\n");
#undef KG_FUZZ_NAME
    std::exit(2);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return harness(data, size); }
