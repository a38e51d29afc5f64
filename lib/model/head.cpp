#include "model/head.h"

#include <torch/torch.h>

#include "core/error.h"

namespace kg::model {

bool known_pool(const std::string& t) { return t == "avg" || t == "max" || t == "avgmax" || t == "catavgmax"; }
int64_t pool_multiplier(const std::string& t) { return t == "catavgmax" ? 2 : 1; }

at::Tensor global_pool(const at::Tensor& x, const std::string& t) {
  if (x.dim() == 2) return x;  // a backbone that pools itself (a traced forward_features may)
  KG_CHECK(x.dim() == 4, DataError, "global pool: the backbone returned shape ", x.sizes(),
           "; expected a feature map [N, C, H, W] or pooled features [N, C]");
  auto avg = [&] { return x.mean({2, 3}); };
  auto max = [&] { return std::get<0>(x.flatten(2).max(2)); };
  if (t == "avg") return avg();
  if (t == "max") return max();
  if (t == "avgmax") return 0.5 * (avg() + max());
  if (t == "catavgmax") return torch::cat({avg(), max()}, 1);
  throw ConfigError("model.global_pool: unknown pool \"" + t + "\" (known: avg, max, avgmax, catavgmax)");
}

void Head::build(torch::nn::Module& owner, torch::nn::Module& fc_parent, const std::string& fc_path,
                 const HeadSpec& spec) {
  namespace nn = torch::nn;
  spec_ = spec;
  fc_path_ = fc_path;
  // A classifier inside a head module (convnext's head.fc) makes the whole module head (head.norm too).
  const auto dot = fc_path.rfind('.');
  prefixes_ = {dot == std::string::npos ? fc_path : fc_path.substr(0, dot)};
  int64_t width = spec.in_features;
  if (spec.num_features > 0) {
    // Numeric columns arrive unscaled; a BatchNorm puts them on the pooled features' scale (fastai's bn_cont).
    feature_bn_ = owner.register_module("feature_bn", nn::BatchNorm1d(spec.num_features));
    prefixes_.push_back("feature_bn");
    int64_t f = spec.num_features;
    if (!spec.feature_hidden.empty()) {
      feature_mlp_ = owner.register_module("feature_mlp", nn::Sequential());
      for (int64_t h : spec.feature_hidden) {
        feature_mlp_->push_back(nn::Linear(f, h));
        feature_mlp_->push_back(nn::ReLU(nn::ReLUOptions(true)));
        f = h;
      }
      prefixes_.push_back("feature_mlp");
    }
    width += f;
  }
  if (!spec.hidden.empty()) {
    // fastai create_head: [BN, Dropout(ps/2), Linear, ReLU] per hidden layer, then BN, Dropout(ps).
    hidden_ = owner.register_module("head_hidden", nn::Sequential());
    for (int64_t h : spec.hidden) {
      hidden_->push_back(nn::BatchNorm1d(width));
      hidden_->push_back(nn::Dropout(spec.hidden_dropout / 2));
      hidden_->push_back(nn::Linear(width, h));
      hidden_->push_back(nn::ReLU(nn::ReLUOptions(true)));
      width = h;
    }
    hidden_->push_back(nn::BatchNorm1d(width));
    hidden_->push_back(nn::Dropout(spec.hidden_dropout));
    prefixes_.push_back("head_hidden");
  }
  if (spec.drop_rate > 0) drop_ = owner.register_module("head_drop", nn::Dropout(spec.drop_rate));
  const std::string leaf = fc_path.substr(fc_path.rfind('.') + 1);
  fc_ = fc_parent.register_module(leaf, nn::Linear(width, spec.num_outputs));
  scale_.build(owner, spec.target_transform, spec.y_range, spec.num_outputs);
  if (scale_.fitted_buffers()) prefixes_.insert(prefixes_.end(), {"target_shift", "target_scale"});
}

at::Tensor Head::forward(const at::Tensor& pooled, const at::Tensor& features) {
  at::Tensor x = pooled;
  if (spec_.num_features > 0) {
    KG_CHECK(features.defined() && features.dim() == 2 && features.size(1) == spec_.num_features, DataError,
             "the model was built for ", spec_.num_features,
             " numeric feature columns (data.feature_cols) but the batch has ",
             features.defined() ? c10::str(features.sizes()) : std::string("none"));
    at::Tensor f = feature_bn_->forward(features.to(x.dtype()));
    if (feature_mlp_) f = feature_mlp_->forward(f);
    x = torch::cat({x, f}, 1);
  }
  if (hidden_) x = hidden_->forward(x);
  if (drop_) x = drop_->forward(x);
  if (spec_.msd_samples > 0 && fc_->is_training()) {
    // Multi-sample dropout: one mask per sample run, drawn in order, the logits averaged.
    at::Tensor sum = fc_->forward(torch::dropout(x, spec_.msd_p, true));
    for (int64_t i = 1; i < spec_.msd_samples; ++i) sum = sum + fc_->forward(torch::dropout(x, spec_.msd_p, true));
    return scale_.forward(sum / static_cast<double>(spec_.msd_samples));
  }
  return scale_.forward(fc_->forward(x));
}

bool in_module(const std::string& name, const std::string& p) {
  return name == p || name.compare(0, p.size() + 1, p + ".") == 0;
}

bool Head::owns(const std::string& name) const {
  for (auto& p : prefixes_)
    if (in_module(name, p)) return true;
  return false;
}

}  // namespace kg::model
