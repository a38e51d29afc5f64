// Memory probes for benchmarks: the process's peak resident set (VmHWM, resettable where the kernel
// allows), the CUDA caching allocator's peaks, and the bytes glibc's malloc has handed out.
#pragma once
#include <cstdint>

#include <nlohmann/json.hpp>

#include "device/device.h"

namespace kg::device {

struct PeakMemory {
  int64_t host_rss_bytes = -1;  // VmHWM: since the configuration started (host_reset) or since the process did
  bool host_reset = false;
  bool cuda = false;  // the CUDA caching allocator's peaks below are known
  int64_t cuda_allocated_bytes = 0, cuda_reserved_bytes = 0;
  nlohmann::json to_json() const;
};

// Resets the peaks before a configuration is built: the host's VmHWM (where the kernel allows a
// write of "5" to /proc/self/clear_refs; returns whether the peak now starts from the current RSS),
// the CUDA allocator's cache and peak statistics of `dev` when given.
bool reset_host_peak();
void reset_device_peak(const DeviceInfo& dev);
PeakMemory read_peaks(const DeviceInfo& dev, bool host_reset);

// Bytes the process's malloc hands out (every arena, small blocks and mmap'ed ones); -1 where glibc
// cannot say. LibTorch's CPU allocator is plain malloc, so a delta is tensor memory.
int64_t heap_in_use();

}  // namespace kg::device
