#include "launch.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <thread>

#include "cli.h"
#include "core/error.h"

namespace kg::app {
namespace {

// A TCP port nobody listens on now (the kernel's pick for port 0); rank 0's store binds it next.
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  KG_CHECK(fd >= 0, DeviceError, "--nproc: cannot open a socket to find a free port: ", std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  ::close(fd);
  KG_CHECK(ok, DeviceError, "--nproc: cannot find a free loopback port: ", std::strerror(errno));
  return ntohs(a.sin_port);
}

volatile sig_atomic_t last_signal = 0, signals_seen = 0;
void count_signal(int sig) {
  last_signal = sig;
  signals_seen = signals_seen + 1;
}

}  // namespace

std::vector<std::string> environment_with(const std::vector<std::string>& assignments) {
  auto name_of = [](const std::string& kv) { return kv.substr(0, kv.find('=')); };
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv(*e);
    bool replaced = false;
    for (const auto& a : assignments) replaced = replaced || name_of(a) == name_of(kv);
    if (!replaced) env.push_back(kv);
  }
  env.insert(env.end(), assignments.begin(), assignments.end());
  return env;
}

std::vector<char*> c_pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return kExitInternal;
}

std::vector<std::string> without_nproc(int argc, char** argv) {
  std::vector<std::string> out;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--nproc") {
      ++i;  // and its value
      continue;
    }
    if (a.rfind("--nproc=", 0) == 0) continue;
    out.push_back(a);
  }
  return out;
}

int launch_local(int nproc, const std::vector<std::string>& args) {
  KG_CHECK(nproc >= 1, UsageError, "--nproc must be at least 1, got ", nproc);
  const int port = free_port();
  std::vector<pid_t> pids;
  struct sigaction sa {};
  sa.sa_handler = count_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  std::cerr << "launching " << nproc << " processes (ranks 0.." << nproc - 1 << ", rendezvous 127.0.0.1:" << port
            << "); rank 0 writes the outputs\n";
  const char* exe = executable().c_str();
  std::vector<std::string> argv_strings = args;
  const std::vector<char*> cargv = c_pointers(argv_strings);
  for (int r = 0; r < nproc; ++r) {
    // Everything the child needs is made before fork: only async-signal-safe calls may follow it.
    std::vector<std::string> env = environment_with(
        {"RANK=" + std::to_string(r), "LOCAL_RANK=" + std::to_string(r), "WORLD_SIZE=" + std::to_string(nproc),
         "LOCAL_WORLD_SIZE=" + std::to_string(nproc), "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + std::to_string(port)});
    const std::vector<char*> envp = c_pointers(env);
    const std::string exec_failed = "error: --nproc: cannot start rank " + std::to_string(r) + "\n";
    pid_t pid = ::fork();
    KG_CHECK(pid >= 0, DeviceError, "--nproc: fork failed for rank ", r, ": ", std::strerror(errno));
    if (pid == 0) {
      // Its own process group: a terminal's Ctrl-C reaches this launcher alone, which passes each signal on
      // once (a rank's second signal kills it at once, so it must not get the terminal's copy too).
      ::setpgid(0, 0);
      ::execve(exe, cargv.data(), envp.data());
      [[maybe_unused]] auto n = ::write(2, exec_failed.data(), exec_failed.size());
      ::_exit(kExitDevice);
    }
    ::setpgid(pid, pid);  // also here: whichever of the two runs first (no window for a terminal signal)
    pids.push_back(pid);
  }
  int result = kExitOk, running = nproc, failed_rank = -1;
  sig_atomic_t forwarded = 0;
  auto stop_others = [&](int sig) {
    for (auto p : pids)
      if (p > 0) ::kill(p, sig);
  };
  auto deadline = std::chrono::steady_clock::time_point::max();
  while (running > 0) {
    if (signals_seen > forwarded) {
      // The first: each rank saves at its step boundary and exits 130/143; a second one kills them.
      stop_others(last_signal);
      forwarded = signals_seen;
    }
    int status = 0;
    pid_t done = ::waitpid(-1, &status, WNOHANG);
    if (done > 0) {
      for (size_t r = 0; r < pids.size(); ++r) {
        if (pids[r] != done) continue;
        pids[r] = -1;
        --running;
        const int code = exit_code_of(status);
        if (code != kExitOk && failed_rank < 0) {
          failed_rank = static_cast<int>(r);
          result = code;
          if (running > 0) {
            if (!forwarded) std::cerr << "rank " << r << " failed (exit " << code << "): stopping the other ranks\n";
            stop_others(SIGTERM);
            deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
          }
        }
      }
      continue;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      stop_others(SIGKILL);
      deadline = std::chrono::steady_clock::time_point::max();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (forwarded && result == kExitOk) result = last_signal == SIGTERM ? kExitSigterm : kExitSigint;
  return result;
}

}  // namespace kg::app
