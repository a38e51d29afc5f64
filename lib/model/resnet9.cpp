// ResNet-9 from David Page's DAWNBench CIFAR-10 entry ("How to train your ResNet", 2018):
// conv_bn(c_in, w) -> conv_bn(w, 2w) + pool -> res(2w) -> conv_bn(2w, 4w) + pool
// -> conv_bn(4w, 8w) + pool -> res(8w) -> global max pool -> linear.
// The same network as ../shared/bench/peer_fmnist.py, so kgtrain and Python runs compare directly.
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/pooling.h>
#include <torch/nn/modules/container/functional.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/torch.h>

#include "model/batchnorm.h"
#include "model/model.h"

namespace kg::model {
namespace {

// Keys of [model] when name = "resnet9"; each field's doc is in resnet9_fields() below and docs/reference.md.
struct Resnet9Options {
  int64_t width = 64;
};

// 3x3 conv (pad 1, no bias) + BatchNorm + ReLU.
struct ConvBnImpl : torch::nn::Module {
  ConvBnImpl(int64_t cin, int64_t cout)
      : conv(register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(cin, cout, 3).padding(1).bias(false)))),
        bn(register_module("bn", BatchNorm2d(cout))) {}
  torch::Tensor forward(const torch::Tensor& x) { return bn->forward_act(conv->forward(x), {}, true); }
  torch::nn::Conv2d conv;
  BatchNorm2d bn;
};
TORCH_MODULE(ConvBn);

// x + conv_bn(conv_bn(x)).
struct ResidualImpl : torch::nn::Module {
  explicit ResidualImpl(int64_t c) : a(register_module("a", ConvBn(c, c))), b(register_module("b", ConvBn(c, c))) {}
  torch::Tensor forward(const torch::Tensor& x) { return x + b->forward(a->forward(x)); }
  ConvBn a, b;
};
TORCH_MODULE(Residual);

class Resnet9 final : public Network {
 public:
  Resnet9(const Resnet9Options& o, const ModelContext& ctx)
      : prep(register_module("prep", ConvBn(ctx.in_chans, o.width))),
        layer1(register_module("layer1", ConvBn(o.width, 2 * o.width))),
        res1(register_module("res1", Residual(2 * o.width))),
        layer2(register_module("layer2", ConvBn(2 * o.width, 4 * o.width))),
        layer3(register_module("layer3", ConvBn(4 * o.width, 8 * o.width))),
        res3(register_module("res3", Residual(8 * o.width))) {
    add_group("stem", {"prep"});
    add_group("layer1", {"layer1", "res1"});
    add_group("layer2", {"layer2"});
    add_group("layer3", {"layer3", "res3"});
    set_first_conv("prep.conv.weight");
    finish(ctx, *this, "fc", "max");  // the peer's global max pool
  }

  at::Tensor forward_features(const at::Tensor& input) override {
    namespace F = torch::nn::functional;
    auto x = prep->forward(input);
    x = run_stage(stage1_, x);
    x = F::max_pool2d(layer2->forward(x), F::MaxPool2dFuncOptions(2));
    x = run_stage(stage3_, x);
    return x;
  }

 private:
  ConvBn prep, layer1;
  Residual res1;
  ConvBn layer2, layer3;
  Residual res3;
  // The stages as callables for checkpointing; they hold the registered modules, not copies.
  torch::nn::Sequential stage1_{layer1, torch::nn::Functional(pool2), res1};
  torch::nn::Sequential stage3_{layer3, torch::nn::Functional(pool2), res3};
  static at::Tensor pool2(const at::Tensor& t) { return torch::max_pool2d(t, {2, 2}); }
};

config::Fields<Resnet9Options> resnet9_fields() {
  config::Fields<Resnet9Options> f;
  f.field("width", &Resnet9Options::width, "channels of the first block (later blocks 2x, 4x, 8x)").min(1);
  return f;
}

KG_REGISTER(model_registry(), "resnet9", "Page's DAWNBench ResNet-9 for small images (28-64 px)",
            "[model]\nname = \"resnet9\"\nwidth = 16", resnet9_fields(),
            [](const Resnet9Options& o, const ModelContext& ctx) -> NetworkPtr {
              return std::make_shared<Resnet9>(o, ctx);
            });

}  // namespace
}  // namespace kg::model
