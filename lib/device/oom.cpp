#include "device/oom.h"

#include <string>

#include <c10/util/Exception.h>

namespace kg::device {

bool is_out_of_memory(const std::exception& e) {
  if (dynamic_cast<const c10::OutOfMemoryError*>(&e)) return true;
  if (!dynamic_cast<const c10::Error*>(&e)) return false;
  // cuBLAS / cuDNN workspaces fail with their own status codes instead of the allocator's error.
  const std::string m = e.what();
  return m.find("CUDA out of memory") != std::string::npos ||
         m.find("CUBLAS_STATUS_ALLOC_FAILED") != std::string::npos ||
         m.find("CUDNN_STATUS_ALLOC_FAILED") != std::string::npos;
}

void throw_fake_oom(int64_t rows, int64_t limit) {
  throw c10::OutOfMemoryError(c10::SourceLocation{__func__, __FILE__, static_cast<uint32_t>(__LINE__)},
                              "CUDA out of memory (injected by KGTRAIN_FAKE_OOM_ABOVE=" + std::to_string(limit) +
                                  ": a micro-batch of " + std::to_string(rows) + " images)");
}

}  // namespace kg::device
