// Hardware-only paths made to run on any machine, for the tests (docs/devices.md "Devices, mixed precision and
// memory"). Process-wide and off unless set: the app sets them from the environment for each command
//   KGTRAIN_FAKE_OOM_ABOVE=N        training micro-batches of more than N images fail as a CUDA out-of-memory error
//   KGTRAIN_EMULATE_CUDA_GRAPHS=1   device.cuda_graphs replays the step by running it again (no speed-up)
// and unit tests set them for a scope (ScopedTestHooks). No production struct carries them.
#pragma once
#include <cstdint>

namespace kg::device {

struct TestHooks {
  int64_t fake_oom_above = -1;  // -1 = off
  bool emulate_graphs = false;
};

const TestHooks& test_hooks();
void set_test_hooks(const TestHooks& hooks);

// Throws c10::OutOfMemoryError as the CUDA allocator would when fake_oom_above is set and `rows` exceeds it.
void maybe_fake_oom(int64_t rows);

// Sets the hooks for a scope and puts the previous ones back.
class ScopedTestHooks {
 public:
  explicit ScopedTestHooks(const TestHooks& hooks) : saved_(test_hooks()) { set_test_hooks(hooks); }
  ~ScopedTestHooks() { set_test_hooks(saved_); }
  ScopedTestHooks(const ScopedTestHooks&) = delete;
  ScopedTestHooks& operator=(const ScopedTestHooks&) = delete;

 private:
  TestHooks saved_;
};

}  // namespace kg::device
