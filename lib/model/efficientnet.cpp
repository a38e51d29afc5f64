// EfficientNet-B0..B4 (Tan & Le 2019) with timm's efficientnet_b* layout and parameter names:
// conv_stem, bn1, blocks.{stage}.{block}.{conv_pw,bn1,conv_dw,bn2,se.conv_reduce,se.conv_expand,conv_pwl,bn3},
// conv_head, bn2, classifier. The architecture is timm's non-tf variant and torchvision's efficientnet_b*
// (symmetric k//2 padding, BatchNorm eps 1e-5 / momentum 0.1, SiLU, SE reduced from the block input width).
#include <algorithm>
#include <cmath>
#include <iterator>

#include <torch/torch.h>

#include "model/batchnorm.h"
#include "model/layers.h"
#include "model/model.h"

namespace kg::model {
namespace {

struct EfficientNetOptions {};  // the shared [model] keys cover what timm's efficientnet_b* takes

// timm make_divisible(v, 8): nearest multiple of 8, at least 8, never more than 10% below v.
int64_t make_divisible(double v) {
  int64_t r = std::max<int64_t>(8, static_cast<int64_t>(v + 4.0) / 8 * 8);
  if (static_cast<double>(r) < 0.9 * v) r += 8;
  return r;
}

// One stage of timm's arch_def for efficientnet_b0: ds_r1_k3_s1_e1_c16_se0.25, ir_r2_k3_s2_e6_c24_se0.25, ...
struct StageDef {
  int64_t kernel, stride, expand, channels, repeats;
};
constexpr StageDef kStages[] = {{3, 1, 1, 16, 1},  {3, 2, 6, 24, 2},  {5, 2, 6, 40, 2}, {3, 2, 6, 80, 3},
                                {5, 1, 6, 112, 3}, {5, 2, 6, 192, 4}, {3, 1, 6, 320, 1}};
constexpr double kSeRatio = 0.25;

torch::nn::Conv2d conv(int64_t cin, int64_t cout, int64_t k, int64_t stride = 1, int64_t groups = 1) {
  return torch::nn::Conv2d(
      torch::nn::Conv2dOptions(cin, cout, k).stride(stride).padding(k / 2).groups(groups).bias(false));
}

// timm's SqueezeExcite: mean over H, W -> 1x1 conv (reduce) -> SiLU -> 1x1 conv (expand) -> sigmoid gate.
struct SqueezeExciteImpl : torch::nn::Module {
  SqueezeExciteImpl(int64_t chs, int64_t rd) {
    conv_reduce = register_module("conv_reduce", torch::nn::Conv2d(torch::nn::Conv2dOptions(chs, rd, 1)));
    conv_expand = register_module("conv_expand", torch::nn::Conv2d(torch::nn::Conv2dOptions(rd, chs, 1)));
  }
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor s = torch::silu(conv_reduce->forward(x.mean({2, 3}, /*keepdim=*/true)));
    return x * torch::sigmoid(conv_expand->forward(s));
  }
  torch::nn::Conv2d conv_reduce{nullptr}, conv_expand{nullptr};
};
TORCH_MODULE(SqueezeExcite);

// SE width: timm divides se_ratio by the expansion (se_from_exp=False), i.e. a quarter of the block input.
int64_t se_channels(int64_t mid, int64_t expand) {
  return static_cast<int64_t>(std::nearbyint(static_cast<double>(mid) * (kSeRatio / static_cast<double>(expand))));
}

// timm DepthwiseSeparableConv (stage 0): dw conv -> BN -> SiLU -> SE -> pw conv -> BN (+ residual).
struct DepthwiseSeparableImpl : torch::nn::Module {
  DepthwiseSeparableImpl(int64_t cin, int64_t cout, int64_t k, int64_t stride, double dp)
      : skip(stride == 1 && cin == cout), drop_path_rate(dp) {
    conv_dw = register_module("conv_dw", conv(cin, cin, k, stride, cin));
    bn1 = register_module("bn1", BatchNorm2d(cin));
    se = register_module("se", SqueezeExcite(cin, se_channels(cin, 1)));
    conv_pw = register_module("conv_pw", conv(cin, cout, 1));
    bn2 = register_module("bn2", BatchNorm2d(cout));
  }
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor y = se->forward(torch::silu(bn1->forward(conv_dw->forward(x))));
    y = bn2->forward(conv_pw->forward(y));
    return skip ? drop_path(y, drop_path_rate, is_training()) + x : y;
  }
  bool skip;
  double drop_path_rate;
  torch::nn::Conv2d conv_dw{nullptr}, conv_pw{nullptr};
  BatchNorm2d bn1{nullptr}, bn2{nullptr};
  SqueezeExcite se{nullptr};
};
TORCH_MODULE(DepthwiseSeparable);

// timm InvertedResidual (MBConv): pw expand -> BN -> SiLU -> dw conv -> BN -> SiLU -> SE -> pw project -> BN (+
// residual).
struct InvertedResidualImpl : torch::nn::Module {
  InvertedResidualImpl(int64_t cin, int64_t cout, int64_t k, int64_t stride, int64_t expand, double dp)
      : skip(stride == 1 && cin == cout), drop_path_rate(dp) {
    const int64_t mid = make_divisible(static_cast<double>(cin * expand));
    conv_pw = register_module("conv_pw", conv(cin, mid, 1));
    bn1 = register_module("bn1", BatchNorm2d(mid));
    conv_dw = register_module("conv_dw", conv(mid, mid, k, stride, mid));
    bn2 = register_module("bn2", BatchNorm2d(mid));
    se = register_module("se", SqueezeExcite(mid, se_channels(mid, expand)));
    conv_pwl = register_module("conv_pwl", conv(mid, cout, 1));
    bn3 = register_module("bn3", BatchNorm2d(cout));
  }
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor y = torch::silu(bn1->forward(conv_pw->forward(x)));
    y = se->forward(torch::silu(bn2->forward(conv_dw->forward(y))));
    y = bn3->forward(conv_pwl->forward(y));
    return skip ? drop_path(y, drop_path_rate, is_training()) + x : y;
  }
  bool skip;
  double drop_path_rate;
  torch::nn::Conv2d conv_pw{nullptr}, conv_dw{nullptr}, conv_pwl{nullptr};
  BatchNorm2d bn1{nullptr}, bn2{nullptr}, bn3{nullptr};
  SqueezeExcite se{nullptr};
};
TORCH_MODULE(InvertedResidual);

// timm's _init_weight_goog (TF EfficientNet init): conv N(0, sqrt(2 / fan_out)) with fan_out = k*k*out/groups,
// BN 1/0, linear U(-1/sqrt(out), 1/sqrt(out)) with zero bias.
void init_goog_module(torch::nn::Module& mod) {
  torch::NoGradGuard no_grad;
  if (auto* c = mod.as<torch::nn::Conv2d>()) {
    const auto& o = c->options;
    const int64_t k = (*o.kernel_size())[0] * (*o.kernel_size())[1];
    c->weight.normal_(0.0, std::sqrt(2.0 / static_cast<double>(k * o.out_channels() / o.groups())));
    if (c->bias.defined()) c->bias.zero_();
  } else if (auto* b = mod.as<BatchNorm2d>()) {
    b->weight.fill_(1.0);
    b->bias.zero_();
  } else if (auto* l = mod.as<torch::nn::Linear>()) {
    const double range = 1.0 / std::sqrt(static_cast<double>(l->weight.size(0)));
    l->weight.uniform_(-range, range);
    if (l->bias.defined()) l->bias.zero_();
  }
}
void init_goog(torch::nn::Module& m) {
  init_goog_module(m);
  for (auto& mod : m.modules(/*include_self=*/false)) init_goog_module(*mod);  // self is not yet in a shared_ptr
}

class EfficientNet final : public Network {
 public:
  EfficientNet(double width, double depth, const ModelContext& ctx) {
    const int64_t stem = make_divisible(32 * width);
    conv_stem = register_module("conv_stem", conv(ctx.in_chans, stem, 3, 2));
    bn1 = register_module("bn1", BatchNorm2d(stem));

    // timm's depth scaling (depth_trunc='ceil') and drop path rule: block i of n gets rate * i / n.
    std::vector<int64_t> repeats;
    int64_t total = 0;
    for (const auto& s : kStages) {
      repeats.push_back(static_cast<int64_t>(std::ceil(static_cast<double>(s.repeats) * depth)));
      total += repeats.back();
    }
    auto blocks = register_module("blocks", torch::nn::ModuleList());
    int64_t cin = stem, index = 0;
    for (size_t i = 0; i < std::size(kStages); ++i) {
      const StageDef& s = kStages[i];
      const int64_t cout = make_divisible(static_cast<double>(s.channels) * width);
      torch::nn::Sequential stage;
      for (int64_t b = 0; b < repeats[i]; ++b) {
        const int64_t stride = b == 0 ? s.stride : 1;
        const double dp = ctx.model.drop_path_rate * static_cast<double>(index++) / static_cast<double>(total);
        if (s.expand == 1)
          stage->push_back(DepthwiseSeparable(cin, cout, s.kernel, stride, dp));
        else
          stage->push_back(InvertedResidual(cin, cout, s.kernel, stride, s.expand, dp));
        cin = cout;
      }
      blocks->push_back(stage);
      stages_.push_back(stage);
    }
    const int64_t features = make_divisible(1280 * width);
    conv_head = register_module("conv_head", conv(cin, features, 1));
    bn2 = register_module("bn2", BatchNorm2d(features));
    init_goog(*this);

    add_group("stem", {"conv_stem", "bn1"});
    for (size_t i = 0; i < stages_.size(); ++i)
      add_group("blocks." + std::to_string(i), {"blocks." + std::to_string(i)});
    // timm's group_matcher also gives conv_head/bn2 a group of their own, after the last stage.
    add_group("head_conv", {"conv_head", "bn2"});
    set_first_conv("conv_stem.weight");
    finish(ctx, *this, "classifier");
    init_goog(*named_children()["classifier"]);  // timm inits the classifier too; extra head layers keep PyTorch's
  }

  at::Tensor forward_features(const at::Tensor& input) override {
    at::Tensor x = torch::silu(bn1->forward(conv_stem->forward(input)));
    for (auto& s : stages_) x = run_stage(s, x);
    return torch::silu(bn2->forward(conv_head->forward(x)));
  }

 private:
  torch::nn::Conv2d conv_stem{nullptr}, conv_head{nullptr};
  BatchNorm2d bn1{nullptr}, bn2{nullptr};
  std::vector<torch::nn::Sequential> stages_;
};

void add_efficientnet(const char* name, const char* doc, double width, double depth) {
  model_registry().add(name, doc, std::string("[model]\nname = \"") + name + "\"",
                       config::Fields<EfficientNetOptions>(),
                       [width, depth](const EfficientNetOptions&, const ModelContext& ctx) -> NetworkPtr {
                         return std::make_shared<EfficientNet>(width, depth, ctx);
                       });
}

// (channel multiplier, depth multiplier) from the paper, as timm's efficientnet_b*.
const bool kEfficientnetRegistered = [] {
  add_efficientnet("efficientnet_b0", "EfficientNet-B0 (timm names; 5.3M parameters at 1000 classes)", 1.0, 1.0);
  add_efficientnet("efficientnet_b1", "EfficientNet-B1 (timm names; 7.8M parameters at 1000 classes)", 1.0, 1.1);
  add_efficientnet("efficientnet_b2", "EfficientNet-B2 (timm names; 9.1M parameters at 1000 classes)", 1.1, 1.2);
  add_efficientnet("efficientnet_b3", "EfficientNet-B3 (timm names; 12.2M parameters at 1000 classes)", 1.2, 1.4);
  add_efficientnet("efficientnet_b4", "EfficientNet-B4 (timm names; 19.3M parameters at 1000 classes)", 1.4, 1.8);
  return true;
}();

}  // namespace
}  // namespace kg::model
