// ResNet-9 from David Page's DAWNBench CIFAR-10 entry ("How to train your ResNet", 2018):
// conv_bn(c_in, w) -> conv_bn(w, 2w) + pool -> res(2w) -> conv_bn(2w, 4w) + pool
// -> conv_bn(4w, 8w) + pool -> res(8w) -> global max pool -> linear.
// The same network as ../shared/bench/peer_fmnist.py, so kgtrain and Python runs compare directly.
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/pooling.h>

#include "model/model.h"

namespace kg::model {
namespace {

struct Resnet9Options {
  int64_t width = 64;  ///< channels of the first block; later blocks use 2w, 4w, 8w
};

// 3x3 conv (pad 1, no bias) + BatchNorm + ReLU.
struct ConvBnImpl : torch::nn::Module {
  ConvBnImpl(int64_t cin, int64_t cout)
      : conv(register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(cin, cout, 3).padding(1).bias(false)))),
        bn(register_module("bn", torch::nn::BatchNorm2d(cout))) {}
  torch::Tensor forward(const torch::Tensor& x) { return bn->forward(conv->forward(x)).relu_(); }
  torch::nn::Conv2d conv;
  torch::nn::BatchNorm2d bn;
};
TORCH_MODULE(ConvBn);

// x + conv_bn(conv_bn(x)).
struct ResidualImpl : torch::nn::Module {
  explicit ResidualImpl(int64_t c) : a(register_module("a", ConvBn(c, c))), b(register_module("b", ConvBn(c, c))) {}
  torch::Tensor forward(const torch::Tensor& x) { return x + b->forward(a->forward(x)); }
  ConvBn a, b;
};
TORCH_MODULE(Residual);

class Resnet9 : public Network {
 public:
  Resnet9(int64_t in_chans, int64_t w, int64_t num_outputs)
      : prep(register_module("prep", ConvBn(in_chans, w))),
        layer1(register_module("layer1", ConvBn(w, 2 * w))),
        res1(register_module("res1", Residual(2 * w))),
        layer2(register_module("layer2", ConvBn(2 * w, 4 * w))),
        layer3(register_module("layer3", ConvBn(4 * w, 8 * w))),
        res3(register_module("res3", Residual(8 * w))),
        fc(register_module("fc", torch::nn::Linear(8 * w, num_outputs))) {}

  torch::Tensor forward(const torch::Tensor& input) override {
    namespace F = torch::nn::functional;
    auto x = prep->forward(input);
    x = F::max_pool2d(layer1->forward(x), F::MaxPool2dFuncOptions(2));
    x = res1->forward(x);
    x = F::max_pool2d(layer2->forward(x), F::MaxPool2dFuncOptions(2));
    x = F::max_pool2d(layer3->forward(x), F::MaxPool2dFuncOptions(2));
    x = res3->forward(x);
    x = std::get<0>(x.flatten(2).max(2));  // global max pool
    return fc->forward(x);
  }

 private:
  ConvBn prep, layer1;
  Residual res1;
  ConvBn layer2, layer3;
  Residual res3;
  torch::nn::Linear fc;
};

config::Fields<Resnet9Options> fields() {
  config::Fields<Resnet9Options> f;
  f.field("width", &Resnet9Options::width, "channels of the first block (later blocks 2x, 4x, 8x)").min(1);
  return f;
}

KG_REGISTER(model_registry(), "resnet9", "Page's DAWNBench ResNet-9 for small images (28-64 px)",
            "[model]\nname = \"resnet9\"\nwidth = 16", fields(),
            [](const Resnet9Options& o, const ModelContext& ctx) -> NetworkPtr {
              return std::make_shared<Resnet9>(ctx.in_chans, o.width, ctx.num_outputs);
            });

}  // namespace
}  // namespace kg::model
