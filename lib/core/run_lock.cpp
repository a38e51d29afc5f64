#include "core/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>

#include "core/error.h"

namespace kg {
namespace {

std::mutex mu;
std::map<std::string, int>& held() {  // canonical folder -> descriptor, for the process's lifetime
  static std::map<std::string, int> m;
  return m;
}

std::string holder_of(int fd) {
  char buf[256] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string s = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.empty() ? "another kgtrain process" : s;
}

}  // namespace

void lock_run_dir(const std::string& dir, const std::string& command, LockMode mode) {
  std::error_code ec;
  const std::string key = std::filesystem::weakly_canonical(dir, ec).string();
  std::lock_guard<std::mutex> g(mu);
  if (held().count(ec ? dir : key)) return;
  const std::string path = dir + "/.kgtrain.lock";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0 && mode == LockMode::shared) {
    // A reader of a run on a read-only file system (a Kaggle input dataset): flock works on a read-only descriptor,
    // and where not even the lock file exists no kgtrain can be writing the run.
    const int err = errno;
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 && (err == EROFS || err == EACCES)) return;
    errno = err;
  }
  KG_CHECK(fd >= 0, DataError, "cannot create the run lock ", path, ": ", std::strerror(errno));
  if (::flock(fd, (mode == LockMode::exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
    const int err = errno;
    const std::string who = holder_of(fd);
    ::close(fd);
    KG_CHECK(err != EWOULDBLOCK, UsageError, dir, " is in use by ", who,
             mode == LockMode::exclusive
                 ? "; two processes writing one run would mix their checkpoints and outputs: wait for it to end, or "
                   "stop it (SIGTERM saves a checkpoint) and then continue with kgtrain fit --resume " +
                       dir
                 : "; its checkpoints are still being written: wait for it to end (or stop it) before reading the run");
    throw DataError("cannot lock " + path + ": " + std::strerror(err));
  }
  // Who holds it, for the message a refused process prints (readers: the latest of them).
  const std::string me = "kgtrain " + command + " (pid " + std::to_string(::getpid()) + ")\n";
  const bool writable = (::fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDWR;
  if (writable && (::ftruncate(fd, 0) != 0 || ::pwrite(fd, me.data(), me.size(), 0) < 0)) {
    // A disk that refuses these bytes would fail the command at its first output: say so now, naming the file.
    const int err = errno;
    ::close(fd);
    throw DataError("cannot write the run lock " + path + ": " + std::strerror(err));
  }
  held()[ec ? dir : key] = fd;
}

}  // namespace kg
