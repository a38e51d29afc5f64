// Normalizer-Free networks (Brock et al. 2021), timm's eca_nfnet_l0..l3: no BatchNorm; every conv standardises its
// own weights (ScaledStdConv2d: per output channel, scaled by gain * gamma / sqrt(fan-in), gamma SiLU's 1.788), and
// each residual block scales its input by beta = 1 / expected std and its branch by alpha = 0.2. timm's layout and
// names: stem.conv1..conv4 (a 4-conv "deep quad" stem), stages.i.j.{downsample.conv, conv1, conv2, conv2b, conv3,
// attn_last.conv (ECA)}, final_conv, head.fc; each conv holds weight, bias and gain.
#include <cmath>

#include <torch/torch.h>

#include "model/layers.h"
#include "model/model.h"

// A namespace of its own: lib/ is compiled in unity batches (Block, Stage and Arch are common names).
namespace kg::model::nfnet {
namespace {

struct NfNetOptions {};  // the shared [model] keys cover what timm's eca_nfnet_* takes

constexpr double kSiluGamma = 1.7881293296813965;  // timm's _nonlin_gamma["silu"]
constexpr double kAlpha = 0.2, kAttnGain = 2.0, kStdConvEps = 1e-5;

// timm's ScaledStdConv2d: the weight standardised over each output channel's fan-in (biased variance, eps 1e-5),
// times gain * gamma / sqrt(fan-in); symmetric padding ((stride - 1) + (k - 1)) / 2; a bias.
struct ScaledStdConvImpl : torch::nn::Module {
  ScaledStdConvImpl(int64_t cin, int64_t cout, int64_t k, int64_t stride = 1, int64_t groups = 1, double gain_init = 1)
      : stride(stride), padding(((stride - 1) + (k - 1)) / 2), groups(groups) {
    weight = register_parameter("weight", torch::empty({cout, cin / groups, k, k}));
    bias = register_parameter("bias", torch::zeros({cout}));
    gain = register_parameter("gain", torch::full({cout, 1, 1, 1}, gain_init));
    scale = kSiluGamma / std::sqrt(static_cast<double>(cin / groups * k * k));
    torch::NoGradGuard no_grad;
    torch::nn::init::kaiming_normal_(weight, 0.0, torch::kFanIn, torch::kLinear);  // timm's NormFreeNet init
  }
  at::Tensor standardized_weight() const {
    return at::batch_norm(weight.reshape({1, weight.size(0), -1}), (gain * scale).view(-1), {}, {}, {},
                          /*training=*/true, 0.0, kStdConvEps, /*cudnn_enabled=*/false)
        .reshape_as(weight);
  }
  at::Tensor forward(const at::Tensor& x) {
    return torch::conv2d(x, standardized_weight().to(x.scalar_type()), bias.to(x.scalar_type()), {stride, stride},
                         {padding, padding}, {1, 1}, groups);
  }
  int64_t stride, padding, groups;
  double scale = 1;
  at::Tensor weight, bias, gain;
};
TORCH_MODULE(ScaledStdConv);

// timm's EcaModule: the channel means through a 1-D conv across channels (kernel from the channel count), a sigmoid
// gate.
struct EcaImpl : torch::nn::Module {
  explicit EcaImpl(int64_t channels) {
    const auto t = static_cast<int64_t>(std::abs(std::log2(static_cast<double>(channels)) + 1.0) / 2.0);
    const int64_t k = std::max<int64_t>(t % 2 ? t : t + 1, 3);
    conv =
        register_module("conv", torch::nn::Conv1d(torch::nn::Conv1dOptions(1, 1, k).padding((k - 1) / 2).bias(false)));
  }
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor y = conv->forward(x.mean({2, 3}).view({x.size(0), 1, -1}));
    return x * torch::sigmoid(y).view({x.size(0), -1, 1, 1});
  }
  torch::nn::Conv1d conv{nullptr};
};
TORCH_MODULE(Eca);

// timm's DownsampleAvg: 2x2 average pool (ceil mode, padding not counted) when strided, then a 1x1 conv.
struct DownsampleImpl : torch::nn::Module {
  DownsampleImpl(int64_t cin, int64_t cout, int64_t stride) : stride(stride) {
    conv = register_module("conv", ScaledStdConv(cin, cout, 1));
  }
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor y = stride > 1 ? torch::avg_pool2d(x, {2, 2}, {stride, stride}, {0, 0}, /*ceil_mode=*/true,
                                                  /*count_include_pad=*/false)
                              : x;
    return conv->forward(y);
  }
  int64_t stride;
  ScaledStdConv conv{nullptr};
};
TORCH_MODULE(Downsample);

// timm's NormFreeBlock (reg = False, extra_conv = True): out = act(x) * beta; shortcut = x or downsample(out);
// conv1 (1x1) -> act -> conv2 (3x3 grouped, stride) -> act -> conv2b (3x3 grouped) -> act -> conv3 (1x1, gain 0) ->
// 2 * ECA; x = branch * alpha + shortcut.
struct BlockImpl : torch::nn::Module {
  BlockImpl(int64_t cin, int64_t cout, int64_t stride, double beta, int64_t group_size, double bottle_ratio, double dp)
      : beta(beta), drop_path_rate(dp) {
    int64_t mid = make_divisible(static_cast<double>(cout) * bottle_ratio);
    const int64_t groups = mid / group_size;
    mid = group_size * groups;
    if (cin != cout || stride != 1) downsample = register_module("downsample", Downsample(cin, cout, stride));
    conv1 = register_module("conv1", ScaledStdConv(cin, mid, 1));
    conv2 = register_module("conv2", ScaledStdConv(mid, mid, 3, stride, groups));
    conv2b = register_module("conv2b", ScaledStdConv(mid, mid, 3, 1, groups));
    conv3 = register_module("conv3", ScaledStdConv(mid, cout, 1, 1, 1, /*gain_init=*/0.0));
    attn_last = register_module("attn_last", Eca(cout));
  }
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor out = torch::silu(x) * beta;
    at::Tensor shortcut = downsample ? downsample->forward(out) : x;
    out = conv1->forward(out);
    out = conv2->forward(torch::silu(out));
    out = conv2b->forward(torch::silu(out));
    out = conv3->forward(torch::silu(out));
    out = attn_last->forward(out) * kAttnGain;
    return drop_path(out, drop_path_rate, is_training()) * kAlpha + shortcut;
  }
  double beta, drop_path_rate;
  Downsample downsample{nullptr};
  ScaledStdConv conv1{nullptr}, conv2{nullptr}, conv2b{nullptr}, conv3{nullptr};
  Eca attn_last{nullptr};
};
TORCH_MODULE(Block);

struct Arch {
  std::array<int64_t, 4> depths;
  double feat_mult;
};

class NfNet final : public Network {
 public:
  NfNet(const Arch& a, const ModelContext& ctx) {
    const std::array<int64_t, 4> channels{256, 512, 1536, 1536};
    constexpr int64_t kStem = 128, kGroupSize = 64;
    constexpr double kBottle = 0.25;
    // timm's deep_quad stem: 3x3 convs to 16 (stride 2), 32, 64, then 128 (stride 2), SiLU between.
    stem_ = register_module("stem", torch::nn::Sequential());
    const std::array<int64_t, 4> stem_chs{kStem / 8, kStem / 4, kStem / 2, kStem}, strides{2, 1, 1, 2};
    int64_t cin = ctx.in_chans;
    for (size_t i = 0; i < 4; ++i) {
      stem_convs_[i] = ScaledStdConv(cin, stem_chs[i], 3, strides[i]);
      stem_->register_module("conv" + std::to_string(i + 1), stem_convs_[i]);
      cin = stem_chs[i];
    }
    auto stages = register_module("stages", torch::nn::ModuleList());
    const int64_t total = a.depths[0] + a.depths[1] + a.depths[2] + a.depths[3];
    double expected_var = 1.0;
    int64_t index = 0;
    for (size_t s = 0; s < 4; ++s) {
      torch::nn::Sequential stage;
      for (int64_t j = 0; j < a.depths[s]; ++j) {
        const int64_t stride = j == 0 && s > 0 ? 2 : 1;  // the stem already strides 4: stage 0 keeps its size
        stage->push_back(Block(cin, channels[s], stride, 1.0 / std::sqrt(expected_var), kGroupSize, kBottle,
                               block_drop_path(ctx.model.drop_path_rate, index++, total)));
        if (j == 0) expected_var = 1.0;  // reset after each stage's first block
        expected_var += kAlpha * kAlpha;
        cin = channels[s];
      }
      stages->push_back(stage);
      stages_.push_back(stage);
    }
    final_conv_ = register_module(
        "final_conv", ScaledStdConv(cin, make_divisible(static_cast<double>(channels[3]) * a.feat_mult), 1));
    head_ = register_module("head", std::make_shared<torch::nn::Module>());
    add_group("stem", {"stem"});
    for (int s = 0; s < 4; ++s) add_group("stages." + std::to_string(s), {"stages." + std::to_string(s)});
    add_group("final_conv", {"final_conv"});
    set_first_conv("stem.conv1.weight");
    finish(ctx, *head_, "head.fc");
    torch::NoGradGuard no_grad;  // timm: the classifier N(0, 0.01), zero bias
    for (auto& p : head_->named_parameters())
      if (p.key() == "fc.weight")
        p.value().normal_(0.0, 0.01);
      else if (p.key() == "fc.bias")
        p.value().zero_();
  }

  at::Tensor forward_features(const at::Tensor& input) override {
    at::Tensor x = input;
    for (size_t i = 0; i < 4; ++i) {
      x = stem_convs_[i]->forward(x);
      if (i < 3) x = torch::silu(x);
    }
    for (auto& s : stages_) x = run_stage(s, x);
    return torch::silu(final_conv_->forward(x));
  }

 private:
  torch::nn::Sequential stem_{nullptr};
  std::array<ScaledStdConv, 4> stem_convs_{nullptr, nullptr, nullptr, nullptr};
  std::vector<torch::nn::Sequential> stages_;
  ScaledStdConv final_conv_{nullptr};
  std::shared_ptr<torch::nn::Module> head_;
};

void add_nfnet(const std::string& name, const std::string& doc, const Arch& a) {
  model_registry().add(
      name, doc, "[model]\nname = \"" + name + "\"", config::Fields<NfNetOptions>(),
      [a](const NfNetOptions&, const ModelContext& ctx) -> NetworkPtr { return std::make_shared<NfNet>(a, ctx); });
}

const bool kNfnetRegistered = [] {
  add_nfnet("eca_nfnet_l0", "ECA-NFNet-L0, normalizer-free (timm names; 24.1M parameters at 1000 classes)",
            {{1, 2, 6, 3}, 1.5});
  add_nfnet("eca_nfnet_l1", "ECA-NFNet-L1, normalizer-free (timm names; 41.4M parameters at 1000 classes)",
            {{2, 4, 12, 6}, 2.0});
  add_nfnet("eca_nfnet_l2", "ECA-NFNet-L2, normalizer-free (timm names; 56.7M parameters at 1000 classes)",
            {{3, 6, 18, 9}, 2.0});
  return true;
}();

}  // namespace
}  // namespace kg::model::nfnet
