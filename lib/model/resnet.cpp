// ResNet-18/34/50/101/152 (He et al. 2015, v1.5: stride on the 3x3 conv), ResNeXt (Xie et al. 2017: grouped 3x3
// convs), Wide ResNet (Zagoruyko & Komodakis 2016: bottlenecks twice as wide) and SE-ResNeXt (Hu et al. 2018:
// squeeze-excitation after the last BatchNorm of each block), torchvision's
// and timm's layout and parameter names: conv1, bn1, layer1.0.conv1, ..., layer4.1.downsample.0, layer1.0.se.fc1,
// fc. timm's drop_path on the residual branch and zero-initialised last BatchNorm of each block (zero_init_last).
#include <torch/torch.h>

#include "model/batchnorm.h"
#include "model/layers.h"
#include "model/model.h"

namespace kg::model {
namespace {

// Keys of [model] for the resnet family; each field's doc is in resnet_fields() below and docs/reference.md.
struct ResNetOptions {
  bool small_input = false;
};

torch::nn::Conv2d conv(int64_t cin, int64_t cout, int64_t k, int64_t stride) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(cin, cout, k).stride(stride).padding(k / 2).bias(false));
}

// torchvision's downsample: 1x1 conv (stride) + BN, when the shortcut changes shape.
torch::nn::Sequential downsample(int64_t cin, int64_t cout, int64_t stride) {
  if (stride == 1 && cin == cout) return nullptr;
  return torch::nn::Sequential(conv(cin, cout, 1, stride), BatchNorm2d(cout));
}

// The bottleneck's shape: ResNet's is 1 group of base width 64; ResNeXt 32x4d's is 32 groups of 4 (width
// floor(planes * 4 / 64) * 32, timm's and torchvision's rule); SE-ResNeXt adds timm's SEModule.
struct BottleneckShape {
  int64_t groups = 1, base_width = 64;
  bool se = false;
};

struct BasicBlockImpl : torch::nn::Module {
  static constexpr int64_t kExpansion = 1;
  BasicBlockImpl(int64_t cin, int64_t planes, int64_t stride, double dp, const BottleneckShape& /*unused*/)
      : drop_path_rate(dp) {
    conv1 = register_module("conv1", conv(cin, planes, 3, stride));
    bn1 = register_module("bn1", BatchNorm2d(planes));
    conv2 = register_module("conv2", conv(planes, planes, 3, 1));
    bn2 = register_module("bn2", BatchNorm2d(planes));
    if (auto d = downsample(cin, planes, stride)) ds = register_module("downsample", d);
  }
  at::Tensor forward(const at::Tensor& x) {
    auto y = bn1->forward_act(conv1->forward(x), {}, true);
    const at::Tensor shortcut = ds ? ds->forward(x) : x;
    if (drop_path_rate > 0 && is_training())
      return (drop_path(bn2->forward(conv2->forward(y)), drop_path_rate, true) + shortcut).relu_();
    return bn2->forward_act(conv2->forward(y), shortcut, true);
  }
  void zero_init_last() {
    torch::NoGradGuard g;
    bn2->weight.zero_();
  }
  double drop_path_rate;
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  BatchNorm2d bn1{nullptr}, bn2{nullptr};
  torch::nn::Sequential ds{nullptr};
};
TORCH_MODULE(BasicBlock);

// timm's SEModule (attn_layer='se'): mean over H, W -> fc1 (1x1 conv, channels / 16 rounded to a multiple of 8)
// -> ReLU -> fc2 -> sigmoid gate.
struct SEModuleImpl : torch::nn::Module {
  explicit SEModuleImpl(int64_t channels) {
    const int64_t rd = std::max<int64_t>(8, (channels / 16 + 4) / 8 * 8);  // make_divisible(c / 16, 8, round_limit 0)
    fc1 = register_module("fc1", torch::nn::Conv2d(torch::nn::Conv2dOptions(channels, rd, 1)));
    fc2 = register_module("fc2", torch::nn::Conv2d(torch::nn::Conv2dOptions(rd, channels, 1)));
  }
  at::Tensor forward(const at::Tensor& x) {
    return x * torch::sigmoid(fc2->forward(fc1->forward(x.mean({2, 3}, /*keepdim=*/true)).relu_()));
  }
  torch::nn::Conv2d fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(SEModule);

struct BottleneckImpl : torch::nn::Module {
  static constexpr int64_t kExpansion = 4;
  BottleneckImpl(int64_t cin, int64_t planes, int64_t stride, double dp, const BottleneckShape& shape)
      : drop_path_rate(dp) {
    const int64_t width = planes * shape.base_width / 64 * shape.groups;
    conv1 = register_module("conv1", conv(cin, width, 1, 1));
    bn1 = register_module("bn1", BatchNorm2d(width));
    conv2 = register_module(
        "conv2",
        torch::nn::Conv2d(
            torch::nn::Conv2dOptions(width, width, 3).stride(stride).padding(1).groups(shape.groups).bias(false)));
    bn2 = register_module("bn2", BatchNorm2d(width));
    conv3 = register_module("conv3", conv(width, planes * kExpansion, 1, 1));
    bn3 = register_module("bn3", BatchNorm2d(planes * kExpansion));
    if (shape.se) se = register_module("se", SEModule(planes * kExpansion));
    if (auto d = downsample(cin, planes * kExpansion, stride)) ds = register_module("downsample", d);
  }
  at::Tensor forward(const at::Tensor& x) {
    auto y = bn1->forward_act(conv1->forward(x), {}, true);
    y = bn2->forward_act(conv2->forward(y), {}, true);
    const at::Tensor shortcut = ds ? ds->forward(x) : x;
    if (!se && !(drop_path_rate > 0 && is_training())) return bn3->forward_act(conv3->forward(y), shortcut, true);
    y = bn3->forward(conv3->forward(y));
    if (se) y = se->forward(y);
    y = drop_path(y, drop_path_rate, is_training());
    return (y + shortcut).relu_();
  }
  void zero_init_last() {
    torch::NoGradGuard g;
    bn3->weight.zero_();
  }
  double drop_path_rate;
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr}, conv3{nullptr};
  BatchNorm2d bn1{nullptr}, bn2{nullptr}, bn3{nullptr};
  SEModule se{nullptr};
  torch::nn::Sequential ds{nullptr};
};
TORCH_MODULE(Bottleneck);

template <class Block>
class ResNet final : public Network {
 public:
  ResNet(std::array<int64_t, 4> depths, const BottleneckShape& shape, const ResNetOptions& o, const ModelContext& ctx)
      : small_input_(o.small_input) {
    conv1 = register_module("conv1", small_input_ ? conv(ctx.in_chans, 64, 3, 1) : conv(ctx.in_chans, 64, 7, 2));
    bn1 = register_module("bn1", BatchNorm2d(64));
    const int64_t total = depths[0] + depths[1] + depths[2] + depths[3];
    int64_t cin = 64, index = 0;
    std::vector<typename Block::Impl*> blocks;
    for (int s = 0; s < 4; ++s) {
      const int64_t planes = 64 << s;
      torch::nn::Sequential stage;
      for (int64_t b = 0; b < depths[static_cast<size_t>(s)]; ++b) {
        Block block(cin, planes, (s > 0 && b == 0) ? 2 : 1, block_drop_path(ctx.model.drop_path_rate, index++, total),
                    shape);
        blocks.push_back(block.get());
        stage->push_back(block);
        cin = planes * Block::Impl::kExpansion;
      }
      layers[static_cast<size_t>(s)] = register_module("layer" + std::to_string(s + 1), stage);
    }
    init_cnn(*this);
    for (auto* b : blocks) b->zero_init_last();
    add_group("stem", {"conv1", "bn1"});
    for (int s = 1; s <= 4; ++s) add_group("layer" + std::to_string(s), {"layer" + std::to_string(s)});
    set_first_conv("conv1.weight");
    finish(ctx, *this, "fc");
  }

  at::Tensor forward_features(const at::Tensor& input) override {
    auto x = bn1->forward_act(conv1->forward(input), {}, true);
    if (!small_input_) x = torch::max_pool2d(x, {3, 3}, {2, 2}, {1, 1});
    for (auto& l : layers) x = run_stage(l, x);
    return x;
  }

 private:
  bool small_input_;
  torch::nn::Conv2d conv1{nullptr};
  BatchNorm2d bn1{nullptr};
  std::array<torch::nn::Sequential, 4> layers{nullptr, nullptr, nullptr, nullptr};
};

config::Fields<ResNetOptions> resnet_fields() {
  config::Fields<ResNetOptions> f;
  f.field("small_input", &ResNetOptions::small_input,
          "3x3 stride-1 stem without max-pool for 28-64 px images, instead of torchvision's 7x7/2 stem + pool (its "
          "conv1 no longer fits ImageNet weights)");
  return f;
}

template <class Block>
void add_resnet(const char* name, const char* doc, std::array<int64_t, 4> depths, BottleneckShape shape = {}) {
  model_registry().add(name, doc, std::string("[model]\nname = \"") + name + "\"\nsmall_input = true", resnet_fields(),
                       [depths, shape](const ResNetOptions& o, const ModelContext& ctx) -> NetworkPtr {
                         return std::make_shared<ResNet<Block>>(depths, shape, o, ctx);
                       });
}

const bool kResnetRegistered = [] {
  add_resnet<BasicBlock>("resnet18", "ResNet-18 (torchvision/timm names; 11.7M parameters at 1000 classes)",
                         {2, 2, 2, 2});
  add_resnet<BasicBlock>("resnet34", "ResNet-34 (torchvision/timm names; 21.8M parameters at 1000 classes)",
                         {3, 4, 6, 3});
  add_resnet<Bottleneck>("resnet50", "ResNet-50 v1.5 (torchvision/timm names; 25.6M parameters at 1000 classes)",
                         {3, 4, 6, 3});
  add_resnet<Bottleneck>("resnet101", "ResNet-101 v1.5 (torchvision/timm names; 44.5M parameters at 1000 classes)",
                         {3, 4, 23, 3});
  add_resnet<Bottleneck>("resnet152", "ResNet-152 v1.5 (torchvision/timm names; 60.2M parameters at 1000 classes)",
                         {3, 8, 36, 3});
  add_resnet<Bottleneck>("resnext50_32x4d",
                         "ResNeXt-50 32x4d (torchvision/timm names; 25.0M parameters at 1000 classes)", {3, 4, 6, 3},
                         {32, 4, false});
  add_resnet<Bottleneck>("resnext101_32x8d",
                         "ResNeXt-101 32x8d (torchvision/timm names; 88.8M parameters at 1000 classes)", {3, 4, 23, 3},
                         {32, 8, false});
  add_resnet<Bottleneck>("resnext101_64x4d",
                         "ResNeXt-101 64x4d (torchvision/timm names; 83.5M parameters at 1000 classes)", {3, 4, 23, 3},
                         {64, 4, false});
  add_resnet<Bottleneck>("wide_resnet50_2",
                         "Wide ResNet-50-2: bottlenecks twice as wide (torchvision/timm names; 68.9M parameters)",
                         {3, 4, 6, 3}, {1, 128, false});
  add_resnet<Bottleneck>("wide_resnet101_2",
                         "Wide ResNet-101-2: bottlenecks twice as wide (torchvision/timm names; 126.9M parameters)",
                         {3, 4, 23, 3}, {1, 128, false});
  add_resnet<Bottleneck>("seresnext50_32x4d", "SE-ResNeXt-50 32x4d (timm names; 27.6M parameters at 1000 classes)",
                         {3, 4, 6, 3}, {32, 4, true});
  add_resnet<Bottleneck>("seresnext101_32x8d", "SE-ResNeXt-101 32x8d (timm names; 93.6M parameters at 1000 classes)",
                         {3, 4, 23, 3}, {32, 8, true});
  return true;
}();

}  // namespace
}  // namespace kg::model
