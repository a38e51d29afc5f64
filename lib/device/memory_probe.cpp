#include "device/memory_probe.h"

#include <malloc.h>

#include "device/backend.h"

using nlohmann::json;

namespace kg::device {

json PeakMemory::to_json() const {
  return {{"peak_rss_bytes", host_rss_bytes >= 0 ? json(host_rss_bytes) : json()},
          {"peak_rss_since", host_reset ? "configuration start" : "process start (the kernel refused to reset VmHWM)"},
          {"cuda_peak_allocated_bytes", cuda ? json(cuda_allocated_bytes) : json()},
          {"cuda_peak_reserved_bytes", cuda ? json(cuda_reserved_bytes) : json()}};
}

bool reset_host_peak() {
#if defined(__GLIBC__)
  // kgtrain keeps freed heap (core/host_memory.h): hand it back first, or the previous configuration's
  // freed memory would count in this one's RSS.
  malloc_trim(0);
#endif
  const auto& cpu = backend_for(c10::kCPU);
  cpu.reset_peak_memory(0);
  const auto m = cpu.memory(0);
  // Whether the reset took or the process is at its peak anyway, what VmHWM says from here on is this
  // configuration's peak exactly when it now equals the current RSS (a few pages of slack).
  return m.available && m.peak_allocated - m.allocated <= (4 << 20);
}

void reset_device_peak(const DeviceInfo& dev) {
  if (!dev.device.is_cuda()) return;
  const auto& b = backend_for(dev.device.type());
  b.empty_cache();  // the previous configuration's cached blocks would count as this one's reserve
  b.reset_peak_memory(dev.device.index());
}

PeakMemory read_peaks(const DeviceInfo& dev, bool host_reset) {
  PeakMemory p;
  const auto host = backend_for(c10::kCPU).memory(0);
  if (host.available) p.host_rss_bytes = host.peak_allocated;
  p.host_reset = host_reset;
  if (dev.device.is_cuda()) {
    const auto m = backend_for(dev.device.type()).memory(dev.device.index());
    p.cuda = m.available;
    p.cuda_allocated_bytes = m.peak_allocated;
    p.cuda_reserved_bytes = m.peak_reserved;
  }
  return p;
}

int64_t heap_in_use() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  struct mallinfo2 m = mallinfo2();
  return static_cast<int64_t>(m.uordblks + m.hblkhd);
#else
  return -1;
#endif
}

}  // namespace kg::device
