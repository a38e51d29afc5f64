// EfficientNet-B0..B7 (Tan & Le 2019) and EfficientNetV2-S/M/L (Tan & Le 2021) with timm's layout and parameter names:
// conv_stem, bn1, blocks.{stage}.{block}.{conv_pw,bn1,conv_dw,bn2,se.conv_reduce,se.conv_expand,conv_pwl,bn3} (V2's
// fused blocks: conv_exp, bn1, conv_pwl, bn2; its first stage: conv, bn1),
// conv_head, bn2, classifier. efficientnet_b* is timm's PyTorch variant and torchvision's (symmetric k//2 padding,
// BatchNorm eps 1e-5 / momentum 0.1, SiLU, SE reduced from the block input width); tf_efficientnet_b* is the port
// of Google's TF weights (the Noisy Student ones Kaggle fine-tunes): the same names and shapes, but TF's "same"
// padding (a strided conv pads (k - 1 + the input's remainder) split with the extra pixel right/bottom, as timm's
// Conv2dSame) and BatchNorm eps 1e-3. torchvision's efficientnet_b5..b7 (tv_efficientnet_b*) and efficientnet_v2_*
// have PyTorch's padding with eps 1e-3: a third variant, which only torchvision's files fit (model/torchvision_names).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>

#include <torch/torch.h>

#include "model/batchnorm.h"
#include "model/layers.h"
#include "model/model.h"

namespace kg::model {
namespace {

struct EfficientNetOptions {};  // the shared [model] keys cover what timm's efficientnet_b* takes

// What tells the TF port from the PyTorch variant.
struct EffNetVariant {
  bool same_pad = false;  // TF "same" padding on strided convs (stride-1 convs pad k // 2 either way)
  double bn_eps = 1e-5;
};
constexpr EffNetVariant kTorchVariant{false, 1e-5};
constexpr EffNetVariant kTfVariant{true, 1e-3};
// torchvision's efficientnet_b5..b7 and efficientnet_v2_*: PyTorch's padding with TF's eps.
constexpr EffNetVariant kTorchvisionVariant{false, 1e-3};

// timm's block kinds: ds (depthwise-separable), ir (inverted residual, MBConv), er (edge residual, FusedMBConv:
// a full 3x3 conv expands), cn (conv + BN + act).
enum class BlockKind { ds, ir, er, cn };

// One stage of timm's arch_def: ds_r1_k3_s1_e1_c16_se0.25 is {ds, 3, 1, 1, 16, 1, se}.
struct StageDef {
  BlockKind kind;
  int64_t kernel, stride, expand, channels, repeats;
  bool se;
};
constexpr double kSeRatio = 0.25;

// A whole network: its stages, stem and head widths before the width multiplier, the multipliers (depth per stage).
struct EffNetSpec {
  std::vector<StageDef> stages;
  int64_t stem = 32, features = 1280;
  double width = 1.0;
  std::vector<double> depth;  // one per stage
};

const std::vector<StageDef>& v1_stages() {
  using K = BlockKind;
  static const std::vector<StageDef> s = {{K::ds, 3, 1, 1, 16, 1, true},  {K::ir, 3, 2, 6, 24, 2, true},
                                          {K::ir, 5, 2, 6, 40, 2, true},  {K::ir, 3, 2, 6, 80, 3, true},
                                          {K::ir, 5, 1, 6, 112, 3, true}, {K::ir, 5, 2, 6, 192, 4, true},
                                          {K::ir, 3, 1, 6, 320, 1, true}};
  return s;
}

// A strided conv of the TF variant pads in its forward (same_conv); every other conv pads k // 2 itself.
torch::nn::Conv2d conv(const EffNetVariant& v, int64_t cin, int64_t cout, int64_t k, int64_t stride = 1,
                       int64_t groups = 1) {
  const int64_t pad = v.same_pad && stride > 1 ? 0 : k / 2;
  return torch::nn::Conv2d(
      torch::nn::Conv2dOptions(cin, cout, k).stride(stride).padding(pad).groups(groups).bias(false));
}

// TF's "same" padding (timm pad_same) for a strided conv of the TF variant: the output is ceil(input / stride);
// the padding that takes is split with the odd pixel on the right and bottom. Any other conv runs as it is.
at::Tensor same_conv(const EffNetVariant& v, torch::nn::Conv2d& c, const at::Tensor& x) {
  const auto& o = c->options;
  if (!v.same_pad || ((*o.stride())[0] == 1 && (*o.stride())[1] == 1)) return c->forward(x);
  int64_t p[2];
  for (int d = 0; d < 2; ++d) {
    const int64_t in = x.size(2 + d), s = (*o.stride())[d], k = (*o.kernel_size())[d];
    p[d] = std::max<int64_t>(((in + s - 1) / s - 1) * s + k - in, 0);
  }
  return c->forward(torch::constant_pad_nd(x, {p[1] / 2, p[1] - p[1] / 2, p[0] / 2, p[0] - p[0] / 2}));
}

BatchNorm2d effnet_bn(const EffNetVariant& v, int64_t c) {
  return BatchNorm2d(torch::nn::BatchNormOptions(c).eps(v.bn_eps));
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

// What every block holds: its variant, whether it adds its input back (stride 1, same width), its drop-path rate.
struct EffBlock : torch::nn::Module {
  EffBlock(const EffNetVariant& v, bool skip, double dp) : variant(v), skip(skip), drop_path_rate(dp) {}
  at::Tensor residual(const at::Tensor& y, const at::Tensor& x) const {
    return skip ? drop_path(y, drop_path_rate, is_training()) + x : y;
  }
  EffNetVariant variant;
  bool skip;
  double drop_path_rate;
};

// timm DepthwiseSeparableConv (stage 0): dw conv -> BN -> SiLU -> SE -> pw conv -> BN (+ residual).
struct DepthwiseSeparableImpl : EffBlock {
  DepthwiseSeparableImpl(const EffNetVariant& v, int64_t cin, int64_t cout, int64_t k, int64_t stride, double dp)
      : EffBlock(v, stride == 1 && cin == cout, dp) {
    conv_dw = register_module("conv_dw", conv(v, cin, cin, k, stride, cin));
    bn1 = register_module("bn1", effnet_bn(v, cin));
    se = register_module("se", SqueezeExcite(cin, se_channels(cin, 1)));
    conv_pw = register_module("conv_pw", conv(v, cin, cout, 1));
    bn2 = register_module("bn2", effnet_bn(v, cout));
  }
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor y = se->forward(torch::silu(bn1->forward(same_conv(variant, conv_dw, x))));
    y = bn2->forward(conv_pw->forward(y));
    return residual(y, x);
  }
  torch::nn::Conv2d conv_dw{nullptr}, conv_pw{nullptr};
  BatchNorm2d bn1{nullptr}, bn2{nullptr};
  SqueezeExcite se{nullptr};
};
TORCH_MODULE(DepthwiseSeparable);

// timm InvertedResidual (MBConv): pw expand -> BN -> SiLU -> dw conv -> BN -> SiLU -> SE -> pw project -> BN (+
// residual).
struct InvertedResidualImpl : EffBlock {
  InvertedResidualImpl(const EffNetVariant& v, int64_t cin, int64_t cout, int64_t k, int64_t stride, int64_t expand,
                       double dp)
      : EffBlock(v, stride == 1 && cin == cout, dp) {
    const int64_t mid = make_divisible(static_cast<double>(cin * expand));
    conv_pw = register_module("conv_pw", conv(v, cin, mid, 1));
    bn1 = register_module("bn1", effnet_bn(v, mid));
    conv_dw = register_module("conv_dw", conv(v, mid, mid, k, stride, mid));
    bn2 = register_module("bn2", effnet_bn(v, mid));
    se = register_module("se", SqueezeExcite(mid, se_channels(mid, expand)));
    conv_pwl = register_module("conv_pwl", conv(v, mid, cout, 1));
    bn3 = register_module("bn3", effnet_bn(v, cout));
  }
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor y = torch::silu(bn1->forward(conv_pw->forward(x)));
    y = se->forward(torch::silu(bn2->forward(same_conv(variant, conv_dw, y))));
    y = bn3->forward(conv_pwl->forward(y));
    return residual(y, x);
  }
  torch::nn::Conv2d conv_pw{nullptr}, conv_dw{nullptr}, conv_pwl{nullptr};
  BatchNorm2d bn1{nullptr}, bn2{nullptr}, bn3{nullptr};
  SqueezeExcite se{nullptr};
};
TORCH_MODULE(InvertedResidual);

// timm EdgeResidual (FusedMBConv): full conv expand (k x k, stride) -> BN -> SiLU -> [SE] -> pw project -> BN
// (+ residual).
struct EdgeResidualImpl : EffBlock {
  EdgeResidualImpl(const EffNetVariant& v, int64_t cin, int64_t cout, int64_t k, int64_t stride, int64_t expand,
                   bool with_se, double dp)
      : EffBlock(v, stride == 1 && cin == cout, dp) {
    const int64_t mid = make_divisible(static_cast<double>(cin * expand));
    conv_exp = register_module("conv_exp", conv(v, cin, mid, k, stride));
    bn1 = register_module("bn1", effnet_bn(v, mid));
    if (with_se) se = register_module("se", SqueezeExcite(mid, se_channels(mid, expand)));
    conv_pwl = register_module("conv_pwl", conv(v, mid, cout, 1));
    bn2 = register_module("bn2", effnet_bn(v, cout));
  }
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor y = torch::silu(bn1->forward(same_conv(variant, conv_exp, x)));
    if (se) y = se->forward(y);
    y = bn2->forward(conv_pwl->forward(y));
    return residual(y, x);
  }
  torch::nn::Conv2d conv_exp{nullptr}, conv_pwl{nullptr};
  BatchNorm2d bn1{nullptr}, bn2{nullptr};
  SqueezeExcite se{nullptr};
};
TORCH_MODULE(EdgeResidual);

// timm ConvBnAct (EfficientNetV2's first stage, "cn_..._skip"): conv -> BN -> SiLU (+ residual).
struct ConvBnActImpl : EffBlock {
  ConvBnActImpl(const EffNetVariant& v, int64_t cin, int64_t cout, int64_t k, int64_t stride, double dp)
      : EffBlock(v, stride == 1 && cin == cout, dp) {
    conv = register_module("conv", kg::model::conv(v, cin, cout, k, stride));
    bn1 = register_module("bn1", effnet_bn(v, cout));
  }
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor y = torch::silu(bn1->forward(same_conv(variant, conv, x)));
    return residual(y, x);
  }
  torch::nn::Conv2d conv{nullptr};
  BatchNorm2d bn1{nullptr};
};
TORCH_MODULE(ConvBnAct);

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
  EfficientNet(const EffNetVariant& v, const EffNetSpec& spec, const ModelContext& ctx) : variant_(v) {
    const double width = spec.width;
    const int64_t stem = make_divisible(static_cast<double>(spec.stem) * width);
    conv_stem = register_module("conv_stem", conv(v, ctx.in_chans, stem, 3, 2));
    bn1 = register_module("bn1", effnet_bn(v, stem));

    // timm's depth scaling (depth_trunc='ceil') and drop path rule: block i of n gets rate * i / n.
    std::vector<int64_t> repeats;
    int64_t total = 0;
    for (size_t i = 0; i < spec.stages.size(); ++i) {
      repeats.push_back(static_cast<int64_t>(std::ceil(static_cast<double>(spec.stages[i].repeats) * spec.depth[i])));
      total += repeats.back();
    }
    auto blocks = register_module("blocks", torch::nn::ModuleList());
    int64_t cin = stem, index = 0;
    for (size_t i = 0; i < spec.stages.size(); ++i) {
      const StageDef& s = spec.stages[i];
      const int64_t cout = make_divisible(static_cast<double>(s.channels) * width);
      torch::nn::Sequential stage;
      for (int64_t b = 0; b < repeats[i]; ++b) {
        const int64_t stride = b == 0 ? s.stride : 1;
        const double dp = ctx.model.drop_path_rate * static_cast<double>(index++) / static_cast<double>(total);
        switch (s.kind) {
          case BlockKind::ds:
            stage->push_back(DepthwiseSeparable(v, cin, cout, s.kernel, stride, dp));
            break;
          case BlockKind::ir:
            stage->push_back(InvertedResidual(v, cin, cout, s.kernel, stride, s.expand, dp));
            break;
          case BlockKind::er:
            stage->push_back(EdgeResidual(v, cin, cout, s.kernel, stride, s.expand, s.se, dp));
            break;
          case BlockKind::cn:
            stage->push_back(ConvBnAct(v, cin, cout, s.kernel, stride, dp));
            break;
        }
        cin = cout;
      }
      blocks->push_back(stage);
      stages_.push_back(stage);
    }
    const int64_t features = make_divisible(static_cast<double>(spec.features) * width);
    conv_head = register_module("conv_head", conv(v, cin, features, 1));
    bn2 = register_module("bn2", effnet_bn(v, features));
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
    at::Tensor x = torch::silu(bn1->forward(same_conv(variant_, conv_stem, input)));
    for (auto& s : stages_) x = run_stage(s, x);
    return torch::silu(bn2->forward(conv_head->forward(x)));
  }

 private:
  EffNetVariant variant_;
  torch::nn::Conv2d conv_stem{nullptr}, conv_head{nullptr};
  BatchNorm2d bn1{nullptr}, bn2{nullptr};
  std::vector<torch::nn::Sequential> stages_;
};

void add_efficientnet(const std::string& name, const std::string& doc, const EffNetVariant& v, const EffNetSpec& spec) {
  model_registry().add(name, doc, "[model]\nname = \"" + name + "\"", config::Fields<EfficientNetOptions>(),
                       [v, spec](const EfficientNetOptions&, const ModelContext& ctx) -> NetworkPtr {
                         return std::make_shared<EfficientNet>(v, spec, ctx);
                       });
}

// Both variants of B<i>: efficientnet_b<i> and tf_efficientnet_b<i>; (channel, depth multiplier) from the paper.
void add_both(int i, const char* params, double width, double depth) {
  const EffNetSpec spec{v1_stages(), 32, 1280, width, std::vector<double>(v1_stages().size(), depth)};
  const std::string b = "efficientnet_b" + std::to_string(i), size = std::string("; ") + params;
  add_efficientnet(b, "EfficientNet-B" + std::to_string(i) + " (timm names" + size + " at 1000 classes)", kTorchVariant,
                   spec);
  add_efficientnet("tf_" + b,
                   "EfficientNet-B" + std::to_string(i) +
                       ", TF port: \"same\" padding, BatchNorm eps 1e-3 (timm names" + size + " at 1000 classes)",
                   kTfVariant, spec);
  if (i >= 5)  // torchvision's b5..b7 hold TF's weights ported for PyTorch's padding, with TF's eps
    add_efficientnet("tv_" + b,
                     "EfficientNet-B" + std::to_string(i) +
                         ", torchvision's: PyTorch padding, BatchNorm eps 1e-3 (torchvision's files load; timm names" +
                         size + ")",
                     kTorchvisionVariant, spec);
}

// EfficientNetV2 (Tan & Le 2021), timm's _gen_efficientnetv2_s/_m: FusedMBConv (er) stages first, then MBConv with SE.
// The _rw_ ones are timm's own first version (an er first stage, 272 channels last, 1792 features).
EffNetSpec v2_spec(char size, bool rw) {
  using K = BlockKind;
  EffNetSpec s;
  s.stem = 24;
  if (size == 'l') {  // timm's _gen_efficientnetv2_l = torchvision's efficientnet_v2_l
    s.stem = 32;
    s.stages = {{K::cn, 3, 1, 1, 32, 4, false},  {K::er, 3, 2, 4, 64, 7, false},  {K::er, 3, 2, 4, 96, 7, false},
                {K::ir, 3, 2, 4, 192, 10, true}, {K::ir, 3, 1, 6, 224, 19, true}, {K::ir, 3, 2, 6, 384, 25, true},
                {K::ir, 3, 1, 6, 640, 7, true}};
  } else if (size == 's' || rw) {
    s.stages = {{K::cn, 3, 1, 1, 24, 2, false}, {K::er, 3, 2, 4, 48, 4, false}, {K::er, 3, 2, 4, 64, 4, false},
                {K::ir, 3, 2, 4, 128, 6, true}, {K::ir, 3, 1, 6, 160, 9, true}, {K::ir, 3, 2, 6, 256, 15, true}};
    if (rw) {
      s.stages.front() = {K::er, 3, 1, 1, 24, 2, false};
      s.stages.back().channels = 272;
      s.features = 1792;
    }
  } else {
    s.stages = {{K::cn, 3, 1, 1, 24, 3, false}, {K::er, 3, 2, 4, 48, 5, false},  {K::er, 3, 2, 4, 80, 5, false},
                {K::ir, 3, 2, 4, 160, 7, true}, {K::ir, 3, 1, 6, 176, 14, true}, {K::ir, 3, 2, 6, 304, 18, true},
                {K::ir, 3, 1, 6, 512, 5, true}};
  }
  s.depth.assign(s.stages.size(), 1.0);
  if (rw && size == 'm') {  // efficientnetv2_rw_m: channels x1.2, depth x1.2 then x1.6 for the last two stages
    s.width = 1.2;
    s.depth = {1.2, 1.2, 1.2, 1.2, 1.6, 1.6};
  }
  return s;
}

const bool kEfficientnetRegistered = [] {
  add_both(0, "5.3M parameters", 1.0, 1.0);
  add_both(1, "7.8M parameters", 1.0, 1.1);
  add_both(2, "9.1M parameters", 1.1, 1.2);
  add_both(3, "12.2M parameters", 1.2, 1.4);
  add_both(4, "19.3M parameters", 1.4, 1.8);
  add_both(5, "30.4M parameters", 1.6, 2.2);
  add_both(6, "43.0M parameters", 1.8, 2.6);
  add_both(7, "66.3M parameters", 2.0, 3.1);
  for (const char size : {'s', 'm', 'l'}) {
    const std::string S(1, static_cast<char>(std::toupper(size))), x(1, size);
    const char* params = size == 's' ? "21.5M" : size == 'm' ? "54.1M" : "118.5M";
    add_efficientnet("efficientnetv2_" + x,
                     "EfficientNetV2-" + S + " (timm names; " + params + " parameters at 1000 classes)", kTorchVariant,
                     v2_spec(size, false));
    add_efficientnet("tf_efficientnetv2_" + x,
                     "EfficientNetV2-" + S + ", TF port: \"same\" padding, BatchNorm eps 1e-3 (timm names; " + params +
                         " parameters)",
                     kTfVariant, v2_spec(size, false));
    add_efficientnet("efficientnet_v2_" + x,
                     "EfficientNetV2-" + S + ", torchvision's: PyTorch padding, BatchNorm eps 1e-3 (torchvision's " +
                         "files load; timm names; " + params + " parameters)",
                     kTorchvisionVariant, v2_spec(size, false));
  }
  add_efficientnet("efficientnetv2_rw_s", "EfficientNetV2-S, timm's own variant (timm names; 23.9M parameters)",
                   kTorchVariant, v2_spec('s', true));
  add_efficientnet("efficientnetv2_rw_m", "EfficientNetV2-M, timm's own variant (timm names; 53.2M parameters)",
                   kTorchVariant, v2_spec('m', true));
  return true;
}();

}  // namespace
}  // namespace kg::model
