// Out-of-memory errors: recognising LibTorch's (the CUDA caching allocator's OutOfMemoryError, cuBLAS /
// cuDNN allocation failures) and injecting a fake one, so the back-off in fit can be tested on a CPU.
#pragma once
#include <cstdint>
#include <exception>

namespace kg::device {

bool is_out_of_memory(const std::exception& e);

// Throws c10::OutOfMemoryError as the CUDA allocator would for a micro-batch of `rows` images when the
// test hook KGTRAIN_FAKE_OOM_ABOVE = `limit` is set (rows > limit).
[[noreturn]] void throw_fake_oom(int64_t rows, int64_t limit);

}  // namespace kg::device
