// A stop request (SIGINT/SIGTERM). The app's signal handler sets it; jobs poll it at step boundaries,
// save what they have and leave with the signal's exit code.
#pragma once
#include <atomic>

namespace kg {

// 0 = keep going, otherwise the signal number that asked to stop.
inline std::atomic<int>& stop_signal() {
  static std::atomic<int> s{0};
  return s;
}

}  // namespace kg
