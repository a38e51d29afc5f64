// File helpers. Every output kgtrain writes goes through write_file_atomic: a temp file in the same
// directory, fsync, rename — a reader never sees a half-written file.
#pragma once
#include <string>
#include <system_error>
#include <string_view>

namespace kg {

// Reads a whole file; throws DataError naming the path and the OS reason.
std::string read_file(const std::string& path);

// Writes `bytes` to `path` atomically (temp file + fsync + rename + directory fsync).
// Creates missing parent directories. Throws DataError on failure.
void write_file_atomic(const std::string& path, std::string_view bytes);

// Atomically replaces directory `dst` with the fully written directory `src` (same file system).
// Uses renameat2(RENAME_EXCHANGE) where available so `dst` always exists; otherwise rename dance.
// The previous `dst` is removed; with `keep_previous_at` (a path on the same file system) it is renamed
// there instead, replacing what was there (see discard_directory). DataError when a rename fails.
void replace_directory(const std::string& src, const std::string& dst, const std::string& keep_previous_at = "");

// Removes directory `dir` (best effort; a missing one is fine) without ever leaving a half-deleted tree under
// its name: it is renamed to "<parent>/.trash-<name>-<pid>" first, so a kill mid-removal leaves only a hidden
// folder, which the next caller that knows the pattern sweeps.
void discard_directory(const std::string& dir);

// Removes `path` and, for a folder, everything below it, never following symbolic links; true when
// nothing is left (a missing path included), else false with the first error in `ec`. Used instead
// of std::filesystem::remove_all, which crashed when kgtrain was built with GCC 13 against PyTorch
// 2.11's LibTorch (its libtorch_cpu.so carries its own copy of the filesystem library).
bool remove_tree(const std::string& path, std::error_code& ec);

// Creates `path` and its missing parents; DataError naming the path and the OS reason (a file in the
// way, no permission, a full disk) instead of std::filesystem's exception.
void make_directories(const std::string& path);

// Fsyncs a directory (after creating or renaming entries in it).
void fsync_directory(const std::string& dir);

// A private folder under the system's temp directory ("<prefix>-<pid>-<n>"), removed with everything in
// it when the object goes. An empty prefix makes no folder (path() is "").
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& prefix);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace kg
