#include "core/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "core/error.h"

namespace kg {

int parallel_workers(size_t n, int threads) {
  KG_ASSERT(threads >= 0, "parallel_for with ", threads, " threads");
  const size_t want = threads > 0 ? static_cast<size_t>(threads) : std::thread::hardware_concurrency();
  return static_cast<int>(std::max<size_t>(1, std::min(want, n)));
}

void parallel_for(size_t n, int threads, const std::function<void(size_t, int)>& body) {
  const int workers = parallel_workers(n, threads);
  if (workers == 1) {
    for (size_t i = 0; i < n; ++i) body(i, 0);
    return;
  }
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::exception_ptr first;
  auto fail = [&](std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mu);
    if (!first) first = std::move(e);
    next = n;  // no index is handed out after a failure
  };
  auto work = [&](int worker) {
    for (size_t i; (i = next++) < n;) {
      try {
        body(i, worker);
      } catch (...) {
        fail(std::current_exception());
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(workers - 1));
  try {
    for (int w = 1; w < workers; ++w) pool.emplace_back(work, w);
  } catch (...) {  // a thread that cannot start: the started ones still finish and are joined below
    fail(std::current_exception());
  }
  work(0);
  for (auto& t : pool) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace kg
