#include "model/target_scale.h"

#include <cmath>

#include <torch/torch.h>

#include "core/error.h"
#include "core/strings.h"

namespace kg::model {

const std::vector<std::string>& target_transforms() {
  static const std::vector<std::string> t{"none", "standardize", "log1p"};
  return t;
}

bool TargetScale::is_buffer(const std::string& name) { return name == "target_shift" || name == "target_scale"; }

void TargetScale::build(torch::nn::Module& owner, const std::string& transform, const std::vector<double>& y_range,
                        int64_t outputs) {
  bool known = false;
  for (auto& t : target_transforms()) known = known || t == transform;
  KG_CHECK(known, ConfigError, "data.target_transform: unknown transform \"", transform,
           "\" (known: ", join(target_transforms(), ", "), ")");
  if (!y_range.empty()) {
    KG_CHECK(y_range.size() == 2 && std::isfinite(y_range[0]) && std::isfinite(y_range[1]) && y_range[0] < y_range[1],
             ConfigError, "model.y_range: expected [low, high] with low < high, both finite");
    KG_CHECK(transform != "log1p" || y_range[0] > -1, ConfigError, "model.y_range: low = ", y_range[0],
             " but data.target_transform = \"log1p\" maps only values above -1");
  }
  transform_ = transform;
  y_range_ = y_range;
  if (transform_ == "none") return;
  shift_ = owner.register_buffer("target_shift", torch::zeros({outputs}));
  scale_ = owner.register_buffer("target_scale", torch::ones({outputs}));
}

at::Tensor TargetScale::forward(const at::Tensor& z0) const {
  if (!active()) return z0;
  at::Tensor z = z0.to(at::kFloat);
  const bool log = transform_ == "log1p";
  if (!y_range_.empty()) {
    // The range in the space the transform maps to; an affine standardization commutes with it.
    const double lo = log ? std::log1p(y_range_[0]) : y_range_[0];
    const double hi = log ? std::log1p(y_range_[1]) : y_range_[1];
    at::Tensor u = torch::sigmoid(z) * (hi - lo) + lo;
    return log ? torch::expm1(u) : u;
  }
  at::Tensor u = z * scale_.to(z.device()) + shift_.to(z.device());
  // exp(88.7) overflows float32: the clamp keeps a wild early output finite (the loss still sees it huge).
  return log ? torch::expm1(u.clamp_max(80.0)) : u;
}

void TargetScale::fit(const at::Tensor& targets) {
  if (!fitted_buffers()) return;
  KG_ASSERT(targets.dim() == 2 && targets.size(1) == shift_.size(0), "target_scale: targets of shape ", targets.sizes(),
            " for ", shift_.size(0), " outputs");
  at::Tensor v = targets.to(at::kDouble);
  if (transform_ == "log1p") v = torch::log1p(v);
  at::Tensor mean = v.mean(0);
  at::Tensor std = v.size(0) > 1 ? v.std(0, /*unbiased=*/false) : torch::zeros_like(mean);
  std = torch::where(std > 1e-12, std, torch::ones_like(std));  // a constant target: shift only
  torch::NoGradGuard no_grad;
  shift_.copy_(mean.to(shift_.dtype()));
  scale_.copy_(std.to(scale_.dtype()));
}

std::string TargetScale::describe() const {
  if (!active()) return "";
  std::string s;
  if (transform_ != "none") {
    s = transform_;
    if (shift_.numel() == 1)
      s += " (shift " + format_significant(shift_.item<double>(), 4) + ", scale " +
           format_significant(scale_.item<double>(), 4) + ")";
  }
  if (!y_range_.empty())
    s += std::string(s.empty() ? "" : ", ") + "y_range [" + format_significant(y_range_[0], 6) + ", " +
         format_significant(y_range_[1], 6) + "]";
  return s;
}

}  // namespace kg::model
