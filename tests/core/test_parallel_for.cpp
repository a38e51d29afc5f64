#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/parallel_for.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

TEST_CASE("parallel_for visits every index once", "[unit][core]") {
  for (int threads : {0, 1, 2, 4, 16}) {
    for (size_t n : {0, 1, 3, 1000}) {
      INFO("threads " << threads << ", n " << n);
      std::vector<std::atomic<int>> seen(n);
      std::atomic<int> bad_worker{0};
      const int workers = kg::parallel_workers(n, threads);
      kg::parallel_for(n, threads, [&](size_t i, int w) {
        ++seen[i];
        if (w < 0 || w >= workers) ++bad_worker;
      });
      for (size_t i = 0; i < n; ++i) CHECK(seen[i] == 1);
      CHECK(bad_worker == 0);
    }
  }
}

TEST_CASE("parallel_workers: 0 = every core, capped by the items, at least 1", "[unit][core]") {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  CHECK(kg::parallel_workers(1000, 0) == cores);
  CHECK(kg::parallel_workers(1000, 3) == 3);
  CHECK(kg::parallel_workers(2, 8) == 2);
  CHECK(kg::parallel_workers(0, 8) == 1);
  CHECK_THROWS_AS(kg::parallel_workers(10, -1), kg::InternalError);
}

TEST_CASE("parallel_for with one worker runs inline, in order", "[unit][core]") {
  const auto caller = std::this_thread::get_id();
  std::vector<size_t> order;
  kg::parallel_for(5, 1, [&](size_t i, int w) {
    CHECK(std::this_thread::get_id() == caller);
    CHECK(w == 0);
    order.push_back(i);
  });
  CHECK(order == std::vector<size_t>{0, 1, 2, 3, 4});
}

TEST_CASE("parallel_for uses several threads, the caller among them", "[unit][core]") {
  std::mutex mu;
  std::set<std::thread::id> ids;
  std::atomic<int> waiting{0};
  kg::parallel_for(2, 2, [&](size_t, int) {
    {
      std::lock_guard<std::mutex> lock(mu);
      ids.insert(std::this_thread::get_id());
    }
    ++waiting;  // each of the two items waits for the other: only two threads get past this
    while (waiting < 2) std::this_thread::yield();
  });
  CHECK(ids.size() == 2);
  CHECK(ids.count(std::this_thread::get_id()) == 1);
}

TEST_CASE("parallel_for rethrows a worker's exception in the caller, type and message kept", "[unit][core]") {
  for (int threads : {1, 4}) {
    INFO("threads " << threads);
    std::atomic<int> after{0};
    try {
      kg::parallel_for(20000, threads, [&](size_t i, int) {
        if (i == 3) throw kg::DataError("item 3 is bad");
        std::this_thread::sleep_for(std::chrono::microseconds(20));
        if (i >= 10000) ++after;
      });
      FAIL("no exception");
    } catch (const kg::DataError& e) {
      CHECK(std::string(e.what()) == "item 3 is bad");
    }
    CHECK(after == 0);  // no index is handed out after the failure
  }
}

TEST_CASE("parallel_for: when every item throws, one exception comes back", "[unit][core]") {
  std::atomic<int> calls{0};
  try {
    kg::parallel_for(64, 8, [&](size_t i, int) {
      ++calls;
      throw std::runtime_error("item " + std::to_string(i));
    });
    FAIL("no exception");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).rfind("item ", 0) == 0);
  }
  CHECK(calls >= 1);
  CHECK(calls <= 8);  // each worker fails at most once before the counter is spent
}

}  // namespace KG_UNITY_ID
}  // namespace
