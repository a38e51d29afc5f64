// Augmentation transforms: geometry, ranges, determinism per seed, p = 0 / p = 1, evaluation drops the
// random ones, a fixed number of RNG draws whatever p decides, exact checks against the references.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <set>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/error.h"
#include "core/random.h"
#include "data/transform.h"
#include "support/images.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::config::json;
using kg::data::ImageGeometry;

namespace {

using kg::test::ramp;

// Values 1..255 (never 0) with no structure, so flips, crops and blurs all change something.
cv::Mat noise(int h, int w, int c, uint64_t seed = 42) {
  cv::Mat m(h, w, CV_8UC(c));
  kg::Rng rng(seed);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w * c; ++x) m.ptr<uint8_t>(y)[x] = static_cast<uint8_t>(1 + rng.below(255));
  return m;
}

std::vector<float> run(const std::string& json_list, const ImageGeometry& g, uint64_t seed, bool train = true,
                       cv::Mat img = cv::Mat()) {
  kg::data::Pipeline p(json::parse(json_list), g, train);
  if (img.empty()) img = noise(static_cast<int>(g.height), static_cast<int>(g.width), static_cast<int>(g.channels));
  std::vector<float> out(static_cast<size_t>(g.channels * g.height * g.width));
  kg::Rng rng(seed);
  p.process(img.clone(), rng, out.data());
  return out;
}

kg::data::TransformPtr make(const std::string& json_table, const ImageGeometry& g) {
  json t = json::parse(json_table);
  return kg::data::transform_registry().create(t.at("name").get<std::string>(), kg::config::Options(t, "test"), g);
}

// The table with `p` replaced.
std::string with_p(const std::string& json_table, double p) {
  json t = json::parse(json_table);
  t["p"] = p;
  return t.dump();
}

std::string list(const std::string& json_table) { return "[" + json_table + "]"; }

// One table per random transform, with settings that change every image at p = 1.
const std::vector<std::string>& random_specs() {
  static const std::vector<std::string> specs{
      R"({"name": "vflip"})",
      R"({"name": "grayscale"})",
      R"({"name": "gaussian_blur", "kernel_size": 5, "sigma": [0.5, 1.5]})",
      R"({"name": "color_jitter", "brightness": 0.4, "contrast": 0.4, "saturation": 0.4, "hue": 0.2})",
      R"({"name": "affine", "degrees": 20, "translate": [0.1, 0.1], "scale": [0.8, 1.2], "shear": 10})",
      R"({"name": "rotate", "degrees": 30})",
      R"({"name": "random_erasing", "scale": [0.1, 0.3]})",
      R"({"name": "random_erasing", "mode": "pixel", "count": 3})",
      R"({"name": "random_erasing", "mode": "rand"})",
      R"({"name": "random_resized_crop", "scale": [0.2, 0.6]})",
  };
  return specs;
}

const std::vector<std::string>& deterministic_specs() {
  static const std::vector<std::string> specs{
      R"({"name": "resize"})",
      R"({"name": "resize", "mode": "shorter"})",
      R"({"name": "resize", "mode": "pad", "fill": 7})",
      R"({"name": "resize", "size": [9, 7], "interpolation": "cubic"})",
      R"({"name": "center_crop"})",
      R"({"name": "center_crop", "crop_pct": 0.875})",
      R"({"name": "normalize", "preset": "imagenet"})",
  };
  return specs;
}

std::string problems_of(const std::string& toml) {
  try {
    kg::config::validate(kg::config::parse_toml_string(toml, "r.toml"));
  } catch (const kg::ConfigError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("augment: every transform keeps geometry, channels and depth on 8-bit and float images", "[unit][data]") {
  for (int64_t c : {1, 3}) {
    ImageGeometry g{12, 10, c};
    std::vector<std::string> all = random_specs();
    all.insert(all.end(), deterministic_specs().begin(), deterministic_specs().end());
    for (const auto& spec : all) {
      auto t = make(with_p(spec, 1.0), g);
      for (int depth : {CV_8U, CV_32F}) {
        INFO(spec << " channels " << c << " depth " << depth);
        cv::Mat src = noise(t->sizes_output() ? 17 : 12, t->sizes_output() ? 23 : 10, static_cast<int>(c));
        if (depth == CV_32F) src.convertTo(src, CV_32F, 1.0 / 64, -2.0);  // normalized-looking, negatives included
        cv::Mat before = src.clone();
        cv::Mat img = src;  // shares src's buffer: the transform must not write into it
        kg::Rng rng(3);
        t->apply(img, rng);
        bool custom_size = contains(spec, "\"size\"");
        CHECK(img.rows == (custom_size ? 9 : 12));
        CHECK(img.cols == (custom_size ? 7 : 10));
        CHECK(img.channels() == c);
        CHECK(img.depth() == (contains(spec, "normalize") ? CV_32F : depth));
        CHECK(cv::norm(src, before, cv::NORM_INF) == 0);
        if (img.depth() == CV_32F) CHECK(cv::checkRange(img));
      }
    }
  }
}

TEST_CASE("augment: 8-bit pixels stay in [0, 1] without normalize, on images of any size", "[unit][data]") {
  ImageGeometry g{12, 12, 3};
  std::vector<std::string> all = random_specs();
  all.insert(all.end(), deterministic_specs().begin(), deterministic_specs().end() - 1);  // all but normalize
  for (const auto& spec : all)
    for (cv::Mat src : {noise(12, 12, 3), noise(20, 31, 3), noise(7, 5, 3)}) {
      INFO(spec << " input " << src.rows << "x" << src.cols);
      auto v = run(list(spec), g, 11, true, src);
      CHECK(v.size() == 3 * 12 * 12);
      for (float x : v) REQUIRE((x >= 0.0f && x <= 1.0f));
    }
}

TEST_CASE("augment: random transforms are deterministic per seed, vary across seeds, p = 0 is identity",
          "[unit][data]") {
  ImageGeometry g{12, 12, 3};
  const auto plain = run("[]", g, 0);
  for (const auto& spec : random_specs()) {
    INFO(spec);
    const std::string on = list(with_p(spec, 1.0));
    CHECK(run(on, g, 5) == run(on, g, 5));
    bool differs = false;
    for (uint64_t s = 0; s < 10 && !differs; ++s) differs = run(on, g, s) != run(on, g, 100);
    // vflip and grayscale at p = 1 have no parameters to vary.
    if (!contains(spec, "vflip") && !contains(spec, "grayscale")) CHECK(differs);
    CHECK(run(list(with_p(spec, 0.0)), g, 5) == plain);
    CHECK(run(on, g, 5) != plain);
    CHECK(run(on, g, 5, /*train=*/false) == plain);  // evaluation drops it
    // Probability p: roughly p of the samples change.
    int changed = 0;
    for (uint64_t s = 0; s < 200; ++s) changed += run(list(with_p(spec, 0.3)), g, s) != plain;
    CHECK(changed > 30);
    CHECK(changed < 90);
  }
}

TEST_CASE("augment: the number of RNG draws does not depend on p", "[unit][data]") {
  ImageGeometry g{12, 12, 3};
  for (const auto& spec : random_specs())
    for (uint64_t seed : {1, 2, 3}) {
      INFO(spec << " seed " << seed);
      auto off = make(with_p(spec, 0.0), g), on = make(with_p(spec, 1.0), g);
      cv::Mat a = noise(12, 12, 3), b = a.clone();
      kg::Rng ra(seed), rb(seed);
      off->apply(a, ra);
      on->apply(b, rb);
      CHECK(ra.next() == rb.next());
    }
  // Therefore a later transform sees the same stream: pad_crop after vflip(p = 0) or vflip(p = 1)
  // crops the same window (here on a constant-column image vflip cannot be seen).
  cv::Mat cols(12, 12, CV_8UC1);
  for (int y = 0; y < 12; ++y)
    for (int x = 0; x < 12; ++x) cols.at<uint8_t>(y, x) = static_cast<uint8_t>(20 * x);
  ImageGeometry g1{12, 12, 1};
  for (uint64_t s = 0; s < 5; ++s)
    CHECK(run(R"([{"name": "vflip", "p": 0.0}, {"name": "pad_crop", "pad": 3, "mode": "constant"}])", g1, s, true,
              cols) == run(R"([{"name": "vflip", "p": 1.0}, {"name": "pad_crop", "pad": 3, "mode": "constant"}])", g1,
                           s, true, cols));
}

TEST_CASE("augment: evaluation keeps resize, center_crop and normalize and drops the rest", "[unit][data]") {
  ImageGeometry g{8, 8, 3};
  std::string all = "[";
  for (const auto& s : random_specs()) all += with_p(s, 1.0) + ",";
  all.back() = ']';
  CHECK(run(all, g, 1, /*train=*/false) == run("[]", g, 1));
  CHECK(kg::data::Pipeline(json::parse(all), g, false).size() == 0);
  auto wide = noise(8, 16, 3);
  auto kept = R"([{"name": "resize", "mode": "pad"}, {"name": "hflip"}, {"name": "normalize"}])";
  CHECK(kg::data::Pipeline(json::parse(kept), g, false).size() == 2);
  CHECK(run(kept, g, 1, false, wide) ==
        run(R"([{"name": "resize", "mode": "pad"}, {"name": "normalize"}])", g, 9, true, wide));
}

TEST_CASE("vflip mirrors rows", "[unit][data]") {
  ImageGeometry g{4, 5, 1};
  auto plain = run("[]", g, 0);
  auto flipped = run(R"([{"name": "vflip", "p": 1.0}])", g, 0);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 5; ++x)
      CHECK(flipped[static_cast<size_t>(y * 5 + x)] == plain[static_cast<size_t>((3 - y) * 5 + x)]);
}

TEST_CASE("grayscale: equal channels holding the ITU-R 601 luma, a no-op on gray images", "[unit][data]") {
  ImageGeometry g{6, 7, 3};
  auto img = noise(6, 7, 3);
  auto v = run(R"([{"name": "grayscale", "p": 1.0}])", g, 0, true, img);
  const size_t plane = 42;
  for (int y = 0; y < 6; ++y)
    for (int x = 0; x < 7; ++x) {
      const uint8_t* px = img.ptr<uint8_t>(y) + 3 * x;
      double luma = (0.299 * px[0] + 0.587 * px[1] + 0.114 * px[2]) / 255.0;
      size_t i = static_cast<size_t>(y * 7 + x);
      CHECK(v[i] == v[plane + i]);
      CHECK(v[i] == v[2 * plane + i]);
      CHECK(v[i] == Approx(luma).margin(0.6 / 255));
    }
  ImageGeometry g1{6, 7, 1};
  CHECK(run(R"([{"name": "grayscale", "p": 1.0}])", g1, 0) == run("[]", g1, 0));
}

TEST_CASE("resize: stretch, shorter side + centre crop, letterbox", "[unit][data]") {
  ImageGeometry g{10, 10, 1};
  // 20 rows x 10 columns: "shorter" keeps the width and takes rows 5..14.
  auto tall = ramp(20, 10, 1);
  auto v = run(R"([{"name": "resize", "mode": "shorter"}])", g, 0, false, tall);
  for (int y = 0; y < 10; ++y)
    for (int x = 0; x < 10; ++x)
      CHECK(v[static_cast<size_t>(y * 10 + x)] == Approx(tall.at<uint8_t>(y + 5, x) / 255.0));
  // 40 x 20 is first scaled to 20 x 10 (area), then cropped.
  auto big = noise(40, 20, 1);
  cv::Mat half;
  cv::resize(big, half, cv::Size(10, 20), 0, 0, cv::INTER_AREA);
  v = run(R"([{"name": "resize", "mode": "shorter"}])", g, 0, false, big);
  for (int y = 0; y < 10; ++y)
    for (int x = 0; x < 10; ++x)
      CHECK(v[static_cast<size_t>(y * 10 + x)] == Approx(half.at<uint8_t>(y + 5, x) / 255.0));
  // Stretch is the pipeline's own resize.
  CHECK(run(R"([{"name": "resize"}])", g, 0, false, big) == run("[]", g, 0, false, big));
  // Letterbox: 10 rows x 20 columns fit as 5 x 10, two rows of fill above and three below.
  auto wide = noise(10, 20, 1);
  v = run(R"([{"name": "resize", "mode": "pad", "fill": 255}])", g, 0, false, wide);
  cv::Mat small;
  cv::resize(wide, small, cv::Size(10, 5), 0, 0, cv::INTER_AREA);
  for (int y = 0; y < 10; ++y)
    for (int x = 0; x < 10; ++x) {
      float want = y < 2 || y >= 7 ? 1.0f : small.at<uint8_t>(y - 2, x) / 255.0f;
      CHECK(v[static_cast<size_t>(y * 10 + x)] == Approx(want));
    }
  // A size other than data.image_size is resized to it at the end of the pipeline.
  CHECK(run(R"([{"name": "resize", "size": 20}])", g, 0, false, big).size() == 100);
}

TEST_CASE("center_crop: central window, padding with fill, crop_pct scaling", "[unit][data]") {
  ImageGeometry g{10, 10, 1};
  auto img = ramp(20, 16, 1);
  auto v = run(R"([{"name": "center_crop"}])", g, 0, false, img);
  for (int y = 0; y < 10; ++y)
    for (int x = 0; x < 10; ++x)
      CHECK(v[static_cast<size_t>(y * 10 + x)] == Approx(img.at<uint8_t>(y + 5, x + 3) / 255.0));
  // A 6 x 6 image is padded by 2 on each side.
  auto small = noise(6, 6, 1);
  v = run(R"([{"name": "center_crop", "fill": 255}])", g, 0, false, small);
  for (int y = 0; y < 10; ++y)
    for (int x = 0; x < 10; ++x) {
      bool inside = y >= 2 && y < 8 && x >= 2 && x < 8;
      CHECK(v[static_cast<size_t>(y * 10 + x)] == Approx(inside ? small.at<uint8_t>(y - 2, x - 2) / 255.0 : 1.0));
    }
  // crop_pct 0.5: a 40 x 40 image is scaled to 20 x 20, then the central 10 x 10 is kept.
  auto big = noise(40, 40, 1);
  cv::Mat scaled;
  cv::resize(big, scaled, cv::Size(20, 20), 0, 0, cv::INTER_AREA);
  v = run(R"([{"name": "center_crop", "crop_pct": 0.5}])", g, 0, false, big);
  for (int y = 0; y < 10; ++y)
    for (int x = 0; x < 10; ++x)
      CHECK(v[static_cast<size_t>(y * 10 + x)] == Approx(scaled.at<uint8_t>(y + 5, x + 5) / 255.0));
}

TEST_CASE("random_resized_crop: full-area square crop equals a plain resize, crops lie inside", "[unit][data]") {
  ImageGeometry g{12, 12, 3};
  auto img = noise(24, 24, 3);
  const std::string full = R"([{"name": "random_resized_crop", "scale": [1, 1], "ratio": [1, 1]}])";
  for (uint64_t s = 0; s < 3; ++s) CHECK(run(full, g, s, true, img) == run("[]", g, s, true, img));
  // At evaluation the whole image is resized.
  CHECK(run(R"([{"name": "random_resized_crop"}])", g, 0, false, img) == run("[]", g, 0, false, img));
  // Nearest interpolation copies pixels: a crop of a constant-column ramp shows increasing columns.
  ImageGeometry g1{8, 8, 1};
  cv::Mat cols(40, 40, CV_8UC1);
  for (int y = 0; y < 40; ++y)
    for (int x = 0; x < 40; ++x) cols.at<uint8_t>(y, x) = static_cast<uint8_t>(5 * x);
  auto v =
      run(R"([{"name": "random_resized_crop", "scale": [0.1, 0.3], "interpolation": "nearest"}])", g1, 4, true, cols);
  for (int x = 1; x < 8; ++x) CHECK(v[static_cast<size_t>(x)] >= v[static_cast<size_t>(x - 1)]);
  CHECK(v[7] - v[0] < 0.9f * 195.0f / 255.0f);  // a crop, not the whole width
}

TEST_CASE("affine: identity parameters leave the image unchanged, rotation by 180 degrees", "[unit][data]") {
  ImageGeometry g{9, 11, 3};
  auto img = noise(9, 11, 3);
  const auto plain = run("[]", g, 0, true, img);
  CHECK(run(R"([{"name": "affine", "degrees": 0, "translate": [0, 0], "scale": [1, 1], "shear": 0}])", g, 3, true,
            img) == plain);
  CHECK(run(R"([{"name": "rotate", "degrees": 0}])", g, 3, true, img) == plain);
  // 180 degrees about the centre of an odd-sized image is an exact point reflection.
  for (auto t : {R"([{"name": "affine", "degrees": [180, 180], "interpolation": "nearest"}])",
                 R"([{"name": "rotate", "degrees": [180, 180], "interpolation": "nearest"}])"}) {
    auto v = run(t, g, 0, true, img);
    for (int k = 0; k < 3; ++k)
      for (int y = 0; y < 9; ++y)
        for (int x = 0; x < 11; ++x)
          CHECK(v[static_cast<size_t>(k * 99 + y * 11 + x)] ==
                plain[static_cast<size_t>(k * 99 + (8 - y) * 11 + (10 - x))]);
  }
  // A tiny scale shrinks the image to its centre pixel: everything else is fill.
  auto v = run(R"([{"name": "affine", "scale": [0.01, 0.01], "fill": 255}])", g, 0, true, img);
  size_t filled = 0;
  for (float x : v) filled += x == 1.0f;
  CHECK(filled >= v.size() - 3);
}

TEST_CASE("color_jitter: brightness scales a constant image within its bounds", "[unit][data]") {
  ImageGeometry g{5, 5, 3};
  cv::Mat img(5, 5, CV_8UC3, cv::Scalar(100, 100, 100));
  const std::string t = R"([{"name": "color_jitter", "brightness": 0.5, "contrast": 0, "saturation": 0, "hue": 0}])";
  std::set<float> seen;
  for (uint64_t s = 0; s < 20; ++s) {
    auto v = run(t, g, s, true, img);
    for (float x : v) CHECK(x == v[0]);
    CHECK(v[0] >= 50 / 255.0f - 1e-6f);
    CHECK(v[0] <= 150 / 255.0f + 1e-6f);
    seen.insert(v[0]);
  }
  CHECK(seen.size() > 5);
  // Contrast and saturation leave a constant gray image as it is; hue has nothing to rotate.
  CHECK(run(R"([{"name": "color_jitter", "brightness": 0, "contrast": 0.8, "saturation": 0.8, "hue": 0.5}])", g, 1,
            true, img) == run("[]", g, 1, true, img));
  // Hue of a pure colour: red rotated by a third of the wheel is green.
  cv::Mat red(5, 5, CV_8UC3, cv::Scalar(200, 0, 0));
  auto tr = make(R"({"name": "color_jitter", "brightness": 0, "contrast": 0, "saturation": 0, "hue": 0.5})", g);
  for (uint64_t s = 0; s < 20; ++s) {
    cv::Mat m = red.clone();
    kg::Rng rng(s);
    tr->apply(m, rng);
    cv::Vec3b px = m.at<cv::Vec3b>(0, 0);
    CHECK(std::max({px[0], px[1], px[2]}) == 200);  // value kept
    CHECK(std::min({px[0], px[1], px[2]}) == 0);    // saturation kept
  }
}

TEST_CASE("gaussian_blur: a constant image stays constant, detail is smoothed", "[unit][data]") {
  ImageGeometry g{8, 8, 1};
  cv::Mat flat(8, 8, CV_8UC1, cv::Scalar(77));
  const std::string t = R"([{"name": "gaussian_blur", "p": 1.0, "kernel_size": 5}])";
  for (float x : run(t, g, 0, true, flat)) CHECK(x == Approx(77 / 255.0));
  auto img = noise(8, 8, 1);
  auto plain = run("[]", g, 0, true, img), blurred = run(t, g, 0, true, img);
  auto spread = [](const std::vector<float>& v) {
    double m = 0, s = 0;
    for (float x : v) m += x;
    m /= static_cast<double>(v.size());
    for (float x : v) s += (x - m) * (x - m);
    return s;
  };
  CHECK(spread(blurred) < spread(plain));
}

TEST_CASE("random_erasing: one rectangle of the const value, its area within scale", "[unit][data]") {
  ImageGeometry g{32, 32, 3};
  const std::string t = R"([{"name": "random_erasing", "p": 1.0, "scale": [0.1, 0.3], "mode": "const"}])";
  int erased_samples = 0;
  for (uint64_t s = 0; s < 20; ++s) {
    auto v = run(t, g, s);  // noise() has no zeros
    const size_t plane = 32 * 32;
    int x0 = 32, y0 = 32, x1 = -1, y1 = -1, zeros = 0;
    for (int y = 0; y < 32; ++y)
      for (int x = 0; x < 32; ++x) {
        size_t i = static_cast<size_t>(y * 32 + x);
        bool z = v[i] == 0.0f;
        CHECK(z == (v[plane + i] == 0.0f));
        CHECK(z == (v[2 * plane + i] == 0.0f));
        if (!z) continue;
        ++zeros;
        x0 = std::min(x0, x), y0 = std::min(y0, y), x1 = std::max(x1, x), y1 = std::max(y1, y);
      }
    if (zeros == 0) continue;
    ++erased_samples;
    CHECK(zeros == (x1 - x0 + 1) * (y1 - y0 + 1));  // a filled rectangle
    double frac = zeros / 1024.0;
    CHECK(frac >= 0.1 - 0.03);
    CHECK(frac <= 0.3 + 0.03);
  }
  CHECK(erased_samples >= 18);
  // On float images "pixel" draws normal values; "const" writes `value` as given.
  auto tr = make(R"({"name": "random_erasing", "p": 1.0, "mode": "pixel", "scale": [0.3, 0.3]})", g);
  cv::Mat f(32, 32, CV_32FC3, cv::Scalar(5, 5, 5));
  kg::Rng rng(0);
  tr->apply(f, rng);
  double lo, hi;
  cv::minMaxLoc(f.reshape(1), &lo, &hi);
  CHECK(lo < 0);
  CHECK(hi == 5);
  auto tc = make(R"({"name": "random_erasing", "p": 1.0, "value": -1.5})", g);
  cv::Mat f2(32, 32, CV_32FC1, cv::Scalar(5));
  kg::Rng rng2(0);
  tc->apply(f2, rng2);
  cv::minMaxLoc(f2, &lo, &hi);
  CHECK(lo == -1.5);
}

TEST_CASE("normalize preset imagenet: RGB statistics, channel averages for gray, wins over mean/std", "[unit][data]") {
  ImageGeometry g{2, 2, 3};
  cv::Mat img(2, 2, CV_8UC3, cv::Scalar(255, 0, 51));
  auto v = run(R"([{"name": "normalize", "preset": "imagenet", "mean": [0.5], "std": [0.5]}])", g, 0, true, img);
  CHECK(v[0] == Approx((1.0 - 0.485) / 0.229));
  CHECK(v[4] == Approx((0.0 - 0.456) / 0.224));
  CHECK(v[8] == Approx((0.2 - 0.406) / 0.225));
  ImageGeometry g1{2, 2, 1};
  cv::Mat gray(2, 2, CV_8UC1, cv::Scalar(255));
  CHECK(run(R"([{"name": "normalize", "preset": "imagenet"}])", g1, 0, true, gray)[0] == Approx((1.0 - 0.449) / 0.226));
  // The default is unchanged: mean and std keys.
  CHECK(run(R"([{"name": "normalize", "mean": [0.5], "std": [0.5]}])", g, 0, true, img)[0] == Approx(1.0));
}

TEST_CASE("augment: bad option values are recipe errors naming the key", "[unit][data]") {
  auto bad = [](const std::string& table) { return problems_of("[data]\naugment = [" + table + "]\n"); };
  CHECK(contains(bad(R"({ name = "random_resized_crop", scale = [0.9, 0.1] })"),
                 "data.augment[0].scale: expected [lo, hi] with lo <= hi"));
  CHECK(contains(bad(R"({ name = "random_resized_crop", ratio = [0.0, 1.0] })"), "data.augment[0].ratio"));
  CHECK(contains(bad(R"({ name = "gaussian_blur", kernel_size = 4 })"),
                 "data.augment[0].kernel_size: expected an odd kernel size"));
  CHECK(contains(bad(R"({ name = "gaussian_blur", sigma = [0.0, 1.0] })"), "data.augment[0].sigma"));
  CHECK(contains(bad(R"({ name = "color_jitter", hue = 0.7 })"), "data.augment[0].hue: expected a number in [0, 0.5]"));
  CHECK(contains(bad(R"({ name = "color_jitter", brightness = -0.1 })"), "data.augment[0].brightness"));
  CHECK(contains(bad(R"({ name = "affine", degrees = [10, -10] })"), "data.augment[0].degrees"));
  CHECK(contains(bad(R"({ name = "affine", shear = [1, 2, 3] })"), "data.augment[0].shear"));
  CHECK(contains(bad(R"({ name = "affine", scale = [1.2, 0.8] })"), "data.augment[0].scale"));
  CHECK(contains(bad(R"({ name = "rotate", degrees = -5 })"), "data.augment[0].degrees"));
  CHECK(contains(bad(R"({ name = "resize", size = [0, 4] })"), "data.augment[0].size"));
  CHECK(contains(bad(R"({ name = "resize", mode = "fit" })"), "data.augment[0].mode"));
  CHECK(contains(bad(R"({ name = "center_crop", crop_pct = 0 })"), "data.augment[0].crop_pct"));
  CHECK(contains(bad(R"({ name = "random_erasing", mode = "noise" })"), "data.augment[0].mode"));
  CHECK(contains(bad(R"({ name = "random_erasing", count = 0 })"), "data.augment[0].count"));
  CHECK(contains(bad(R"({ name = "vflip", p = 1.5 })"), "data.augment[0].p"));
  CHECK(contains(bad(R"({ name = "normalize", preset = "imagenett" })"), "did you mean imagenet"));
  CHECK(bad(R"({ name = "affine", degrees = [-5, 10], shear = [0, 1, -2, 2], translate = [0.1, 0.2] })").empty());
  CHECK(bad(R"({ name = "resize", size = [32, 48], mode = "pad", fill = 114 })").empty());
}

TEST_CASE("augment: each transform's documented example validates and runs on 8-bit RGB and gray", "[unit][data]") {
  for (auto* c : kg::data::transform_registry().components()) {
    INFO(c->name << " example:\n" << c->example);
    auto recipe = kg::config::Recipe::validate(kg::config::parse_toml_string(c->example, c->name + " example"));
    json augment = recipe.tree().at("data.augment").value;
    for (int64_t ch : {1, 3}) {
      ImageGeometry g{16, 16, ch};
      auto v = run(augment.dump(), g, 1, true, noise(20, 24, static_cast<int>(ch)));
      for (float x : v) REQUIRE(std::isfinite(x));
    }
  }
}

}  // namespace KG_UNITY_ID
}  // namespace
