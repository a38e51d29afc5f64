// Child kgtrain processes for end-to-end tests that signal a run at a chosen moment (kill anywhere,
// SIGTERM saves, sweeps): start, poll, signal, wait.
#pragma once
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "test_paths.h"

namespace kg::test {

// Starts kgtrain with `args` in a child process, stdout and stderr appended to `log`.
inline pid_t spawn(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> all{KGTRAIN_BINARY};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {  // only async-signal-safe calls from here on
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

inline int wait_status(pid_t pid) {
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return st;
}

// Polls (every ~0.2 ms) until `ready()`; false with `status` set when the child exits first (or after 120 s).
inline bool wait_until(pid_t pid, const std::function<bool()>& ready, int& status) {
  const auto t0 = std::chrono::steady_clock::now();
  while (!ready()) {
    if (waitpid(pid, &status, WNOHANG) == pid) return false;
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(120)) return false;
    usleep(200);
  }
  return true;
}

// The update count saved in DIR/checkpoints/last, -1 when there is none (or it is being swapped).
inline int64_t last_step(const std::string& dir) {
  try {
    auto s = nlohmann::json::parse(kg::read_file(dir + "/checkpoints/last/state.json"));
    return s.at("step").get<int64_t>();
  } catch (const std::exception&) {
    return -1;
  }
}

// Sends `sig` once `ready()` holds (plus `delay_us`); true when the child was still running then.
inline bool signal_when(pid_t pid, const std::function<bool()>& ready, int sig, int delay_us, int& status) {
  if (!wait_until(pid, ready, status)) {
    int still = 0;
    if (waitpid(pid, &still, WNOHANG) == 0) {  // timed out: leave no process behind
      kill(pid, SIGKILL);
      status = wait_status(pid);
    }
    return false;
  }
  if (delay_us > 0) usleep(static_cast<useconds_t>(delay_us));
  kill(pid, sig);
  status = wait_status(pid);
  return true;
}

}  // namespace kg::test
