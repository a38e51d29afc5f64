// A fresh directory per test (under the system temp folder); removed with everything in it when the test ends.
#pragma once
#include <stdlib.h>  // mkdtemp

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "core/fs.h"

namespace kg::test {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kgtrain-test-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    kg::remove_tree(path_.string(), ec);  // not std::filesystem::remove_all: see core/fs.h
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // Writes `text` to `rel` (parents created) and returns the full path.
  std::string write(const std::string& rel, const std::string& text) const {
    auto p = path_ / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  // The full path of `rel` inside the directory.
  std::string operator/(const std::string& rel) const { return (path_ / rel).string(); }
  const std::filesystem::path& path() const { return path_; }
  // The directory itself, as a string.
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace kg::test
