// Transforms: shapes, ranges, determinism per seed, p = 0 / p = 1, evaluation keeps only deterministic ones.
#include <catch2/catch.hpp>

#include <opencv2/core.hpp>

#include "core/random.h"
#include "data/transform.h"
#include "support/images.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

using kg::test::ramp;

std::vector<float> run(const std::string& json_list, const kg::data::ImageGeometry& g, uint64_t seed, bool train = true,
                       cv::Mat img = cv::Mat()) {
  kg::data::Pipeline p(kg::config::json::parse(json_list), g, train);
  if (img.empty()) img = ramp(static_cast<int>(g.height), static_cast<int>(g.width), static_cast<int>(g.channels));
  std::vector<float> out(static_cast<size_t>(g.channels * g.height * g.width));
  kg::Rng rng(seed);
  p.process(img, rng, out.data());
  return out;
}

}  // namespace

TEST_CASE("without normalize pixels are scaled to [0, 1] in CHW order", "[unit][data]") {
  kg::data::ImageGeometry g{4, 5, 3};
  auto v = run("[]", g, 0);
  auto img = ramp(4, 5, 3);
  // channel 2, row 3, column 4
  CHECK(v[2 * 20 + 3 * 5 + 4] == Approx(img.ptr<uint8_t>(3)[4 * 3 + 2] / 255.0));
}

TEST_CASE("hflip mirrors at p = 1 and never at p = 0", "[unit][data]") {
  kg::data::ImageGeometry g{4, 5, 1};
  auto plain = run("[]", g, 0);
  auto flipped = run(R"([{"name": "hflip", "p": 1.0}])", g, 0);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 5; ++x)
      CHECK(flipped[static_cast<size_t>(y * 5 + x)] == plain[static_cast<size_t>(y * 5 + 4 - x)]);
  CHECK(run(R"([{"name": "hflip", "p": 0.0}])", g, 0) == plain);
  CHECK(run(R"([{"name": "hflip", "p": 1.0}])", g, 0, /*train=*/false) == plain);  // evaluation drops it
}

TEST_CASE("pad_crop keeps the size, is deterministic per seed and varies across seeds", "[unit][data]") {
  kg::data::ImageGeometry g{8, 8, 1};
  const std::string t = R"([{"name": "pad_crop", "pad": 2}])";
  CHECK(run(t, g, 5) == run(t, g, 5));
  bool differs = false;
  for (uint64_t s = 0; s < 10; ++s) differs = differs || run(t, g, s) != run(t, g, 100);
  CHECK(differs);
  CHECK(run(R"([{"name": "pad_crop", "pad": 2, "p": 0.0}])", g, 3) == run("[]", g, 3));
  // With padding 0 the only window is the image itself.
  CHECK(run(R"([{"name": "pad_crop", "pad": 0}])", g, 3) == run("[]", g, 3));
  // Every output pixel is a pixel of the reflect-padded input.
  auto v = run(t, g, 7);
  for (float x : v) CHECK((x >= 0.0f && x <= 1.0f));
}

TEST_CASE("normalize uses [0, 1] pixel units and broadcasts one value", "[unit][data]") {
  kg::data::ImageGeometry g{2, 2, 3};
  cv::Mat img(2, 2, CV_8UC3, cv::Scalar(255, 0, 51));
  auto v = run(R"([{"name": "normalize", "mean": [0.5], "std": [0.5]}])", g, 0, true, img);
  CHECK(v[0] == Approx(1.0));
  CHECK(v[4] == Approx(-1.0));
  CHECK(v[8] == Approx((0.2 - 0.5) / 0.5));
  auto w = run(R"([{"name": "normalize", "mean": [0.1, 0.2, 0.3], "std": [1, 2, 4]}])", g, 0, false, img);
  CHECK(w[8] == Approx((0.2 - 0.3) / 4));
  CHECK_THROWS(run(R"([{"name": "normalize", "mean": [0.1, 0.2], "std": [1]}])", g, 0));
}

TEST_CASE("images of another size are resized to data.image_size", "[unit][data]") {
  kg::data::ImageGeometry g{6, 6, 1};
  auto v = run("[]", g, 0, true, ramp(12, 12, 1));
  CHECK(v.size() == 36);
}

}  // namespace KG_UNITY_ID
}  // namespace
