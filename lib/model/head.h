// The classification/regression head shared by every backbone: global pooling, numeric features
// joined to the pooled image features, optional fastai-style hidden layers, dropout (or multi-sample dropout: the
// classifier on several dropout masks, its logits averaged), classifier, and for regression the output's scale
// (model/target_scale.h).
// Its modules are registered on the network itself so the classifier keeps the family's timm name
// (resnet `fc`, efficientnet `classifier`, convnext `head.fc`).
#pragma once
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>

#include "model/target_scale.h"

namespace kg::model {

// timm's global pool types: avg, max, avgmax (mean of both), catavgmax (avg then max, concatenated).
at::Tensor global_pool(const at::Tensor& x, const std::string& type);
int64_t pool_multiplier(const std::string& type);  // 2 for catavgmax, else 1
bool known_pool(const std::string& type);
// Is `name` the module path `prefix` or inside it ("fc" holds "fc.weight", not "fcx.weight")?
bool in_module(const std::string& name, const std::string& prefix);

struct HeadSpec {
  int64_t in_features = 0;  // pooled backbone width
  int64_t num_outputs = 0;
  int64_t num_features = 0;  // numeric feature columns
  std::vector<int64_t> hidden;
  double hidden_dropout = 0.5;
  std::vector<int64_t> feature_hidden;
  double drop_rate = 0.0;
  int64_t msd_samples = 0;  // multi-sample dropout: classifier runs averaged in training (0 = off)
  double msd_p = 0.5;
  std::string target_transform = "none";  // regression: data.target_transform
  std::vector<double> y_range;            // regression: model.y_range ({} or {low, high})
};

class Head {
 public:
  // Registers the head's modules on `owner`; the classifier goes to `fc_parent` as the last part of
  // `fc_path` ("fc", "classifier", "head.fc"). Extra modules: head_hidden, feature_bn, feature_mlp.
  void build(torch::nn::Module& owner, torch::nn::Module& fc_parent, const std::string& fc_path, const HeadSpec& spec);
  at::Tensor forward(const at::Tensor& pooled, const at::Tensor& features);

  bool owns(const std::string& param_name) const;  // is this parameter/buffer part of the head?
  // A network with a head of its own instead of build()'s (model/text/mlm.h): the module paths it owns.
  void own(std::vector<std::string> prefixes) { prefixes_ = std::move(prefixes); }
  const std::vector<std::string>& prefixes() const { return prefixes_; }
  std::string classifier_name() const { return fc_path_; }
  int64_t in_features() const { return spec_.in_features; }
  int64_t num_outputs() const { return spec_.num_outputs; }
  TargetScale& target_scale() { return scale_; }
  const TargetScale& target_scale() const { return scale_; }

 private:
  HeadSpec spec_;
  std::string fc_path_;
  std::vector<std::string> prefixes_;
  torch::nn::BatchNorm1d feature_bn_{nullptr};
  torch::nn::Sequential feature_mlp_{nullptr};
  torch::nn::Sequential hidden_{nullptr};
  torch::nn::Dropout drop_{nullptr};
  torch::nn::Linear fc_{nullptr};
  TargetScale scale_;
};

}  // namespace kg::model
