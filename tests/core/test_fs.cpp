#include <catch2/catch.hpp>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "core/fs.h"
#include "support/temp_dir.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace stdfs = std::filesystem;

namespace {
std::set<std::string> entries(const std::string& dir) {
  std::set<std::string> s;
  for (const auto& e : stdfs::directory_iterator(dir)) s.insert(e.path().filename().string());
  return s;
}
}  // namespace

TEST_CASE("write_file_atomic writes, overwrites, creates parents, leaves no temp", "[unit]") {
  kg::test::TempDir d;
  const std::string p = d / "a/b/out.bin";
  std::string bytes("x\0y\n", 4);
  kg::write_file_atomic(p, bytes);
  CHECK(kg::read_file(p) == bytes);
  kg::write_file_atomic(p, "second");
  CHECK(kg::read_file(p) == "second");
  kg::write_file_atomic(p, "");
  CHECK(kg::read_file(p).empty());
  CHECK(entries(d / "a/b") == std::set<std::string>{"out.bin"});
}

TEST_CASE("write_file_atomic failure is a DataError and leaves no temp", "[unit]") {
  kg::test::TempDir d;
  kg::write_file_atomic(d / "file", "x");
  // A directory where the file should go: the rename fails after the temp file was written.
  stdfs::create_directories(d / "dir/sub");
  CHECK_THROWS_AS(kg::write_file_atomic(d / "dir", "y"), kg::DataError);
  CHECK(entries(d.str()) == std::set<std::string>{"file", "dir"});
  // A file where a parent directory should be.
  CHECK_THROWS_AS(kg::write_file_atomic(d / "file/x", "y"), kg::DataError);
}

TEST_CASE("read_file errors name the path and the reason", "[unit]") {
  kg::test::TempDir d;
  try {
    kg::read_file(d / "missing.txt");
    FAIL("no throw");
  } catch (const kg::DataError& e) {
    CHECK_THAT(e.what(), Catch::Contains("missing.txt") && Catch::Contains("No such file"));
    CHECK(e.exit_code() == 3);
  }
  CHECK_THROWS_WITH(kg::read_file(d.str()), Catch::Contains("Is a directory"));
}

TEST_CASE("read_file reads large files whole", "[unit]") {
  kg::test::TempDir d;
  std::string big(3 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7 + (i >> 13));
  kg::write_file_atomic(d / "big", big);
  CHECK(kg::read_file(d / "big") == big);
}

TEST_CASE("replace_directory swaps contents and leaves nothing behind", "[unit]") {
  kg::test::TempDir d;
  const std::string dst = d / "out", src = d / "out.new";

  SECTION("dst missing: plain rename") {
    kg::write_file_atomic(src + "/a.txt", "A");
    kg::replace_directory(src, dst);
    CHECK(kg::read_file(dst + "/a.txt") == "A");
    CHECK(entries(d.str()) == std::set<std::string>{"out"});
  }
  SECTION("dst present: exchanged, old tree removed") {
    kg::write_file_atomic(dst + "/old.txt", "old");
    kg::write_file_atomic(dst + "/deep/er/x", "x");
    kg::write_file_atomic(src + "/new.txt", "new");
    kg::replace_directory(src, dst);
    CHECK(entries(dst) == std::set<std::string>{"new.txt"});
    CHECK(kg::read_file(dst + "/new.txt") == "new");
    CHECK(entries(d.str()) == std::set<std::string>{"out"});
  }
  SECTION("src must be a directory") {
    kg::write_file_atomic(src, "file");
    CHECK_THROWS_AS(kg::replace_directory(src, dst), kg::DataError);
    CHECK_THROWS_AS(kg::replace_directory(d / "nope", dst), kg::DataError);
  }
}

TEST_CASE("replace_directory can keep the previous tree elsewhere", "[unit]") {
  kg::test::TempDir d;
  const std::string dst = d / "last", src = d / ".tmp-last", keep = d / "step-000000007";
  kg::write_file_atomic(dst + "/state.json", "7");
  kg::write_file_atomic(src + "/state.json", "9");
  kg::write_file_atomic(keep + "/stale.txt", "an older rotation");  // replaced, not merged
  kg::replace_directory(src, dst, keep);
  CHECK(kg::read_file(dst + "/state.json") == "9");
  CHECK(entries(keep) == std::set<std::string>{"state.json"});
  CHECK(kg::read_file(keep + "/state.json") == "7");
  CHECK(entries(d.str()) == std::set<std::string>{"last", "step-000000007"});

  SECTION("dst missing: nothing to keep") {
    kg::write_file_atomic(src + "/state.json", "10");
    kg::replace_directory(src, d / "best", d / "best-old");
    CHECK(kg::read_file(d / "best/state.json") == "10");
    CHECK(entries(d.str()) == std::set<std::string>{"best", "last", "step-000000007"});
  }
}

TEST_CASE("discard_directory removes a tree, and a missing one is fine", "[unit]") {
  kg::test::TempDir d;
  kg::write_file_atomic(d / "step-1/deep/x", "x");
  kg::discard_directory(d / "step-1");
  CHECK(entries(d.str()).empty());
  CHECK_NOTHROW(kg::discard_directory(d / "never-was"));
}

TEST_CASE("fsync_directory", "[unit]") {
  kg::test::TempDir d;
  CHECK_NOTHROW(kg::fsync_directory(d.str()));
  CHECK_THROWS_AS(kg::fsync_directory(d / "missing"), kg::DataError);
}

TEST_CASE("remove_tree removes a tree, never follows links, accepts a missing path", "[unit]") {
  kg::test::TempDir d;
  kg::write_file_atomic(d / "keep/outside.txt", "stays");
  kg::write_file_atomic(d / "t/a.txt", "a");
  kg::write_file_atomic(d / "t/deep/er/b.txt", "b");
  std::filesystem::create_directories(d / "t/empty");
  std::filesystem::create_directory_symlink(d / "keep", d / "t/link");  // must not be entered
  std::error_code ec;
  CHECK(kg::remove_tree(d / "t", ec));
  CHECK(!ec);
  CHECK(!std::filesystem::exists(d / "t"));
  CHECK(kg::read_file(d / "keep/outside.txt") == "stays");

  CHECK(kg::remove_tree(d / "never-was", ec));  // nothing to remove is success, as with remove_all
  CHECK(!ec);
  kg::write_file_atomic(d / "file", "x");
  CHECK(kg::remove_tree(d / "file", ec));  // a plain file too
  CHECK(!std::filesystem::exists(d / "file"));
  CHECK(entries(d.str()) == std::set<std::string>{"keep"});
}

}  // namespace KG_UNITY_ID
}  // namespace
