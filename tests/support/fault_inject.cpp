// An LD_PRELOAD library that makes the disk fail under kgtrain (scripts/reliability_faults.py, tests/jobs/
// test_fault_injection.cpp): the N-th write, fsync or rename the process makes on a regular file fails with ENOSPC or
// EIO, once or from then on (a full disk stays full).
//   KGTRAIN_FAULT="OP:N:ERRNO[:sticky]"  OP write (write, pwrite, writev) | fsync (fsync, fdatasync) | rename (rename,
//                                        renameat, renameat2); N >= 1; ERRNO ENOSPC | EIO | EDQUOT
//   KGTRAIN_FAULT_COUNT=FILE              at exit, writes "write N\nfsync N\nrename N\n": the calls a run made (what
//                                        a script injects at, one N at a time)
//   KGTRAIN_FAULT_TRACE=FILE              at exit, writes every counted call in order, "OP K [RENAME TARGET]"
// Calls on pipes, terminals and sockets (stdout, stderr, the progress bar) are not counted and never fail; fsync
// counts files and folders.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

enum Op { kWrite, kFsync, kRename, kOps };
const char* const kOpNames[kOps] = {"write", "fsync", "rename"};

struct Plan {
  int op = -1;
  long n = 0;
  int err = 0;
  bool sticky = false;
};

Plan parse_plan() {
  Plan p;
  const char* s = std::getenv("KGTRAIN_FAULT");
  if (!s || !*s) return p;
  char op[16] = {0}, err[16] = {0}, mode[16] = {0};
  long n = 0;
  if (std::sscanf(s, "%15[a-z]:%ld:%15[A-Z]:%15[a-z]", op, &n, err, mode) < 3 || n < 1) {
    std::fprintf(stderr, "fault_inject: KGTRAIN_FAULT=\"%s\" is not OP:N:ERRNO[:sticky]\n", s);
    std::abort();
  }
  for (int i = 0; i < kOps; ++i)
    if (std::strcmp(op, kOpNames[i]) == 0) p.op = i;
  p.err = std::strcmp(err, "ENOSPC") == 0 ? ENOSPC : std::strcmp(err, "EIO") == 0 ? EIO
                                                   : std::strcmp(err, "EDQUOT") == 0 ? EDQUOT : 0;
  if (p.op < 0 || p.err == 0) {
    std::fprintf(stderr, "fault_inject: unknown operation or errno in KGTRAIN_FAULT=\"%s\"\n", s);
    std::abort();
  }
  p.n = n;
  p.sticky = std::strcmp(mode, "sticky") == 0;
  return p;
}

const Plan& plan() {
  static const Plan p = parse_plan();
  return p;
}

std::atomic<long> g_calls[kOps];
std::atomic<long> g_injected{0};

template <class F>
F real(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

bool regular(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

bool file_or_dir(int fd) {  // fsync of a folder publishes a rename: it fails too
  struct stat st;
  return fstat(fd, &st) == 0 && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode));
}

std::mutex g_trace_mu;
std::vector<std::string> g_trace;
// Set once the vector above exists, cleared before it is destroyed (calls during static init or exit go untraced).
std::atomic<bool> g_tracing{[] {
  const char* t = std::getenv("KGTRAIN_FAULT_TRACE");
  return t && *t;
}()};

// Counts the call; true (errno set) when this one is to fail.
bool fault(Op op, const char* target = nullptr) {
  const long k = ++g_calls[op];
  if (g_tracing) {
    std::lock_guard<std::mutex> lock(g_trace_mu);
    if (g_tracing) g_trace.push_back(std::string(kOpNames[op]) + " " + std::to_string(k) + (target ? std::string(" ") + target : ""));
  }
  const Plan& p = plan();
  if (p.op != op || k < p.n || (k > p.n && !p.sticky)) return false;
  ++g_injected;
  errno = p.err;
  return true;
}

struct CountAtExit {
  ~CountAtExit() {
    if (g_tracing.exchange(false))
      if (FILE* f = std::fopen(std::getenv("KGTRAIN_FAULT_TRACE"), "w")) {
        std::lock_guard<std::mutex> lock(g_trace_mu);
        for (const auto& line : g_trace) std::fprintf(f, "%s\n", line.c_str());
        std::fclose(f);
      }
    const char* path = std::getenv("KGTRAIN_FAULT_COUNT");
    if (!path || !*path) return;
    if (FILE* f = std::fopen(path, "w")) {
      for (int i = 0; i < kOps; ++i) std::fprintf(f, "%s %ld\n", kOpNames[i], g_calls[i].load());
      std::fprintf(f, "injected %ld\n", g_injected.load());
      std::fclose(f);
    }
  }
} g_count_at_exit;

}  // namespace

extern "C" {

ssize_t write(int fd, const void* buf, size_t n) {
  static auto next = real<ssize_t (*)(int, const void*, size_t)>("write");
  if (regular(fd) && fault(kWrite)) return -1;
  return next(fd, buf, n);
}

ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) {
  static auto next = real<ssize_t (*)(int, const void*, size_t, off_t)>("pwrite");
  if (regular(fd) && fault(kWrite)) return -1;
  return next(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void* buf, size_t n, off64_t off) {
  static auto next = real<ssize_t (*)(int, const void*, size_t, off64_t)>("pwrite64");
  if (regular(fd) && fault(kWrite)) return -1;
  return next(fd, buf, n, off);
}

ssize_t writev(int fd, const struct iovec* iov, int count) {
  static auto next = real<ssize_t (*)(int, const struct iovec*, int)>("writev");
  if (regular(fd) && fault(kWrite)) return -1;
  return next(fd, iov, count);
}

int fsync(int fd) {
  static auto next = real<int (*)(int)>("fsync");
  if (file_or_dir(fd) && fault(kFsync)) return -1;
  return next(fd);
}

int fdatasync(int fd) {
  static auto next = real<int (*)(int)>("fdatasync");
  if (file_or_dir(fd) && fault(kFsync)) return -1;
  return next(fd);
}

int rename(const char* from, const char* to) {
  static auto next = real<int (*)(const char*, const char*)>("rename");
  if (fault(kRename, to)) return -1;
  return next(from, to);
}

int renameat(int a, const char* from, int b, const char* to) {
  static auto next = real<int (*)(int, const char*, int, const char*)>("renameat");
  if (fault(kRename, to)) return -1;
  return next(a, from, b, to);
}

int renameat2(int a, const char* from, int b, const char* to, unsigned flags) {
  static auto next = real<int (*)(int, const char*, int, const char*, unsigned)>("renameat2");
  if (fault(kRename, to)) return -1;
  return next(a, from, b, to, flags);
}

}  // extern "C"
