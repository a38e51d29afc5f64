// Mixup (Zhang et al. 2018) and CutMix (Yun et al. 2019) as timm implements them (timm/data/mixup.py:
// Mixup._params_per_batch/_params_per_elem, rand_bbox, rand_bbox_minmax, cutmix_bbox_and_lam, mixup_target).
#include "data/mixup.h"

#include <algorithm>
#include <cmath>

#include <ATen/ATen.h>

#include "config/sections.h"
#include "core/error.h"
#include "core/random.h"

namespace kg::data {
namespace {

constexpr uint64_t kMixupStream = 0x6D69787570ULL;  // "mixup": keeps this stream apart from the others

config::Fields<MixupOptions> mixup_fields() {
  config::Fields<MixupOptions> f;
  f.field("mixup_alpha", &MixupOptions::mixup_alpha, "mixup: lambda ~ Beta(alpha, alpha); 0 = no mixup (0.8 is common)")
      .min(0);
  f.field("cutmix_alpha", &MixupOptions::cutmix_alpha,
          "cutmix: lambda ~ Beta(alpha, alpha); 0 = no cutmix (1.0 is common)")
      .min(0);
  f.field("cutmix_minmax", &MixupOptions::cutmix_minmax,
          "cutmix box side as [lo, hi] fractions of the image, drawn uniformly; replaces cutmix_alpha")
      .size(2)
      .range(0, 1)
      .check([](const config::json& v) -> std::string {
        return v[0].get<double>() < v[1].get<double>() ? "" : "expected [lo, hi] with lo < hi, got " + v.dump();
      });
  f.field("prob", &MixupOptions::prob, "probability of mixing a batch (per pair/sample in pair/elem mode)").range(0, 1);
  f.field("switch_prob", &MixupOptions::switch_prob, "with both mixup and cutmix on: probability of cutmix")
      .range(0, 1);
  f.field("mode", &MixupOptions::mode, "batch: one lambda per batch; pair: per pair (i, B-1-i); elem: per sample")
      .choices({"batch", "pair", "elem"});
  f.field("correct_lam", &MixupOptions::correct_lam, "cutmix: recompute lambda from the clipped box area");
  f.field("label_smoothing", &MixupOptions::label_smoothing,
          "smoothing inside the mixed soft targets: other classes s/K, the true class 1 - s + s/K")
      .range(0, 1);
  f.field("off_epoch", &MixupOptions::off_epoch, "0-based epoch from which mixing stops (0 = never)").min(0);
  return f;
}

KG_REGISTER_SECTION("mixup", "batch-level mixup / cutmix (timm's Mixup); off unless an alpha is set",
                    mixup_fields().schema(), "");

double normal(Rng& rng) {  // Box-Muller
  const double u1 = 1.0 - rng.uniform(), u2 = rng.uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

// Gamma(a, 1): Marsaglia & Tsang (2000); a < 1 through Gamma(a + 1) * U^(1/a).
double gamma(Rng& rng, double a) {
  if (a < 1.0) return gamma(rng, a + 1.0) * std::pow(rng.uniform(), 1.0 / a);
  const double d = a - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = normal(rng);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = rng.uniform();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

double beta(Rng& rng, double a) {
  const double x = gamma(rng, a), y = gamma(rng, a);
  if (x + y <= 0.0) return rng.uniform() < 0.5 ? 0.0 : 1.0;  // both underflowed (tiny alpha): Beta -> Bernoulli
  return x / (x + y);
}

struct Draw {
  double lam = 1.0;
  bool cutmix = false;
};

// One lambda (timm's _params_per_batch / one element of _params_per_elem).
Draw draw(const MixupOptions& o, Rng& rng) {
  // timm forces cutmix_alpha = 1 when cutmix_minmax is set; the box then sets lambda.
  const double cutmix_alpha = o.cutmix_minmax ? 1.0 : o.cutmix_alpha;
  Draw d;
  if (!(rng.uniform() < o.prob)) return d;
  if (o.mixup_alpha > 0 && cutmix_alpha > 0) {
    d.cutmix = rng.uniform() < o.switch_prob;
    d.lam = beta(rng, d.cutmix ? cutmix_alpha : o.mixup_alpha);
  } else if (o.mixup_alpha > 0) {
    d.lam = beta(rng, o.mixup_alpha);
  } else if (cutmix_alpha > 0) {
    d.cutmix = true;
    d.lam = beta(rng, cutmix_alpha);
  }
  return d;
}

// timm's rand_bbox / rand_bbox_minmax + cutmix_bbox_and_lam.
void cut_box(const MixupOptions& o, Rng& rng, int64_t h, int64_t w, MixPlan::Elem& e) {
  if (o.cutmix_minmax) {
    const auto& mm = *o.cutmix_minmax;
    auto side = [&](int64_t n) {  // np.random.randint(int(n * lo), int(n * hi))
      const int64_t lo = static_cast<int64_t>(n * mm[0]), hi = static_cast<int64_t>(n * mm[1]);
      return hi > lo ? lo + static_cast<int64_t>(rng.below(static_cast<uint64_t>(hi - lo))) : lo;
    };
    const int64_t ch = side(h), cw = side(w);
    e.y0 = h > ch ? static_cast<int64_t>(rng.below(static_cast<uint64_t>(h - ch))) : 0;
    e.x0 = w > cw ? static_cast<int64_t>(rng.below(static_cast<uint64_t>(w - cw))) : 0;
    e.y1 = e.y0 + ch;
    e.x1 = e.x0 + cw;
  } else {
    const double ratio = std::sqrt(1.0 - e.lam);
    const int64_t ch = static_cast<int64_t>(h * ratio), cw = static_cast<int64_t>(w * ratio);
    const int64_t cy = static_cast<int64_t>(rng.below(static_cast<uint64_t>(h)));
    const int64_t cx = static_cast<int64_t>(rng.below(static_cast<uint64_t>(w)));
    e.y0 = std::clamp<int64_t>(cy - ch / 2, 0, h);
    e.y1 = std::clamp<int64_t>(cy + ch / 2, 0, h);
    e.x0 = std::clamp<int64_t>(cx - cw / 2, 0, w);
    e.x1 = std::clamp<int64_t>(cx + cw / 2, 0, w);
  }
  if (o.correct_lam || o.cutmix_minmax)
    e.lam = 1.0 - static_cast<double>((e.y1 - e.y0) * (e.x1 - e.x0)) / static_cast<double>(h * w);
}

MixPlan::Elem elem_for(const MixupOptions& o, Rng& rng, int64_t h, int64_t w) {
  Draw d = draw(o, rng);
  MixPlan::Elem e;
  e.lam = d.lam;
  if (d.lam != 1.0 && d.cutmix) {
    e.cutmix = true;
    cut_box(o, rng, h, w, e);
  }
  return e;
}

}  // namespace

MixupOptions MixupOptions::load(const config::Tree& recipe) {
  return mixup_fields().load(config::Options(&recipe, "mixup"));
}

bool mixup_enabled(const MixupOptions& o, int64_t epoch) {
  const bool any = o.mixup_alpha > 0 || o.cutmix_alpha > 0 || o.cutmix_minmax.has_value();
  return any && o.prob > 0 && (o.off_epoch <= 0 || epoch < o.off_epoch);
}

MixPlan plan_mixup(const MixupOptions& o, int64_t batch, int64_t height, int64_t width, uint64_t seed, int64_t epoch,
                   int64_t batch_index) {
  KG_ASSERT(batch >= 0 && height > 0 && width > 0);
  KG_CHECK(o.mode == "batch" || o.mode == "pair" || o.mode == "elem", ConfigError,
           "mixup.mode: expected batch, pair or elem, got \"", o.mode, "\"");
  MixPlan plan;
  plan.elems.resize(static_cast<size_t>(batch));
  if (!mixup_enabled(o, epoch) || batch == 0) return plan;
  Rng rng(stream_seed(seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(batch_index), kMixupStream));
  if (o.mode == "batch") {
    MixPlan::Elem e = elem_for(o, rng, height, width);
    for (auto& x : plan.elems) x = e;
  } else if (o.mode == "pair") {
    for (int64_t i = 0; i < batch / 2; ++i) {  // an odd batch's middle sample stays unmixed
      MixPlan::Elem e = elem_for(o, rng, height, width);
      plan.elems[static_cast<size_t>(i)] = e;
      plan.elems[static_cast<size_t>(batch - 1 - i)] = e;
    }
  } else {
    for (auto& x : plan.elems) x = elem_for(o, rng, height, width);
  }
  return plan;
}

void apply_mixup(const MixupOptions& o, at::Tensor& images, at::Tensor& targets, int64_t num_classes, uint64_t seed,
                 int64_t epoch, int64_t batch_index) {
  KG_ASSERT(images.defined() && images.dim() == 4 && images.is_floating_point(),
            "apply_mixup: images must be float [B, C, H, W]");
  const int64_t b = images.size(0), h = images.size(2), w = images.size(3);
  KG_ASSERT(num_classes >= 1);
  KG_ASSERT(targets.defined() && targets.size(0) == b, "apply_mixup: one target per image");

  // Soft targets, smoothed as timm's one_hot(on = 1 - s + s/K, off = s/K).
  const double s = o.label_smoothing, off = s / static_cast<double>(num_classes), on = 1.0 - s + off;
  at::Tensor y;
  if (targets.scalar_type() == at::kLong) {
    KG_ASSERT(targets.dim() == 1, "apply_mixup: class targets must be int64 [B]");
    if (b > 0) {
      const int64_t lo = targets.min().item<int64_t>(), hi = targets.max().item<int64_t>();
      KG_ASSERT(lo >= 0 && hi < num_classes, "apply_mixup: class index out of [0, ", num_classes, "): ", lo, "..", hi);
    }
    y = at::full({b, num_classes}, off, targets.options().dtype(at::kFloat));
    y.scatter_(1, targets.view({-1, 1}), on);
  } else {
    KG_ASSERT(targets.is_floating_point() && targets.dim() == 2 && targets.size(1) == num_classes,
              "apply_mixup: soft targets must be float [B, num_classes]");
    y = targets.to(at::kFloat) * (1.0 - s) + off;
  }

  const MixPlan plan = plan_mixup(o, b, h, w, seed, epoch, batch_index);
  bool any = false;
  for (auto& e : plan.elems) any = any || e.lam != 1.0;
  if (!any) {
    targets = y;
    return;
  }

  if (o.mode == "batch") {  // one lambda, one box: whole-batch tensor ops
    const auto& e = plan.elems[0];
    if (e.cutmix) {
      at::Tensor region = images.slice(2, e.y0, e.y1).slice(3, e.x0, e.x1);
      region.copy_(region.flip({0}));
    } else {
      at::Tensor partner = images.flip({0}).mul_(1.0 - e.lam);
      images.mul_(e.lam).add_(partner);
    }
  } else {
    const at::Tensor orig = images.clone();
    for (int64_t i = 0; i < b; ++i) {
      const auto& e = plan.elems[static_cast<size_t>(i)];
      if (e.lam == 1.0) continue;
      const int64_t j = b - 1 - i;
      if (e.cutmix) {
        images[i].slice(1, e.y0, e.y1).slice(2, e.x0, e.x1).copy_(orig[j].slice(1, e.y0, e.y1).slice(2, e.x0, e.x1));
      } else {
        images[i].mul_(e.lam).add_(orig[j], 1.0 - e.lam);
      }
    }
  }

  std::vector<float> lam(static_cast<size_t>(b));
  for (int64_t i = 0; i < b; ++i)
    lam[static_cast<size_t>(i)] = static_cast<float>(plan.elems[static_cast<size_t>(i)].lam);
  at::Tensor l = at::tensor(lam, y.options()).view({b, 1});
  targets = y * l + y.flip({0}) * (1.0 - l);
}

}  // namespace kg::data
