// ConvNeXt (Liu et al. 2022, "A ConvNet for the 2020s"), timm's layout and parameter names:
// stem.0/1, stages.i.downsample.0/1, stages.i.blocks.j.{conv_dw, norm, mlp.fc1, mlp.fc2, gamma},
// head.norm, head.fc. The block is timm's conv_mlp=False path (depthwise 7x7, then LayerNorm and the
// MLP on NHWC), with layer scale and stochastic depth; the head normalises the pooled features.
#include <torch/torch.h>

#include "core/error.h"
#include "model/layers.h"
#include "model/model.h"

namespace kg::model {
namespace {

struct ConvNeXtOptions {};

constexpr double kNormEps = 1e-6;
constexpr double kLayerScaleInit = 1e-6;

// LayerNorm over the channels of an NCHW map (timm LayerNorm2d): permuted to NHWC, which is
// contiguous when the input is channels_last.
struct LayerNorm2dImpl : torch::nn::Module {
  explicit LayerNorm2dImpl(int64_t c)
      : weight(register_parameter("weight", torch::ones({c}))), bias(register_parameter("bias", torch::zeros({c}))) {}
  at::Tensor forward(const at::Tensor& x) {
    return torch::layer_norm(norm_input(x, weight).permute({0, 2, 3, 1}), {weight.size(0)}, weight, bias, kNormEps)
        .permute({0, 3, 1, 2});
  }
  at::Tensor weight, bias;
};
TORCH_MODULE(LayerNorm2d);

// x + drop_path(gamma * mlp(norm(conv_dw(x)))), the norm and MLP on NHWC.
struct BlockImpl : torch::nn::Module {
  BlockImpl(int64_t c, double dp) : drop_path_rate(dp) {
    conv_dw = register_module("conv_dw", torch::nn::Conv2d(torch::nn::Conv2dOptions(c, c, 7).padding(3).groups(c)));
    norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c}).eps(kNormEps)));
    mlp = register_module("mlp", Mlp(c, 4 * c));
    gamma = register_parameter("gamma", torch::full({c}, kLayerScaleInit));
  }
  at::Tensor forward(const at::Tensor& x) {
    auto y = conv_dw->forward(x).permute({0, 2, 3, 1});
    y = (mlp->forward(norm->forward(norm_input(y, norm->weight))) * gamma).permute({0, 3, 1, 2});
    return drop_path(y, drop_path_rate, is_training()) + x;
  }
  double drop_path_rate;
  torch::nn::Conv2d conv_dw{nullptr};
  torch::nn::LayerNorm norm{nullptr};
  Mlp mlp{nullptr};
  at::Tensor gamma;
};
TORCH_MODULE(Block);

// Optional downsample (LayerNorm2d + 2x2 stride-2 conv), then the blocks.
struct StageImpl : torch::nn::Module {
  StageImpl(int64_t cin, int64_t cout, int64_t depth, const std::vector<double>& dp) {
    if (cin != cout)
      downsample = register_module(
          "downsample",
          torch::nn::Sequential(LayerNorm2d(cin), torch::nn::Conv2d(torch::nn::Conv2dOptions(cin, cout, 2).stride(2))));
    blocks = register_module("blocks", torch::nn::Sequential());
    for (int64_t j = 0; j < depth; ++j) blocks->push_back(Block(cout, dp[static_cast<size_t>(j)]));
  }
  at::Tensor forward(const at::Tensor& x) { return blocks->forward(downsample ? downsample->forward(x) : x); }
  torch::nn::Sequential downsample{nullptr}, blocks{nullptr};
};
TORCH_MODULE(Stage);

class ConvNeXt final : public Network {
 public:
  ConvNeXt(const std::string& name, std::array<int64_t, 4> depths, std::array<int64_t, 4> dims,
           const ModelContext& ctx) {
    namespace nn = torch::nn;
    // The 4x4 patch stem and three 2x downsamples need 32 px; fewer leave stage 3 an empty map.
    KG_CHECK(ctx.height >= 32 && ctx.width >= 32, ConfigError, "model ", name,
             " needs images of at least 32x32 pixels (a 4x4 patch stem, ", "then three 2x downsamples), got ",
             ctx.height, "x", ctx.width, "; set data.image_size or pick resnet9 for small images");
    stem_ = register_module("stem", nn::Sequential(nn::Conv2d(nn::Conv2dOptions(ctx.in_chans, dims[0], 4).stride(4)),
                                                   LayerNorm2d(dims[0])));
    auto stages = register_module("stages", nn::ModuleList());
    const int64_t total = depths[0] + depths[1] + depths[2] + depths[3];
    int64_t cin = dims[0], index = 0;
    for (size_t s = 0; s < 4; ++s) {
      std::vector<double> dp;
      for (int64_t j = 0; j < depths[s]; ++j) dp.push_back(block_drop_path(ctx.model.drop_path_rate, index++, total));
      stages_[s] = Stage(cin, dims[s], depths[s], dp);
      stages->push_back(stages_[s]);
      cin = dims[s];
    }
    // timm's _init_weights: convs and linears trunc_normal(.02), zero biases; norms ones/zeros, gamma 1e-6.
    init_linear_conv(*this);
    head_ = register_module("head", std::make_shared<nn::Module>());
    add_group("stem", {"stem"});
    for (int s = 0; s < 4; ++s) add_group("stages." + std::to_string(s), {"stages." + std::to_string(s)});
    set_first_conv("stem.0.weight");
    finish(ctx, *head_, "head.fc");
    init_linear_conv(*head_);  // head.fc as timm initialises it
  }

  at::Tensor forward_features(const at::Tensor& input) override {
    auto x = stem_->forward(input);
    for (auto& s : stages_) x = run_stage(s, x);
    return x;
  }

 protected:
  // timm's NormMlpClassifierHead: pool, then head.norm over the pooled features, then head.fc.
  void build_pre_logits(int64_t width) override {
    norm_ = head_->register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({width}).eps(kNormEps)));
  }
  at::Tensor pre_logits(const at::Tensor& pooled) override { return norm_->forward(norm_input(pooled, norm_->weight)); }

 private:
  static void init_linear_conv(torch::nn::Module& m) {
    torch::NoGradGuard no_grad;
    for (auto& mod : m.modules(/*include_self=*/false)) {  // self is no conv; in a constructor it has no shared_ptr yet
      at::Tensor w, b;
      if (auto* c = mod->as<torch::nn::Conv2d>())
        w = c->weight, b = c->bias;
      else if (auto* l = mod->as<torch::nn::Linear>())
        w = l->weight, b = l->bias;
      else
        continue;
      trunc_normal_(w, 0.02);
      if (b.defined()) b.zero_();
    }
  }

  torch::nn::Sequential stem_{nullptr};
  std::array<Stage, 4> stages_{nullptr, nullptr, nullptr, nullptr};
  std::shared_ptr<torch::nn::Module> head_;  // holds head.norm and head.fc, as timm's NormMlpClassifierHead
  torch::nn::LayerNorm norm_{nullptr};
};

void add_convnext(const char* name, const char* doc, std::array<int64_t, 4> depths,
                  std::array<int64_t, 4> dims = {96, 192, 384, 768}) {
  model_registry().add(name, doc, std::string("[model]\nname = \"") + name + "\"", config::Fields<ConvNeXtOptions>(),
                       [name, depths, dims](const ConvNeXtOptions&, const ModelContext& ctx) -> NetworkPtr {
                         return std::make_shared<ConvNeXt>(name, depths, dims, ctx);
                       });
}

const bool kConvnextRegistered = [] {
  add_convnext("convnext_tiny",
               "ConvNeXt-T (timm names; 28.6M parameters at 1000 classes; 4x4 patch stem, needs >= 32 px)",
               {3, 3, 9, 3});
  add_convnext("convnext_small",
               "ConvNeXt-S (timm names; 50.2M parameters at 1000 classes; 4x4 patch stem, needs >= 32 px)",
               {3, 3, 27, 3});
  add_convnext("convnext_base",
               "ConvNeXt-B (timm names; 88.6M parameters at 1000 classes; 4x4 patch stem, needs >= 32 px)",
               {3, 3, 27, 3}, {128, 256, 512, 1024});
  add_convnext("convnext_large",
               "ConvNeXt-L (timm names; 197.8M parameters at 1000 classes; 4x4 patch stem, needs >= 32 px)",
               {3, 3, 27, 3}, {192, 384, 768, 1536});
  return true;
}();

}  // namespace
}  // namespace kg::model
