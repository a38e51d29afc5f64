// The thread-local autocast state of LibTorch (enabled + dtype per device type), read and written
// through one API for LibTorch 1.13 and 2.x. AutocastReplay puts a captured state back for a scope:
// gradient checkpointing's recompute runs in the autograd engine, where the forward pass's autocast
// scope is gone (torch.utils.checkpoint saves and re-enters it the same way).
#pragma once
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

namespace kg::device {

bool autocast_enabled(c10::DeviceType t);
void set_autocast(c10::DeviceType t, bool on);
at::ScalarType autocast_dtype(c10::DeviceType t);
void set_autocast_dtype(c10::DeviceType t, at::ScalarType d);

// Autocast on the CPU and on CUDA, as the calling thread has it now.
struct AutocastState {
  bool cpu_on = false, cuda_on = false;
  at::ScalarType cpu_dtype = at::kBFloat16, cuda_dtype = at::kHalf;
  static AutocastState current();
};

// RAII: `s` for the scope, the thread's previous state afterwards (the cast cache cleared when the
// outermost autocast scope ends, as in torch.autocast's __exit__).
class AutocastReplay {
 public:
  explicit AutocastReplay(const AutocastState& s);
  ~AutocastReplay();
  AutocastReplay(const AutocastReplay&) = delete;
  AutocastReplay& operator=(const AutocastReplay&) = delete;

 private:
  AutocastState prev_;
  bool nested_ = false;
};

}  // namespace kg::device
