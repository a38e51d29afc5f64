// TTA views: flips and d4 by their algebra, five_crop / ten_crop / multi_scale against torchvision
// (tests/golden/tta.json from scripts/golden/gen_tta.py), train_aug flags, and the recipe errors.
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include <set>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/error.h"
#include "core/fs.h"
#include "test_paths.h"
#include "tta/view.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

using kg::config::json;
using kg::data::ImageGeometry;

const json& golden() {
  static const json j = json::parse(kg::read_file(KGTRAIN_SOURCE_DIR "/tests/golden/tta.json"));
  return j;
}

kg::config::Tree parse(const std::string& toml) { return kg::config::parse_toml_string(toml, "test.toml"); }
kg::config::Recipe recipe(const std::string& toml) { return kg::config::Recipe::validate(parse(toml)); }

std::vector<kg::tta::ViewPtr> views(const std::string& list, ImageGeometry g) {
  return kg::tta::build_views(recipe("[tta]\nviews = " + list + "\n"), g);
}

// The generator's input: x[k] = sin(0.37 k), shape [1, 1, h, w].
at::Tensor sin_input(int64_t h, int64_t w) {
  return torch::sin(torch::arange(h * w, torch::kDouble) * 0.37).reshape({1, 1, h, w}).to(torch::kFloat);
}

std::vector<float> values(const at::Tensor& t) {
  auto c = t.contiguous().to(torch::kFloat);
  return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}

void check_close(const at::Tensor& got, const json& want, double tol = 1e-5) {
  auto v = values(got);
  REQUIRE(v.size() == want.size());
  for (size_t i = 0; i < v.size(); ++i) CHECK(v[i] == Approx(want[i].get<double>()).margin(tol));
}

// An asymmetric batch: every value distinct.
at::Tensor ramp(int64_t b, int64_t c, int64_t h, int64_t w) {
  return torch::arange(b * c * h * w, torch::kFloat).reshape({b, c, h, w});
}

// rot90 counter-clockwise by index arithmetic (np.rot90: out[i][j] = in[j][n - 1 - i]), independent of at::rot90.
at::Tensor rot90_ref(const at::Tensor& x) {
  const int64_t n = x.size(-1);
  auto out = torch::empty_like(x);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) out.select(-2, i).select(-1, j).copy_(x.select(-2, j).select(-1, n - 1 - i));
  return out;
}

at::Tensor mirror_ref(const at::Tensor& x) {
  const int64_t w = x.size(-1);
  auto out = torch::empty_like(x);
  for (int64_t j = 0; j < w; ++j) out.select(-1, j).copy_(x.select(-1, w - 1 - j));
  return out;
}

template <class F>
std::string config_error(F f) {
  try {
    f();
  } catch (const kg::ConfigError& e) {
    return e.what();
  }
  FAIL("expected a ConfigError");
  return "";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("tta: every view is registered and builds from its own example", "[unit][tta]") {
  auto names = kg::tta::view_registry().names();
  for (auto n : {"identity", "hflip", "vflip", "d4", "five_crop", "ten_crop", "multi_scale", "train_aug"})
    CHECK(std::find(names.begin(), names.end(), n) != names.end());
  const ImageGeometry g{16, 16, 3};
  for (auto* c : kg::tta::view_registry().components()) {
    INFO(c->name << " example:\n" << c->example);
    auto v = kg::tta::build_views(recipe(c->example), g);
    REQUIRE_FALSE(v.empty());
    CHECK(v.back()->name() == c->name);
    auto x = torch::randn({2, 3, 16, 16});
    for (int64_t i = 0; i < v.back()->count(); ++i) {
      auto y = v.back()->apply(x, i);
      CHECK(y.size(0) == 2);
      CHECK(y.size(1) == 3);
      CHECK(torch::isfinite(y).all().item<bool>());
    }
  }
}

TEST_CASE("tta: without [tta] the views are the identity alone, options default as documented", "[unit][tta]") {
  auto r = recipe("");
  auto v = kg::tta::build_views(r, {8, 8, 3});
  REQUIRE(v.size() == 1);
  CHECK(v[0]->name() == "identity");
  CHECK(v[0]->count() == 1);
  auto x = ramp(1, 3, 8, 8);
  CHECK(torch::equal(v[0]->apply(x, 0), x));
  auto o = r.get<kg::tta::TtaOptions>();
  CHECK(o.views == json::array({"identity"}));
  CHECK(o.merge == "mean");
  CHECK(o.weights == "best");
  CHECK(o.threshold.get<double>() == 0.5);
  auto o2 =
      (recipe("[tta]\nmerge = \"geometric\"\nweights = \"ema\"\nthreshold = [0.3, 0.7]\n")).get<kg::tta::TtaOptions>();
  CHECK(o2.merge == "geometric");
  CHECK(o2.weights == "ema");
  CHECK(o2.threshold == json::array({0.3, 0.7}));
}

TEST_CASE("tta: hflip and vflip mirror, twice is the identity, a symmetric input is unchanged", "[unit][tta]") {
  auto v = views(R"(["hflip", "vflip"])", {4, 5, 2});
  REQUIRE(v.size() == 2);
  auto x = ramp(2, 2, 4, 5);
  auto h = v[0]->apply(x, 0), vf = v[1]->apply(x, 0);
  CHECK(v[0]->label(0) == "hflip");
  CHECK(v[1]->label(0) == "vflip");
  CHECK_FALSE(torch::equal(h, x));
  CHECK(torch::equal(h, mirror_ref(x)));
  CHECK(torch::equal(v[0]->apply(h, 0), x));
  CHECK(torch::equal(v[1]->apply(vf, 0), x));
  for (int64_t i = 0; i < 4; ++i) CHECK(torch::equal(vf.select(2, i), x.select(2, 3 - i)));
  // Horizontally symmetric: x + mirror(x).
  auto sym = x + mirror_ref(x);
  CHECK(torch::equal(v[0]->apply(sym, 0), sym));
  CHECK_FALSE(torch::equal(v[1]->apply(sym, 0), sym));
}

TEST_CASE("tta: d4 gives the 8 distinct dihedral views {rot90^k, rot90^k o hflip}", "[unit][tta]") {
  auto v = views(R"(["d4"])", {5, 5, 2});
  REQUIRE(v.size() == 1);
  const auto& d4 = *v[0];
  REQUIRE(d4.count() == 8);
  auto x = ramp(2, 2, 5, 5);
  std::vector<at::Tensor> out;
  std::set<std::string> labels;
  for (int64_t i = 0; i < 8; ++i) {
    out.push_back(d4.apply(x, i));
    labels.insert(d4.label(i));
  }
  CHECK(labels.size() == 8);
  CHECK(d4.label(0) == "d4/identity");
  CHECK(d4.label(1) == "d4/rot90");
  CHECK(d4.label(4) == "d4/hflip");
  CHECK(d4.label(5) == "d4/rot90_hflip");
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = i + 1; j < 8; ++j) CHECK_FALSE(torch::equal(out[i], out[j]));
  // The expected group, built independently; view i is rot90^(i % 4) of x (i < 4) or of mirror(x).
  at::Tensor r = x, rf = mirror_ref(x);
  for (int64_t k = 0; k < 4; ++k) {
    CHECK(torch::equal(out[k], r));
    CHECK(torch::equal(out[k + 4], rf));
    r = rot90_ref(r);
    rf = rot90_ref(rf);
  }
  // And the order torch.rot90 gives in Python.
  const auto& gd = golden().at("d4");
  const int64_t n = gd.at("size").get<int64_t>();
  auto s = sin_input(n, n);
  auto dv = views(R"(["d4"])", {n, n, 1});
  for (int64_t i = 0; i < 8; ++i) check_close(dv[0]->apply(s, i), gd.at("views")[static_cast<size_t>(i)], 1e-7);
}

TEST_CASE("tta: five_crop and ten_crop match torchvision, with and without resize", "[unit][tta]") {
  for (const auto& c : golden().at("crops")) {
    const int64_t h = c.at("height").get<int64_t>(), w = c.at("width").get<int64_t>();
    const std::string name = c.at("view").get<std::string>();
    json entry = {{"name", name}, {"size", c.at("size")}, {"resize", c.at("resize")}};
    INFO(entry.dump() << " on " << h << " x " << w);
    auto v = kg::tta::build_views(json::array({entry}), {h, w, 1});
    REQUIRE(v.size() == 1);
    REQUIRE(v[0]->count() == static_cast<int64_t>(c.at("crops").size()));
    auto x = sin_input(h, w);
    for (int64_t i = 0; i < v[0]->count(); ++i) {
      INFO(v[0]->label(i));
      auto y = v[0]->apply(x, i);
      const auto& shape = c.at("crop_shapes")[static_cast<size_t>(i)];
      CHECK(y.size(2) == shape[2].get<int64_t>());
      CHECK(y.size(3) == shape[3].get<int64_t>());
      check_close(y, c.at("crops")[static_cast<size_t>(i)]);
    }
  }
}

TEST_CASE("tta: crop labels, the default size and crops larger than the image", "[unit][tta]") {
  auto v = views(R"(["ten_crop", { name = "five_crop", resize = false }])", {224, 224, 3});
  CHECK(v[0]->count() == 10);
  CHECK(v[1]->count() == 5);
  std::set<std::string> labels;
  for (int64_t i = 0; i < 10; ++i) labels.insert(v[0]->label(i));
  CHECK(labels.size() == 10);
  CHECK(v[0]->label(0) == "ten_crop/tl");
  CHECK(v[0]->label(9) == "ten_crop/hflip_center");
  CHECK(v[1]->label(4) == "five_crop/center");
  auto x = torch::randn({1, 3, 224, 224});
  CHECK(v[1]->apply(x, 4).sizes() == torch::IntArrayRef({1, 3, 196, 196}));  // round(0.875 * 224)
  CHECK(v[0]->apply(x, 7).sizes() == torch::IntArrayRef({1, 3, 224, 224}));  // resized back
  // The shorter side decides the default: round(0.875 * 6) = 5.
  auto r = views(R"([{ name = "five_crop", resize = false }])", {6, 9, 1});
  CHECK(r[0]->apply(torch::zeros({1, 1, 6, 9}), 0).sizes() == torch::IntArrayRef({1, 1, 5, 5}));

  auto msg = config_error([] { views(R"(["identity", { name = "five_crop", size = 9 }])", {8, 8, 3}); });
  CHECK(has(msg, "tta.views[1] (five_crop)"));
  CHECK(has(msg, "size"));
  CHECK(has(msg, "8 x 8"));
  CHECK_NOTHROW(views(R"([{ name = "ten_crop", size = 8 }])", {8, 8, 3}));
}

TEST_CASE("tta: multi_scale resizes to each size like F.interpolate", "[unit][tta]") {
  const auto& c = golden().at("multi_scale")[0];
  const int64_t h = c.at("height").get<int64_t>(), w = c.at("width").get<int64_t>();
  auto v = kg::tta::build_views(json::array({{{"name", "multi_scale"}, {"sizes", c.at("sizes")}}}), {h, w, 1});
  REQUIRE(v[0]->count() == 3);
  CHECK(v[0]->label(0) == "multi_scale/5");
  CHECK(v[0]->label(1) == "multi_scale/12");
  CHECK(v[0]->label(2) == "multi_scale/6x11");
  auto x = sin_input(h, w);
  CHECK(v[0]->apply(x, 2).sizes() == torch::IntArrayRef({1, 1, 6, 11}));
  for (int64_t i = 0; i < 3; ++i) check_close(v[0]->apply(x, i), c.at("outputs")[static_cast<size_t>(i)]);
  // At the input's own size the batch passes through.
  auto same = views(R"([{ name = "multi_scale", sizes = [8] }])", {8, 8, 1});
  auto b = ramp(2, 1, 8, 8);
  CHECK(torch::equal(same[0]->apply(b, 0), b));
}

TEST_CASE("tta: train_aug asks for the training pipeline and carries n and beta", "[unit][tta]") {
  auto v = views(R"(["identity", "train_aug", { name = "train_aug", n = 2, beta = 0.5 }])", {8, 8, 3});
  CHECK_FALSE(v[0]->uses_train_pipeline());
  CHECK(v[1]->uses_train_pipeline());
  CHECK(v[1]->count() == 4);
  CHECK(v[1]->beta() == 0.25);
  CHECK(v[1]->label(2) == "train_aug/2");
  CHECK(v[2]->count() == 2);
  CHECK(v[2]->beta() == 0.5);
  auto x = ramp(1, 3, 8, 8);
  CHECK(torch::equal(v[1]->apply(x, 3), x));
}

TEST_CASE("tta: expand lists every sub-view with unique labels", "[unit][tta]") {
  auto v = views(R"(["identity", "hflip", "d4", "hflip"])", {4, 4, 1});
  auto e = kg::tta::expand(v);
  REQUIRE(e.size() == 11);
  CHECK(e[1].label == "hflip");
  CHECK(e[3].label == "d4/rot90");
  CHECK(e[3].view == 2);
  CHECK(e[3].index == 1);
  CHECK(e[10].label == "hflip#2");
  std::set<std::string> labels;
  for (auto& s : e) labels.insert(s.label);
  CHECK(labels.size() == e.size());
}

TEST_CASE("tta: bad views are recipe errors naming the entry", "[unit][tta]") {
  const ImageGeometry g{8, 8, 3};
  // build_views checks an unvalidated list on its own ...
  auto build = [&](const std::string& list) {
    kg::tta::build_views(parse("[tta]\nviews = " + list + "\n").at("tta.views").value, g, "tta.views");
  };
  auto msg = config_error([&] { build(R"(["identity", "d5"])"); });
  CHECK(has(msg, "tta.views[1]"));
  CHECK(has(msg, "unknown tta_view \"d5\""));
  CHECK(has(msg, "did you mean d4"));
  msg = config_error([&] { build(R"([{ name = "hflp" }])"); });
  CHECK(has(msg, "tta.views[0].name"));
  CHECK(has(msg, "did you mean hflip"));
  msg = config_error([&] { build(R"([{ name = "five_crop", sise = 5 }])"); });
  CHECK(has(msg, "tta.views[0].sise"));
  CHECK(has(msg, "allowed: name, size, resize"));
  CHECK(has(msg, "did you mean size"));
  msg = config_error([&] { build(R"([{ name = "train_aug", beta = 1.5 }])"); });
  CHECK(has(msg, "tta.views[0].beta"));
  CHECK(has(msg, "[0, 1]"));
  msg = config_error([&] { build(R"([{ name = "train_aug", n = 0 }])"); });
  CHECK(has(msg, "tta.views[0].n"));
  msg = config_error([&] { build(R"(["multi_scale"])"); });
  CHECK(has(msg, "tta.views[0]"));
  CHECK(has(msg, "sizes"));
  msg = config_error([&] { build(R"([{ name = "multi_scale" }])"); });
  CHECK(has(msg, "tta.views[0].sizes: required"));
  msg = config_error([&] { build(R"([{ name = "multi_scale", sizes = [224, 0] }])"); });
  CHECK(has(msg, "tta.views[0].sizes"));
  msg = config_error([&] { build(R"([{ name = "five_crop", size = [5] }])"); });
  CHECK(has(msg, "tta.views[0].size"));
  msg = config_error([&] { build(R"([{ size = 5 }])"); });
  CHECK(has(msg, "tta.views[0]: missing name"));
  msg = config_error([&] { build(R"([3])"); });
  CHECK(has(msg, "tta.views[0]: expected a view name"));
  CHECK(has(msg, "got 3"));
  CHECK(has(config_error([&] { build("[]"); }), "at least one view"));
  CHECK(has(config_error([&] { build("\"hflip\""); }), "expected an array"));
  // Every problem at once.
  msg = config_error([&] { build(R"(["d5", { name = "train_aug", beta = 2 }])"); });
  CHECK(has(msg, "tta.views[0]"));
  CHECK(has(msg, "tta.views[1].beta"));
  // d4 needs square images.
  msg = config_error([] { views(R"(["hflip", "d4"])", {8, 12, 3}); });
  CHECK(has(msg, "tta.views[1] (d4)"));
  CHECK(has(msg, "square"));
  CHECK_NOTHROW(views(R"(["hflip", "vflip"])", {8, 12, 3}));
}

TEST_CASE("tta: recipe validation checks the [tta] section", "[unit][tta]") {
  auto msg = config_error([] { recipe("[tta]\nviews = [\"identity\", \"d5\"]\n"); });
  CHECK(has(msg, "tta.views"));
  CHECK(has(msg, "did you mean d4"));
  CHECK(has(msg, "test.toml:2"));
  CHECK(has(config_error([] { recipe("[tta]\nviews = [{ name = \"five_crop\", resize = 1 }]\n"); }), "resize"));
  CHECK(has(config_error([] { recipe("[tta]\nmerge = \"median\"\n"); }), "tta.merge"));
  CHECK(has(config_error([] { recipe("[tta]\nweights = \"final\"\n"); }), "tta.weights"));
  CHECK(has(config_error([] { recipe("[tta]\nthreshold = 1.5\n"); }), "tta.threshold"));
  CHECK(has(config_error([] { recipe("[tta]\nthreshold = [0.5, \"x\"]\n"); }), "tta.threshold"));
  CHECK(has(config_error([] { recipe("[tta]\nthreshold = []\n"); }), "tta.threshold"));
  CHECK_NOTHROW(
      recipe("[tta]\nthreshold = [0, 0.25, 1]\nviews = [\"d4\", { name = \"multi_scale\", sizes = [[8, 12]] }]\n"));
  // [[tta.views]] tables work too.
  auto r = recipe("[[tta.views]]\nname = \"identity\"\n[[tta.views]]\nname = \"five_crop\"\nsize = 6\n");
  auto v = kg::tta::build_views(r, {8, 8, 3});
  REQUIRE(v.size() == 2);
  CHECK(v[1]->name() == "five_crop");
}

}  // namespace KG_UNITY_ID
}  // namespace
