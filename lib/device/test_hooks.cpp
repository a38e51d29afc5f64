#include "device/test_hooks.h"

#include "device/oom.h"

namespace kg::device {
namespace {
TestHooks& hooks() {
  static TestHooks h;
  return h;
}
}  // namespace

const TestHooks& test_hooks() { return hooks(); }
void set_test_hooks(const TestHooks& h) { hooks() = h; }

void maybe_fake_oom(int64_t rows) {
  const int64_t limit = hooks().fake_oom_above;
  if (limit >= 0 && rows > limit) throw_fake_oom(rows, limit);
}

}  // namespace kg::device
