// The facts about which transforms need OpenCV are stated once, in the transform files (KG_TRANSFORMS_NEED_OPENCV):
// CMake derives generated/transform_names.h from them. Here the registry and the docs are held to that list, so a
// new transform, or one that starts calling OpenCV, cannot leave the docs or the no-OpenCV build's error behind.
#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

#include "data/transform.h"
#include "test_paths.h"
#include "transform_names.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

std::string read_doc(const std::string& rel) {
  std::ifstream in(std::string(KGTRAIN_SOURCE_DIR) + "/" + rel);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The backquoted names between `from` and `to` in text (the first such stretch), whitespace and newlines aside.
std::set<std::string> quoted_names(const std::string& text, const std::string& from, const std::string& to) {
  const size_t a = text.find(from);
  REQUIRE(a != std::string::npos);
  const size_t b = text.find(to, a + from.size());
  REQUIRE(b != std::string::npos);
  const std::string part = text.substr(a + from.size(), b - a - from.size());
  std::set<std::string> out;
  const std::regex name("`([a-z0-9_]+)`");
  for (auto it = std::sregex_iterator(part.begin(), part.end(), name); it != std::sregex_iterator(); ++it)
    out.insert((*it)[1].str());
  return out;
}

}  // namespace

TEST_CASE("the transforms' OpenCV needs are stated once: registry and docs follow the files", "[unit][data]") {
  const std::set<std::string> opencv{KG_OPENCV_TRANSFORM_NAMES};
  const std::set<std::string> plain{KG_PLAIN_TRANSFORM_NAMES};
  REQUIRE_FALSE(opencv.empty());
  REQUIRE_FALSE(plain.empty());
  std::set<std::string> all = opencv;
  all.insert(plain.begin(), plain.end());
  CHECK(all.size() == opencv.size() + plain.size());

  // CMake's reading of the files finds every registered transform (this build has OpenCV: the tests need it).
  const auto names = kg::data::transform_registry().names();
  CHECK(std::set<std::string>(names.begin(), names.end()) == all);

  // docs/devices.md, "Without OpenCV at all": what still runs and what a recipe is refused.
  const std::string devices = read_doc("docs/devices.md");
  CHECK(quoted_names(devices, "with the transforms that only move or scale pixels", "from image files too") == plain);
  CHECK(quoted_names(devices, "What needs OpenCV says so and stops: a recipe naming", "is a recipe error") == opencv);

  // docs/data.md's list of augmentations names every transform.
  const std::string data = read_doc("docs/data.md");
  std::set<std::string> listed = quoted_names(data, "**Augmentation** (`data.augment`", "Sizing transforms");
  listed.erase("data.augment");
  for (const auto& n : all) CHECK(listed.count(n) == 1);
}

}  // namespace KG_UNITY_ID
}  // namespace
