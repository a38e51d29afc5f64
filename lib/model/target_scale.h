// Regression heads that start on the target's scale: data.target_transform (the network predicts the
// standardized target, or the standardized log1p of it, and its output is mapped back) and fastai's
// y_range (a sigmoid squashed into [low, high]). Applied at the end of Network::forward, so the loss,
// the metrics, OOF, TTA and every prediction see values in the target's own units.
//   none        : y = z                      standardize : y = z * scale + shift
//   log1p       : y = expm1(z * scale + shift)      (shift, scale: mean and std of log1p(targets))
//   y_range     : z is first squashed to T(low) + (T(high) - T(low)) * sigmoid(z), T the transform's
//                 forward map, so the range holds in target units whatever the transform.
// shift and scale are fitted on the training fold (fit()) and live as buffers `target_shift` and
// `target_scale` [K] beside the classifier: every checkpoint and exported weight file carries them.
#pragma once
#include <string>
#include <vector>

#include <torch/nn/module.h>

namespace kg::model {

// The transforms data.target_transform allows.
const std::vector<std::string>& target_transforms();

class TargetScale {
 public:
  // `transform`: none | standardize | log1p; `y_range`: {} or {low, high}; `outputs`: K.
  // ConfigError for an unknown transform, a bad range, or a range log1p cannot map (low <= -1).
  void build(torch::nn::Module& owner, const std::string& transform, const std::vector<double>& y_range,
             int64_t outputs);
  bool active() const { return transform_ != "none" || !y_range_.empty(); }
  bool fitted_buffers() const { return transform_ != "none"; }  // target_shift / target_scale exist
  // Network output z [N, K] -> values in target units (float32 when active).
  at::Tensor forward(const at::Tensor& z) const;
  // Fits shift and scale on training targets [N, K] (finite; > -1 for log1p, checked by the caller).
  void fit(const at::Tensor& targets);
  // "standardize (mean 152.3, std 88.1)"; "" when inactive.
  std::string describe() const;
  static bool is_buffer(const std::string& name);  // target_shift / target_scale

 private:
  std::string transform_ = "none";
  std::vector<double> y_range_;
  at::Tensor shift_, scale_;
};

}  // namespace kg::model
