// Two ranks of a Gloo process group over loopback, as threads of one test process.
#pragma once
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <exception>
#include <string>
#include <vector>
#include <thread>
#include <type_traits>

#include <catch2/catch.hpp>

#include "device/distributed.h"

namespace kg::test {

// A TCP port free on loopback right now.
inline int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  ::close(fd);
  return ntohs(a.sin_port);
}

inline kg::device::DistEnv env_of(int rank, int world, int port) {
  kg::device::DistEnv e;
  e.rank = e.local_rank = rank;
  e.world_size = e.local_world_size = world;
  e.master_addr = "127.0.0.1";
  e.master_port = port;
  return e;
}

// Catch2's assertions are not thread-safe (two ranks asserting at once corrupted its state): rank
// threads record their checks with RANK_CHECK, and report() asserts them on the test thread.
struct RankChecks {
  struct Item {
    bool ok;
    const char* expr;
    int line;
  };
  std::vector<Item> of[2];
  void report() const {
    for (int r = 0; r < 2; ++r)
      for (const auto& i : of[r]) {
        INFO("rank " << r << ", line " << i.line << ": " << i.expr);
        CHECK(i.ok);
      }
  }
};
#define RANK_CHECK(checks, rank, ...) \
  (checks).of[(rank)].push_back({static_cast<bool>(__VA_ARGS__), #__VA_ARGS__, __LINE__})

// Runs `f(group)` on two ranks (threads of this process, each with its own process group); f takes a
// ProcessGroup& or the ProcessGroupPtr.
template <class F>
void two_ranks(F f) {
  const int port = free_port();
  std::exception_ptr err[2];
  auto body = [&](int r) {
    try {
      auto g = kg::device::ProcessGroup::connect(env_of(r, 2, port), c10::Device(c10::kCPU), std::chrono::seconds(30));
      if constexpr (std::is_invocable_v<F&, kg::device::ProcessGroupPtr>)
        f(g);
      else
        f(*g);
    } catch (...) {
      err[r] = std::current_exception();
    }
  };
  std::thread t1(body, 1);
  body(0);
  t1.join();
  for (auto& e : err)
    if (e) std::rethrow_exception(e);
}

}  // namespace kg::test
