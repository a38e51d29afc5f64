// The CPU backend: always available; memory is the host's (RSS from /proc/self/status).
#include <unistd.h>

#include <fstream>
#include <string>

#include "device/backend.h"
#include "device/precision.h"

namespace kg::device {
namespace {

// "VmRSS:   123456 kB" -> bytes; -1 when absent.
int64_t proc_status_bytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1)) * 1024;
  return -1;
}

class CpuBackend : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  int priority() const override { return 0; }
  bool available() const override { return true; }
  int count() const override { return 1; }
  DeviceDescription describe(int) const override {
    DeviceDescription d;
    d.type = c10::kCPU;
    d.name = "cpu";
    d.total_memory = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<int64_t>(sysconf(_SC_PAGE_SIZE));
    d.native_bf16 = cpu_has_native_bf16();
    return d;
  }
  void synchronize(int) const override {}
  MemoryStats memory(int) const override {
    MemoryStats m;
    m.allocated = m.reserved = proc_status_bytes("VmRSS");
    m.peak_allocated = m.peak_reserved = proc_status_bytes("VmHWM");
    m.available = m.allocated >= 0 && m.peak_allocated >= 0;
    return m;
  }
  void reset_peak_memory(int) const override {
    // Linux >= 4.0: writing 5 to clear_refs resets VmHWM to the current RSS.
    std::ofstream out("/proc/self/clear_refs");
    out << "5";
  }
  void empty_cache() const override {}
};

KG_REGISTER_BACKEND(CpuBackend);

}  // namespace
}  // namespace kg::device
