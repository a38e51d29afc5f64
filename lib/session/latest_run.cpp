#include "session/latest_run.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/fs.h"
#include "core/strings.h"

namespace fs = std::filesystem;

namespace kg::session {

namespace {
// Absolute, normalised, without a trailing separator: "runs/" and "./runs" compare equal.
fs::path plain(const std::string& p) {
  fs::path out = fs::absolute(p).lexically_normal();
  return out.filename().empty() ? out.parent_path() : out;
}
}  // namespace

std::string point_latest(const std::string& runs_root, const std::string& run_dir) {
  const fs::path link = fs::path(runs_root) / kLatestWord;
  std::error_code ec;
  if (fs::is_directory(fs::symlink_status(link, ec)))
    return link.string() + " is a folder (a run.name of \"latest\"?): not replaced by a link to the newest run";
  const fs::path rel = plain(run_dir).lexically_relative(plain(runs_root));
  if (rel.empty() || *rel.begin() == "..") return run_dir + " is not under " + runs_root + ": latest not updated";
  // The temporary name is this process's own: two fits finishing together each rename a whole link.
  const fs::path tmp = fs::path(runs_root) / (".latest-" + std::to_string(::getpid()));
  ::unlink(tmp.c_str());
  if (::symlink(rel.c_str(), tmp.c_str()) == 0) {
    if (::rename(tmp.c_str(), link.c_str()) == 0) return "";
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return "cannot replace " + link.string() + ": " + why;
  }
  if (errno != EPERM && errno != ENOTSUP && errno != EOPNOTSUPP && errno != ENOSYS)
    return "cannot create " + tmp.string() + ": " + std::strerror(errno);
  // No symbolic links on this file system (FAT, some network mounts): the text form.
  try {
    write_file_atomic(link.string(), rel.string() + "\n");
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

std::string resolve_latest(const std::string& runs_root) {
  const fs::path link = fs::path(runs_root) / kLatestWord;
  std::error_code ec;
  const auto st = fs::symlink_status(link, ec);
  fs::path target;
  if (fs::is_symlink(st)) {
    target = fs::read_symlink(link, ec);
  } else if (fs::is_regular_file(st)) {
    target = trim(read_file(link.string()));
  } else if (fs::is_directory(st)) {
    throw UsageError(link.string() +
                     " is a folder, not kgtrain's link to the newest run (a run.name of "
                     "\"latest\"?): give the run folder itself");
  } else {
    throw UsageError("no run under " + runs_root + " yet: run kgtrain fit first");
  }
  KG_CHECK(!ec && !target.empty(), UsageError, "cannot read ", link.string(), ": ", ec.message());
  const fs::path dir = target.is_absolute() ? target : (fs::path(runs_root) / target).lexically_normal();
  KG_CHECK(fs::is_directory(dir, ec), UsageError, link.string(), " points at ", dir.string(),
           ", which no longer exists: run kgtrain fit again, or give a run folder");
  return dir.string();
}

}  // namespace kg::session
