#include "core/fs.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>  // renameat2, RENAME_EXCHANGE (glibc >= 2.28 with _GNU_SOURCE)
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/error.h"

namespace kg {
namespace {

namespace stdfs = std::filesystem;

std::string os_reason(int err) { return std::strerror(err); }

// Closes a descriptor on every exit path; close errors matter only after writes, checked there.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

std::string parent_of(const std::string& path) {
  stdfs::path p = stdfs::path(path).parent_path();
  return p.empty() ? std::string(".") : p.string();
}

void write_all(int fd, std::string_view bytes, const std::string& what) {
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw DataError("cannot write " + what + ": " + os_reason(errno));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace

std::string read_file(const std::string& path) {
  int raw;
  do raw = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  while (raw < 0 && errno == EINTR);
  if (raw < 0) throw DataError("cannot read " + path + ": " + os_reason(errno));
  Fd fd(raw);
  std::string out;
  struct stat st {};
  // The size is only a hint: files can grow, and /proc or pipes report 0.
  if (::fstat(fd.fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd.fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw DataError("cannot read " + path + ": " + os_reason(errno));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

void make_directories(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec || !std::filesystem::is_directory(path))
    throw DataError("cannot create directory " + path + ": " +
                    (ec ? ec.message() : std::string("a file is in the way")));
}

void fsync_directory(const std::string& dir) {
  int raw = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (raw < 0) throw DataError("cannot open directory " + dir + ": " + os_reason(errno));
  Fd fd(raw);
  // Some file systems (and FUSE mounts) reject fsync on directories; that is not a write failure.
  if (::fsync(fd.fd) != 0 && errno != EINVAL && errno != EROFS)
    throw DataError("cannot fsync directory " + dir + ": " + os_reason(errno));
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  static std::atomic<uint64_t> counter{0};
  const std::string dir = parent_of(path);
  std::error_code ec;
  stdfs::create_directories(dir, ec);
  if (ec) throw DataError("cannot create directory " + dir + ": " + ec.message());

  // pid + counter keeps concurrent writers (threads or processes) off each other's temp files.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  int raw = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (raw < 0) throw DataError("cannot create " + tmp + ": " + os_reason(errno));
  try {
    {
      Fd fd(raw);
      write_all(fd.fd, bytes, tmp);
      if (::fsync(fd.fd) != 0) throw DataError("cannot fsync " + tmp + ": " + os_reason(errno));
      int c = ::close(fd.fd);
      fd.fd = -1;
      if (c != 0) throw DataError("cannot close " + tmp + ": " + os_reason(errno));
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0)
      throw DataError("cannot rename " + tmp + " to " + path + ": " + os_reason(errno));
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  fsync_directory(dir);
}

namespace {
thread_local int remove_tree_errno = 0;  // nftw's callback has no user pointer

int remove_entry(const char* path, const struct stat*, int, struct FTW*) {
  if (::remove(path) != 0 && errno != ENOENT && remove_tree_errno == 0) remove_tree_errno = errno;
  return 0;  // go on: remove as much as possible
}
}  // namespace

bool remove_tree(const std::string& path, std::error_code& ec) {
  ec.clear();
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return true;
    ec.assign(errno, std::generic_category());
    return false;
  }
  remove_tree_errno = 0;
  // Depth first (children before their folder), never following symbolic links.
  if (::nftw(path.c_str(), remove_entry, 32, FTW_DEPTH | FTW_PHYS) != 0 && remove_tree_errno == 0)
    remove_tree_errno = errno ? errno : EIO;
  if (remove_tree_errno != 0) ec.assign(remove_tree_errno, std::generic_category());
  return remove_tree_errno == 0;
}

void discard_directory(const std::string& dir) {
  std::error_code ec;
  if (!stdfs::exists(dir, ec)) return;
  const stdfs::path d(dir);
  const stdfs::path trash = d.parent_path() / (".trash-" + d.filename().string() + "-" + std::to_string(::getpid()));
  remove_tree(trash.string(), ec);
  remove_tree((::rename(d.c_str(), trash.c_str()) == 0 ? trash : d).string(), ec);
}

namespace {
void rename_or_throw(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0)
    throw DataError("cannot rename " + from + " to " + to + ": " + os_reason(errno));
}
}  // namespace

void replace_directory(const std::string& src, const std::string& dst, const std::string& keep_previous_at) {
  std::error_code ec;
  KG_CHECK(stdfs::is_directory(src, ec), DataError, "cannot replace ", dst, ": ", src, " is not a directory");
  const bool keep = !keep_previous_at.empty();
  if (keep) discard_directory(keep_previous_at);
  struct stat st {};
  if (::lstat(dst.c_str(), &st) != 0) {
    if (errno != ENOENT) throw DataError("cannot stat " + dst + ": " + os_reason(errno));
    if (::rename(src.c_str(), dst.c_str()) != 0)
      throw DataError("cannot rename " + src + " to " + dst + ": " + os_reason(errno));
    fsync_directory(parent_of(dst));
    return;
  }

  std::string old;  // where the previous tree ends up: removed once dst is in place, or kept
  if (::renameat2(AT_FDCWD, src.c_str(), AT_FDCWD, dst.c_str(), RENAME_EXCHANGE) == 0) {
    old = src;
    if (keep) {
      fsync_directory(parent_of(dst));
      rename_or_throw(src, keep_previous_at);  // src now holds the previous tree
      old = keep_previous_at;
    }
  } else if (errno == EINVAL || errno == ENOSYS || errno == ENOTSUP) {
    // No exchange on this kernel/file system: a short window where dst is missing is unavoidable (with
    // keep_previous_at, the previous tree is complete there meanwhile).
    old = keep ? keep_previous_at : dst + ".old";
    if (!keep) remove_tree(old, ec);
    rename_or_throw(dst, old);
    if (::rename(src.c_str(), dst.c_str()) != 0) {
      int err = errno;
      ::rename(old.c_str(), dst.c_str());  // put the previous tree back
      throw DataError("cannot rename " + src + " to " + dst + ": " + os_reason(err));
    }
  } else {
    throw DataError("cannot exchange " + src + " and " + dst + ": " + os_reason(errno));
  }
  fsync_directory(parent_of(dst));
  if (parent_of(old) != parent_of(dst)) fsync_directory(parent_of(old));
  // dst is already correct; a leftover old tree is only litter, so removal is best effort.
  if (!keep) remove_tree(old, ec);
}

ScratchDir::ScratchDir(const std::string& prefix) {
  if (prefix.empty()) return;
  static std::atomic<int> counter{0};
  std::error_code ec;
  const auto base = stdfs::temp_directory_path(ec);
  KG_CHECK(!ec, DataError, "no temp directory for a scratch folder: ", ec.message(), " (set TMPDIR)");
  for (;;) {
    auto p = base / (prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    if (stdfs::create_directory(p, ec)) {
      path_ = p.string();
      return;
    }
    KG_CHECK(!ec, DataError, "cannot create scratch folder ", p.string(), ": ", ec.message());
  }
}

ScratchDir::~ScratchDir() {
  if (path_.empty()) return;
  std::error_code ec;
  remove_tree(path_, ec);  // best effort: a destructor does not throw
}

}  // namespace kg
