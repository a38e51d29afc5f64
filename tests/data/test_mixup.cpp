// Batch-level mixup / cutmix (timm semantics): targets, pixels, boxes, modes, determinism, options.
#include <cmath>
#include <set>

#include <catch2/catch.hpp>
#include <torch/torch.h>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/error.h"
#include "data/mixup.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::data::apply_mixup;
using kg::data::MixupOptions;

namespace {

MixupOptions options(const std::string& toml) {
  return kg::config::Recipe::validate(kg::config::parse_toml_string(toml, "r.toml")).get<kg::data::MixupOptions>();
}

std::string problems_of(const std::string& toml) {
  try {
    options(toml);
  } catch (const kg::ConfigError& e) {
    return e.what();
  }
  return "";
}

torch::Tensor batch_images(int64_t b, int64_t c = 3, int64_t h = 16, int64_t w = 20, uint64_t seed = 1) {
  torch::manual_seed(seed);  // test inputs only; apply_mixup never touches torch's RNG
  return torch::rand({b, c, h, w});
}

// Distinct labels 0..B-1 (K = B), so each row's own-class weight is its lambda.
torch::Tensor labels(int64_t b) { return torch::arange(b, torch::kLong); }

double lam_of(const torch::Tensor& soft, int64_t i, int64_t label, double smoothing = 0.0) {
  const double k = static_cast<double>(soft.size(1));
  // y = lam * on(label) + (1 - lam) * off  ->  lam = (y - off) / (on - off) with on - off = 1 - s.
  return (soft[i][label].item<double>() - smoothing / k) / (1.0 - smoothing);
}

struct Mixed {
  torch::Tensor x, y;
};
Mixed run(const MixupOptions& o, const torch::Tensor& x0, const torch::Tensor& y0, int64_t k, uint64_t seed = 5,
          int64_t epoch = 0, int64_t batch = 0) {
  Mixed m{x0.clone(), y0.clone()};
  apply_mixup(o, m.x, m.y, k, seed, epoch, batch);
  return m;
}

}  // namespace

TEST_CASE("mixup is off by default and the section's defaults are timm's", "[unit][data]") {
  auto o = options("");
  CHECK(o.mixup_alpha == 0.0);
  CHECK(o.cutmix_alpha == 0.0);
  CHECK_FALSE(o.cutmix_minmax.has_value());
  CHECK(o.prob == 1.0);
  CHECK(o.switch_prob == 0.5);
  CHECK(o.mode == "batch");
  CHECK(o.correct_lam);
  CHECK(o.label_smoothing == 0.0);
  CHECK(o.off_epoch == 0);
  CHECK_FALSE(kg::data::mixup_enabled(o, 0));
  // Disabled: images untouched, targets one-hot.
  auto x = batch_images(4);
  auto m = run(o, x, labels(4), 4);
  CHECK(torch::equal(m.x, x));
  CHECK(torch::equal(m.y, torch::eye(4)));
  CHECK(kg::data::mixup_enabled(options("[mixup]\nmixup_alpha = 0.2\n"), 0));
  CHECK(kg::data::mixup_enabled(options("[mixup]\ncutmix_minmax = [0.2, 0.8]\n"), 0));
}

TEST_CASE("mixup: soft target rows sum to 1, with and without smoothing", "[unit][data]") {
  for (const char* extra : {"", "label_smoothing = 0.1\n"})
    for (const char* mode : {"batch", "pair", "elem"}) {
      auto o =
          options(std::string("[mixup]\nmixup_alpha = 1.0\ncutmix_alpha = 1.0\nmode = \"") + mode + "\"\n" + extra);
      auto y0 = torch::tensor({3, 0, 1, 1, 2, 4}, torch::kLong);
      for (int64_t b = 0; b < 5; ++b) {
        INFO("mode " << mode << " " << extra << " batch " << b);
        auto m = run(o, batch_images(6), y0, 5, 9, 0, b);
        REQUIRE(m.y.scalar_type() == torch::kFloat);
        REQUIRE(m.y.dim() == 2);
        REQUIRE(m.y.size(0) == 6);
        REQUIRE(m.y.size(1) == 5);
        CHECK(torch::allclose(m.y.sum(1), torch::ones({6}), 1e-6, 1e-6));
        CHECK(m.y.min().item<float>() >= 0.0f);
      }
    }
}

TEST_CASE("mixup only: images are lam*x + (1-lam)*x.flip(0) for the targets' lambda", "[unit][data]") {
  auto o = options("[mixup]\nmixup_alpha = 1.0\n");
  auto x = batch_images(6);
  int mixed = 0;
  for (int64_t b = 0; b < 8; ++b) {
    INFO("batch " << b);
    auto m = run(o, x, labels(6), 6, 3, 0, b);
    const double lam = lam_of(m.y, 0, 0);
    for (int64_t i = 0; i < 6; ++i) {
      CHECK(lam_of(m.y, i, i) == Approx(lam).margin(1e-6));  // one lambda per batch
      CHECK(m.y[i][5 - i].item<double>() == Approx(1.0 - lam).margin(1e-6));
    }
    CHECK(torch::allclose(m.x, x * lam + x.flip(0) * (1.0 - lam), 1e-5, 1e-6));
    mixed += lam < 0.999;
  }
  CHECK(mixed >= 6);
}

TEST_CASE("mixup with smoothing: timm's on/off values mixed with lambda", "[unit][data]") {
  auto o = options("[mixup]\nmixup_alpha = 1.0\nlabel_smoothing = 0.1\n");
  auto m = run(o, batch_images(4), labels(4), 10);
  const double lam = lam_of(m.y, 0, 0, 0.1);
  const double off = 0.1 / 10, on = 1 - 0.1 + off;
  CHECK(m.y[0][0].item<double>() == Approx(lam * on + (1 - lam) * off).margin(1e-6));
  CHECK(m.y[0][3].item<double>() == Approx(lam * off + (1 - lam) * on).margin(1e-6));
  CHECK(m.y[0][7].item<double>() == Approx(off).margin(1e-7));
}

TEST_CASE("cutmix only: one rectangle from the partner, its area fraction is 1 - lam", "[unit][data]") {
  for (const char* mode : {"batch", "elem", "pair"})
    for (const char* extra :
         {"cutmix_alpha = 1.0\n", "cutmix_minmax = [0.2, 0.7]\n", "cutmix_alpha = 0.5\ncorrect_lam = false\n"}) {
      auto o = options(std::string("[mixup]\nmode = \"") + mode + "\"\n" + extra);
      const bool corrected = std::string(extra).find("correct_lam = false") == std::string::npos;
      const int64_t B = 6, H = 16, W = 20;
      auto x = batch_images(B, 3, H, W);
      int boxes = 0;
      for (int64_t b = 0; b < 6; ++b) {
        INFO("mode " << mode << " " << extra << " batch " << b);
        auto m = run(o, x, labels(B), B, 11, 0, b);
        auto plan = kg::data::plan_mixup(o, B, H, W, 11, 0, b);
        for (int64_t i = 0; i < B; ++i) {
          auto changed = (m.x[i] != x[i]).any(0);  // [H, W]
          const int64_t n = changed.sum().item<int64_t>();
          const auto& e = plan.elems[static_cast<size_t>(i)];
          const double lam = lam_of(m.y, i, i);
          CHECK(lam == Approx(e.lam).margin(1e-6));
          if (n == 0) {
            CHECK((e.y1 - e.y0) * (e.x1 - e.x0) == 0);
            continue;
          }
          CHECK(e.cutmix);
          ++boxes;
          // The changed pixels are exactly the plan's box, filled from the partner.
          auto nz = changed.nonzero();
          const int64_t y0 = nz.select(1, 0).min().item<int64_t>(), y1 = nz.select(1, 0).max().item<int64_t>() + 1;
          const int64_t x0 = nz.select(1, 1).min().item<int64_t>(), x1 = nz.select(1, 1).max().item<int64_t>() + 1;
          CHECK(n == (y1 - y0) * (x1 - x0));
          CHECK(y0 == e.y0);
          CHECK(y1 == e.y1);
          CHECK(x0 == e.x0);
          CHECK(x1 == e.x1);
          CHECK(torch::equal(m.x[i].slice(1, y0, y1).slice(2, x0, x1), x[B - 1 - i].slice(1, y0, y1).slice(2, x0, x1)));
          if (corrected) CHECK(1.0 - lam == Approx(static_cast<double>(n) / (H * W)).margin(1e-6));
          if (std::string(extra).find("minmax") != std::string::npos) {
            CHECK(y1 - y0 >= static_cast<int64_t>(H * 0.2));
            CHECK(y1 - y0 < static_cast<int64_t>(H * 0.7));
            CHECK(x1 - x0 >= static_cast<int64_t>(W * 0.2));
            CHECK(x1 - x0 < static_cast<int64_t>(W * 0.7));
          }
        }
      }
      CHECK(boxes >= 12);
    }
}

TEST_CASE("mixup: prob = 0 leaves images untouched and targets one-hot", "[unit][data]") {
  auto o = options("[mixup]\nmixup_alpha = 1.0\ncutmix_alpha = 1.0\nprob = 0.0\nlabel_smoothing = 0.2\n");
  CHECK_FALSE(kg::data::mixup_enabled(o, 0));
  auto x = batch_images(4);
  auto m = run(o, x, labels(4), 4);
  CHECK(torch::equal(m.x, x));
  CHECK(torch::allclose(m.y, torch::eye(4) * 0.8 + 0.05));
}

TEST_CASE("mixup: off_epoch stops mixing from that epoch on", "[unit][data]") {
  auto o = options("[mixup]\nmixup_alpha = 1.0\noff_epoch = 2\n");
  CHECK(kg::data::mixup_enabled(o, 0));
  CHECK(kg::data::mixup_enabled(o, 1));
  CHECK_FALSE(kg::data::mixup_enabled(o, 2));
  CHECK_FALSE(kg::data::mixup_enabled(o, 7));
  auto x = batch_images(4);
  CHECK_FALSE(torch::equal(run(o, x, labels(4), 4, 1, 1, 0).x, x));
  auto m = run(o, x, labels(4), 4, 1, 2, 0);
  CHECK(torch::equal(m.x, x));
  CHECK(torch::equal(m.y, torch::eye(4)));
}

TEST_CASE("mixup is a pure function of (seed, epoch, batch index)", "[unit][data]") {
  auto o = options("[mixup]\nmixup_alpha = 0.4\ncutmix_alpha = 1.0\nmode = \"elem\"\n");
  auto x = batch_images(8);
  torch::manual_seed(123);
  auto a = run(o, x, labels(8), 8, 42, 3, 17);
  torch::manual_seed(999);  // torch's global RNG plays no part
  auto b = run(o, x, labels(8), 8, 42, 3, 17);
  CHECK(torch::equal(a.x, b.x));
  CHECK(torch::equal(a.y, b.y));
  CHECK_FALSE(torch::equal(run(o, x, labels(8), 8, 42, 3, 18).y, a.y));
  CHECK_FALSE(torch::equal(run(o, x, labels(8), 8, 42, 4, 17).y, a.y));
  CHECK_FALSE(torch::equal(run(o, x, labels(8), 8, 43, 3, 17).y, a.y));
}

TEST_CASE("mixup elem mode: one lambda per sample", "[unit][data]") {
  auto o = options("[mixup]\nmixup_alpha = 1.0\nmode = \"elem\"\n");
  const int64_t B = 8;
  auto x = batch_images(B);
  auto m = run(o, x, labels(B), B, 2, 0, 0);
  std::set<double> distinct;
  for (int64_t i = 0; i < B; ++i) {
    const double lam = lam_of(m.y, i, i);
    distinct.insert(std::round(lam * 1e6));
    CHECK(torch::allclose(m.x[i], x[i] * lam + x[B - 1 - i] * (1.0 - lam), 1e-5, 1e-6));
  }
  CHECK(distinct.size() == static_cast<size_t>(B));
}

TEST_CASE("mixup pair mode: partners share a lambda, an odd batch's middle sample is unmixed", "[unit][data]") {
  auto o = options("[mixup]\nmixup_alpha = 1.0\nmode = \"pair\"\n");
  const int64_t B = 7;
  auto x = batch_images(B);
  auto m = run(o, x, labels(B), B, 4, 0, 1);
  for (int64_t i = 0; i < B; ++i) {
    const int64_t j = B - 1 - i;
    const double lam = lam_of(m.y, i, i);
    CHECK(lam_of(m.y, j, j) == Approx(lam).margin(1e-6));
    CHECK(torch::allclose(m.x[i], x[i] * lam + x[j] * (1.0 - lam), 1e-5, 1e-6));
  }
  CHECK(torch::equal(m.x[3], x[3]));
  CHECK(lam_of(m.y, 3, 3) == 1.0);
  CHECK(lam_of(m.y, 0, 0) != Approx(lam_of(m.y, 1, 1)));
}

TEST_CASE("mixup: odd batches in batch mode and soft targets in", "[unit][data]") {
  auto o = options("[mixup]\nmixup_alpha = 1.0\n");
  auto x = batch_images(5);
  auto soft = torch::softmax(torch::randn({5, 3}), 1);
  auto m = run(o, x, soft, 3, 8, 0, 0);
  auto plan = kg::data::plan_mixup(o, 5, 16, 20, 8, 0, 0);
  const double lam = plan.elems[0].lam;
  CHECK(torch::allclose(m.y, soft * lam + soft.flip(0) * (1 - lam), 1e-5, 1e-6));
  CHECK(torch::allclose(m.x[2], x[2], 1e-5, 1e-6));  // its own partner
  CHECK(torch::allclose(m.x, x * lam + x.flip(0) * (1.0 - lam), 1e-5, 1e-6));
}

TEST_CASE("mixup lambdas follow Beta(alpha, alpha)", "[unit][data]") {
  for (double alpha : {0.2, 1.0, 4.0}) {
    INFO("alpha " << alpha);
    auto o = options("[mixup]\nmixup_alpha = " + std::to_string(alpha) + "\n");
    double sum = 0, sq = 0;
    const int n = 4000;
    for (int b = 0; b < n; ++b) {
      const double l = kg::data::plan_mixup(o, 2, 8, 8, 77, 0, b).elems[0].lam;
      REQUIRE(l >= 0.0);
      REQUIRE(l <= 1.0);
      sum += l;
      sq += l * l;
    }
    const double mean = sum / n, var = sq / n - mean * mean;
    CHECK(mean == Approx(0.5).margin(0.02));
    CHECK(var == Approx(1.0 / (4.0 * (2.0 * alpha + 1.0))).margin(0.01));
  }
}

TEST_CASE("mixup: with both alphas, switch_prob picks cutmix", "[unit][data]") {
  auto count_cutmix = [](const std::string& sp) {
    auto o = options("[mixup]\nmixup_alpha = 1.0\ncutmix_alpha = 1.0\nswitch_prob = " + sp + "\n");
    int c = 0;
    for (int b = 0; b < 400; ++b) c += kg::data::plan_mixup(o, 2, 8, 8, 1, 0, b).elems[0].cutmix;
    return c;
  };
  CHECK(count_cutmix("0.0") == 0);
  CHECK(count_cutmix("1.0") >= 390);  // lambda == 1 exactly (no mixing) is the only exception
  const int half = count_cutmix("0.5");
  CHECK(half > 160);
  CHECK(half < 240);
}

TEST_CASE("mixup recipe keys are checked", "[unit][data]") {
  CHECK_THAT(problems_of("[mixup]\nmixup_alpha = -1.0\n"), Catch::Contains("mixup.mixup_alpha"));
  CHECK_THAT(problems_of("[mixup]\ncutmix_alpha = -0.5\n"), Catch::Contains("mixup.cutmix_alpha"));
  CHECK_THAT(problems_of("[mixup]\nswitch_prob = 1.5\n"), Catch::Contains("mixup.switch_prob"));
  CHECK_THAT(problems_of("[mixup]\nprob = -0.1\n"), Catch::Contains("mixup.prob"));
  CHECK_THAT(problems_of("[mixup]\nmode = \"foo\"\n"),
             Catch::Contains("mixup.mode") && Catch::Contains("batch, pair, elem"));
  CHECK_THAT(problems_of("[mixup]\ncutmix_minmax = [0.8, 0.2]\n"), Catch::Contains("lo < hi"));
  CHECK_THAT(problems_of("[mixup]\ncutmix_minmax = [0.2]\n"), Catch::Contains("expected 2 values"));
  CHECK_THAT(problems_of("[mixup]\ncutmix_minmax = [0.2, 1.5]\n"), Catch::Contains("mixup.cutmix_minmax"));
  CHECK_THAT(problems_of("[mixup]\noff_epoch = -1\n"), Catch::Contains("mixup.off_epoch"));
  CHECK_THAT(problems_of("[mixup]\nmixup_alpa = 0.2\n"), Catch::Contains("did you mean mixup.mixup_alpha"));
  CHECK(
      problems_of("[mixup]\nmixup_alpha = 0.8\ncutmix_alpha = 1.0\nmode = \"elem\"\nlabel_smoothing = 0.1\n").empty());
}

}  // namespace KG_UNITY_ID
}  // namespace
