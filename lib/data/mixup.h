// Batch-level mixup / cutmix, the `[mixup]` recipe section. Semantics and key names follow timm's
// Mixup (timm/data/mixup.py): the partner of sample i is sample B-1-i (the flipped batch), lambda
// is drawn from Beta(alpha, alpha), cutmix pastes one box and corrects lambda by its clipped area,
// and the targets come out as (label-smoothed) soft targets mixed with the same lambda.
// Unlike timm, randomness is a pure function of (seed, epoch, batch index), never of a global RNG.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "config/tree.h"

namespace kg::data {

// Recipe section [mixup]; each field's doc is in mixup_fields() (data/mixup.cpp) and docs/reference.md.
struct MixupOptions {
  static MixupOptions load(const config::Tree& recipe);  // recipe.get<MixupOptions>() decodes it once
  double mixup_alpha = 0.0;
  double cutmix_alpha = 0.0;
  std::optional<std::vector<double>> cutmix_minmax;
  double prob = 1.0;
  double switch_prob = 0.5;
  std::string mode = "batch";
  bool correct_lam = true;
  double label_smoothing = 0.0;
  int64_t off_epoch = 0;
};

// Whether mixing can happen in `epoch`: an alpha (or cutmix_minmax) is set, prob > 0, and
// off_epoch has not been reached. When false, apply_mixup only turns the targets into smoothed
// one-hot rows: a loop may skip it then (and use class targets with its loss's own smoothing).
bool mixup_enabled(const MixupOptions& o, int64_t epoch);

// Mixes `images` (float [B, C, H, W], changed in place) and turns `targets` (int64 [B] class
// indices, or float [B, K] soft / multi-label targets) into float [B, K] soft targets. Without
// mixing (disabled, or lambda = 1) targets still come out as smoothed one-hot rows.
// A pure function of (seed, epoch, batch_index) for given inputs.
// Odd batch sizes: the middle sample is its own partner (in pair mode it is left unmixed).
// InternalError (a caller bug: the table checked the labels) for targets of the wrong shape or type
// or class indices outside [0, num_classes).
void apply_mixup(const MixupOptions& o, at::Tensor& images, at::Tensor& targets, int64_t num_classes, uint64_t seed,
                 int64_t epoch, int64_t batch_index);

// The mixing drawn for one batch, exposed for tests and logging: per-sample lambda (the weight of the
// sample's own target) and, for cutmix, its box [y0, y1) x [x0, x1) (empty box for mixup).
struct MixPlan {
  struct Elem {
    double lam = 1.0;
    bool cutmix = false;
    int64_t y0 = 0, y1 = 0, x0 = 0, x1 = 0;
  };
  std::vector<Elem> elems;  // one per sample
};
MixPlan plan_mixup(const MixupOptions& o, int64_t batch, int64_t height, int64_t width, uint64_t seed, int64_t epoch,
                   int64_t batch_index);

}  // namespace kg::data
