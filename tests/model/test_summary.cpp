// The model summary: FLOPs counted from the dispatched operators against hand-derived values and
// ResNet-18's published 1.82 GMACs, parameter and memory arithmetic, and a network left as it was.
#include <catch2/catch.hpp>

#include <map>

#include <torch/torch.h>

#include "config/resolve.h"
#include "config/validate.h"
#include "model/model.h"
#include "model/summary.h"
#include "model/text/text_network.h"
#include "support/model_families.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

kg::model::NetworkPtr build(const std::string& model_toml, kg::model::ModelContext ctx) {
  auto recipe = kg::config::Recipe::validate(kg::config::parse_toml_string(model_toml, "summary.toml"));
  return kg::model::build(recipe, ctx);
}

kg::model::ModelContext context(int64_t chans, int64_t outputs, int64_t size) {
  kg::model::ModelContext ctx;
  ctx.in_chans = chans;
  ctx.num_outputs = outputs;
  ctx.height = ctx.width = size;
  return ctx;
}

// MACs of a k x k convolution (stride 1, "same" padding) from cin to cout channels on an s x s map.
int64_t conv_macs(int64_t cin, int64_t cout, int64_t k, int64_t s) { return s * s * cout * cin * k * k; }

}  // namespace

TEST_CASE("count_macs counts convolutions and matrix products once each", "[unit][model]") {
  using kg::model::count_macs;
  torch::NoGradGuard no_grad;
  SECTION("grouped, strided, dilated convolution: every output position costs (cin/groups) k^2 MACs") {
    auto x = torch::zeros({2, 6, 17, 15});
    auto w = torch::zeros({4, 3, 3, 3});
    at::Tensor y;
    int64_t macs =
        count_macs([&] { y = torch::conv2d(x, w, {}, /*stride=*/2, /*padding=*/1, /*dilation=*/2, /*groups=*/2); });
    REQUIRE(y.sizes() == c10::IntArrayRef{2, 4, 8, 7});  // (17 + 2 - 4 - 1) / 2 + 1, (15 + 2 - 4 - 1) / 2 + 1
    CHECK(macs == y.numel() * 3 * 3 * 3);
    CHECK(macs == 2 * 4 * 8 * 7 * 27);
  }
  SECTION("transposed convolution: every input position costs cout/groups k^2 MACs") {
    auto x = torch::zeros({1, 4, 5, 5});
    auto w = torch::zeros({4, 2, 3, 3});
    CHECK(count_macs([&] { torch::conv_transpose2d(x, w, {}, 2); }) == 25 * 4 * 2 * 9);
  }
  SECTION("linear on a 3-D input counts its inner matmul once") {
    auto x = torch::zeros({2, 5, 7});
    auto w = torch::zeros({3, 7});
    auto b = torch::zeros({3});
    CHECK(count_macs([&] { torch::nn::functional::linear(x, w, b); }) == 2 * 5 * 7 * 3);
    CHECK(count_macs([&] { torch::nn::functional::linear(x.reshape({10, 7}), w, b); }) == 10 * 7 * 3);  // addmm inside
  }
  SECTION("addmm, mm, bmm, broadcasting matmul") {
    auto a = torch::zeros({4, 6}), b = torch::zeros({6, 2});
    CHECK(count_macs([&] { torch::addmm(torch::zeros({4, 2}), a, b); }) == 4 * 6 * 2);
    CHECK(count_macs([&] { torch::mm(a, b); }) == 4 * 6 * 2);
    CHECK(count_macs([&] { torch::bmm(torch::zeros({3, 4, 6}), torch::zeros({3, 6, 2})); }) == 3 * 4 * 6 * 2);
    CHECK(count_macs([&] { torch::matmul(torch::zeros({4, 1, 5, 6}), torch::zeros({3, 6, 2})); }) == 4 * 3 * 5 * 6 * 2);
    CHECK(count_macs([&] { torch::matmul(torch::zeros({5, 6}), torch::zeros({6})); }) == 5 * 6);
  }
  SECTION("element-wise work is not counted") {
    auto x = torch::ones({64, 64});
    CHECK(count_macs([&] { (x * 2 + 1).relu().sum(); }) == 0);
  }
}

TEST_CASE("summary of resnet9 width 4 at 28 px: FLOPs derived from its layer shapes", "[unit][model]") {
  auto net = build("[model]\nname = \"resnet9\"\nwidth = 4\n", context(1, 10, 28));
  auto s = kg::model::summarize(*net, 1, 28, 28, 16);
  // prep 1->4 @28, layer1 4->8 @28 then max-pool, res1 2x 8->8 @14, layer2 8->16 @14 then pool,
  // layer3 16->32 @7 then pool (7 -> 3), res3 2x 32->32 @3, global max pool, fc 32->10.
  const int64_t want = conv_macs(1, 4, 3, 28) + conv_macs(4, 8, 3, 28) + 2 * conv_macs(8, 8, 3, 14) +
                       conv_macs(8, 16, 3, 14) + conv_macs(16, 32, 3, 7) + 2 * conv_macs(32, 32, 3, 3) + 32 * 10;
  CHECK(want == 1097600);
  CHECK(s.macs == want);
  CHECK(s.gflops == Approx(2.0 * want / 1e9));
  CHECK(s.input_shape == std::vector<int64_t>{1, 28, 28});

  // Parameters: convs (no bias) + BatchNorm weight and bias + fc.
  const int64_t convs = 1 * 4 * 9 + 4 * 8 * 9 + 2 * 8 * 8 * 9 + 8 * 16 * 9 + 16 * 32 * 9 + 2 * 32 * 32 * 9;
  const int64_t bns = 2 * (4 + 8 + 2 * 8 + 16 + 32 + 2 * 32);
  CHECK(s.total_params == convs + bns + 32 * 10 + 10);
  CHECK(s.trainable_params == s.total_params);

  // Memory arithmetic: fp32 weights + buffers, gradients and AdamW's two moments of trainable ones.
  int64_t buffer_bytes = 0;
  for (auto& b : net->buffers()) buffer_bytes += b.numel() * static_cast<int64_t>(b.element_size());
  CHECK(s.weight_bytes == 4 * s.total_params + buffer_bytes);
  CHECK(s.grad_bytes == 4 * s.trainable_params);
  CHECK(s.optimizer_bytes == 8 * s.trainable_params);
  CHECK(s.activation_bytes > 0);
  CHECK(s.train_bytes() == s.weight_bytes + s.grad_bytes + s.optimizer_bytes + s.activation_bytes);
  // The first conv's output alone, kept for its BatchNorm's backward: 16 x 4 x 28 x 28 floats.
  CHECK(s.activation_bytes > 16 * 4 * 28 * 28 * 4);
  auto j = s.to_json();
  CHECK(j["macs_per_image"] == want);
  CHECK(j["training_memory"]["batch"] == 16);
  CHECK(j["parameters"]["total"] == s.total_params);
  CHECK(s.str().find("GFLOPs per image") != std::string::npos);

  SECTION("frozen parameters are not trainable and need neither gradients nor optimizer state") {
    int64_t frozen = 0;
    for (auto& p : net->named_parameters())
      if (p.key().rfind("prep.", 0) == 0) {
        p.value().requires_grad_(false);
        frozen += p.value().numel();
      }
    auto f = kg::model::summarize(*net, 1, 28, 28, 16);
    CHECK(f.total_params == s.total_params);
    CHECK(f.trainable_params == s.total_params - frozen);
    CHECK(f.grad_bytes == 4 * (s.total_params - frozen));
  }
  SECTION("activations are what autograd holds: less with checkpointing, almost none for a frozen net") {
    net->set_grad_checkpointing(true);
    auto c = kg::model::summarize(*net, 1, 28, 28, 16);
    CHECK(c.grad_checkpointing);
    CHECK(c.macs == s.macs);
    CHECK(c.activation_bytes < s.activation_bytes * 3 / 4);
    net->set_grad_checkpointing(false);
    for (auto& p : net->parameters()) p.requires_grad_(false);
    auto z = kg::model::summarize(*net, 1, 28, 28, 16);
    CHECK(z.trainable_params == 0);
    CHECK(z.activation_bytes < s.activation_bytes / 10);
    CHECK(z.activation_output_bytes == s.activation_output_bytes);  // the same operators ran
  }
}

TEST_CASE("summary of resnet18 at 224 px, 1000 classes: 11.69M parameters, 2 x 1.82 GMACs", "[unit][model]") {
  auto net = build("[model]\nname = \"resnet18\"\n", context(3, 1000, 224));
  auto s = kg::model::summarize(*net, 3, 224, 224, 32);
  CHECK(s.total_params == 11689512);  // torchvision's resnet18
  CHECK(s.gflops == Approx(2 * 1.82).epsilon(0.02));
  // The exact count: 1.814 GMACs of convolutions and the 512 x 1000 classifier.
  CHECK(s.macs > 1810000000);
  CHECK(s.macs < 1820000000);
  // What PyTorch 1.13 keeps for backward of the same network at batch 2 (Python, torchvision's resnet18
  // layout, torch.autograd.graph.saved_tensors_hooks, distinct storages + the logits): 43,201,856 bytes;
  // the summary measures at batch 2 and scales to 32.
  CHECK(s.activation_bytes == Approx(16.0 * 43201856).epsilon(0.01));
  CHECK(s.activation_output_bytes > s.activation_bytes / 2);
}

TEST_CASE("summary of a TorchScript backbone counts the operators its graph dispatches", "[unit][model]") {
  // tests/golden/tiny_traced.pt: a traced stem (conv 3->8, 3x3, pad 1; BatchNorm; ReLU) and conv2
  // (8->16, 3x3, stride 2, pad 1, bias), called as aten::_convolution from the graph; kgtrain's head
  // pools the 16 channels into a 16 -> 2 classifier.
  auto net = build("[model]\nname = \"torchscript\"\npath = \"" KGTRAIN_SOURCE_DIR
                   "/tests/golden/tiny_traced.pt\"\ntrust_torchscript = true\n",
                   context(3, 2, 12));
  auto s = kg::model::summarize(*net, 3, 12, 12, 4);
  CHECK(s.macs == conv_macs(3, 8, 3, 12) + conv_macs(8, 16, 3, 6) + 16 * 2);
  CHECK(s.total_params == 8 * 27 + 2 * 8 + 16 * 72 + 16 + 16 * 2 + 2);
  CHECK(s.activation_bytes > 0);
}

TEST_CASE("summarize leaves buffers, train/eval modes and the generator as they were", "[unit][model]") {
  auto net = build("[model]\nname = \"resnet9\"\nwidth = 4\ndrop_rate = 0.5\n", context(1, 10, 28));
  // A mix of modes: the network training, one BatchNorm frozen in eval mode.
  net->train();
  auto named = net->named_modules();
  named["prep.bn"]->eval();
  std::map<std::string, bool> modes;
  for (auto& m : named) modes[m.key()] = m.value()->is_training();
  std::map<std::string, at::Tensor> before;
  for (auto& b : net->named_buffers()) before[b.key()] = b.value().clone();

  torch::manual_seed(11);
  kg::model::summarize(*net, 1, 28, 28, 4);
  auto after_summary = torch::rand({4});
  torch::manual_seed(11);
  CHECK(torch::equal(after_summary, torch::rand({4})));

  for (auto& b : net->named_buffers()) {
    INFO(b.key());
    CHECK(torch::equal(b.value(), before.at(b.key())));
  }
  for (auto& m : net->named_modules()) {
    INFO(m.key());
    CHECK(m.value()->is_training() == modes.at(m.key()));
  }
  // The check above can fail: a training-mode forward pass does move the BatchNorm counters.
  net->forward(torch::zeros({2, 1, 28, 28}));
  CHECK_FALSE(
      torch::equal(net->named_buffers()["layer1.bn.num_batches_tracked"], before.at("layer1.bn.num_batches_tracked")));
}

TEST_CASE("every registered model family can be summarized", "[unit][model]") {
  for (const auto& name : kg::test::representative_models()) {
    const auto* info = kg::model::model_registry().find_info(name);
    if (!info || name == "torchscript") continue;  // needs a file; its summary goes through the same operators
    if (kg::model::is_text_model(name)) continue;  // a Hugging Face folder: tests/model/text/test_text_network.cpp
    INFO(name);
    auto recipe = kg::config::Recipe::validate(kg::config::parse_toml_string(info->example, name + ".toml"));
    auto net = kg::model::build(recipe, context(3, 5, 32));  // convnext's 4x4 stem needs 32 px
    auto s = kg::model::summarize(*net, 3, 32, 32, 2);
    CHECK(s.total_params == kg::model::count_parameters(*net));
    CHECK(s.macs > 0);
    CHECK(s.activation_bytes > 0);
  }
}

}  // namespace KG_UNITY_ID
}  // namespace
