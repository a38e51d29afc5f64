#include "test_hooks.h"

#include "core/error.h"
#include "device/test_hooks.h"

namespace kg::app {

void read_test_hooks(const std::map<std::string, std::string>& environ) {
  device::TestHooks h;  // every command starts from none: the tests run many commands in one process
  if (auto it = environ.find("KGTRAIN_FAKE_OOM_ABOVE"); it != environ.end() && !it->second.empty()) {
    size_t used = 0;
    try {
      h.fake_oom_above = std::stoll(it->second, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != it->second.size() || h.fake_oom_above < 0)
      throw UsageError("KGTRAIN_FAKE_OOM_ABOVE=" + it->second + ": expected a number of images >= 0");
  }
  if (auto it = environ.find("KGTRAIN_EMULATE_CUDA_GRAPHS"); it != environ.end() && !it->second.empty()) {
    if (it->second != "0" && it->second != "1")
      throw UsageError("KGTRAIN_EMULATE_CUDA_GRAPHS=" + it->second + ": expected 1 (emulate) or 0");
    h.emulate_graphs = it->second == "1";
  }
  device::set_test_hooks(h);
}

}  // namespace kg::app
