// The fused BatchNorm + add + ReLU node (lib/model/bn_act.cpp, model.fused_bn) against the eager ops it replaces:
// outputs, the gradients of x, z, weight and bias, and the running statistics, NCHW and channels_last, with and
// without the add and the ReLU; what it leaves to the eager path; and whole ResNets trained a step each way.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include <torch/torch.h>

#include "config/resolve.h"
#include "config/validate.h"
#include "model/batchnorm.h"
#include "model/bn_act.h"
#include "model/model.h"
#include "support/autograd_graph.h"
#include "support/gpu.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

// How many fused nodes the autograd graph of t holds.
int fused_nodes(const at::Tensor& t) { return kg::test::count_nodes(t, "BnActFunction"); }

double rel_diff(const at::Tensor& a, const at::Tensor& b) {
  REQUIRE(a.defined() == b.defined());
  if (!a.defined()) return 0.0;
  const double scale = std::max(1e-12, b.abs().max().item<double>());
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>() / scale;
}

struct Result {
  at::Tensor y, dx, dz, dw, db, running_mean, running_var, tracked;
  int fused = 0;
};

// One training-mode forward and backward of bn through forward_act, loss = sum(y * up).
Result run(kg::model::BatchNorm2d& bn, const at::Tensor& x0, const at::Tensor& z0, bool relu, const at::Tensor& up) {
  bn->train();
  bn->zero_grad();
  at::Tensor x = x0.detach().clone().requires_grad_(true);
  at::Tensor z = z0.defined() ? z0.detach().clone().requires_grad_(true) : at::Tensor();
  Result r;
  r.y = bn->forward_act(x, z, relu);
  r.fused = fused_nodes(r.y);
  (r.y * up).sum().backward();
  r.dx = x.grad();
  r.dz = z.defined() ? z.grad() : at::Tensor();
  r.dw = bn->weight.grad().clone();
  r.db = bn->bias.grad().clone();
  r.running_mean = bn->running_mean.clone();
  r.running_var = bn->running_var.clone();
  r.tracked = bn->num_batches_tracked.clone();
  return r;
}

// A fused and an eager BatchNorm with the same non-trivial weights and running statistics.
std::pair<kg::model::BatchNorm2d, kg::model::BatchNorm2d> twins(int64_t c) {
  kg::model::BatchNorm2d a(c), b(c);
  torch::NoGradGuard g;
  for (auto* bn : {&a, &b}) {
    torch::manual_seed(7);
    (*bn)->weight.uniform_(0.5, 1.5);
    (*bn)->bias.normal_(0, 0.3);
    (*bn)->running_mean.normal_(0, 1);
    (*bn)->running_var.uniform_(0.5, 2);
  }
  a->fused = true;
  return {a, b};
}

}  // namespace

// f's and e's (float32) distance from d (float64, the same ops): the fused node within twice eager's, or within
// `floor` of the scale where eager happens to land closer.
void as_close(const at::Tensor& f, const at::Tensor& e, const at::Tensor& d, double floor, const char* what) {
  const double ef = rel_diff(f, d), ee = rel_diff(e, d);
  INFO(what << ": fused " << ef << ", eager " << ee << " from float64");
  CHECK(ef <= std::max(2 * ee, floor));
}

TEST_CASE("fused BatchNorm + add + ReLU equals the eager ops, values and gradients", "[unit][model]") {
  struct Case {
    std::vector<int64_t> shape;
    bool channels_last, add, relu;
  };
  const std::vector<Case> cases = {
      {{5, 7, 9, 11}, false, true, true},   {{5, 7, 9, 11}, true, true, true},     {{4, 16, 6, 6}, true, false, true},
      {{4, 16, 6, 6}, false, false, true},  {{3, 9, 5, 4}, true, true, false},     {{3, 9, 5, 4}, false, false, false},
      {{6, 12, 1, 1}, false, true, true},   {{2, 130, 17, 3}, true, true, true},   {{64, 8, 33, 2}, false, true, true},
      {{4, 64, 32, 32}, true, false, true}, {{4, 128, 16, 16}, false, true, true}, {{4, 512, 4, 4}, true, true, true},
  };
  for (const auto& k : cases) {
    INFO("shape " << at::IntArrayRef(k.shape) << (k.channels_last ? " channels_last" : " NCHW")
                  << (k.add ? " + add" : "") << (k.relu ? " + relu" : ""));
    torch::manual_seed(3);
    const auto fmt = k.channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
    // Channels with an offset and a scale of their own: the statistics are not those of N(0, 1).
    const int64_t c = k.shape[1];
    at::Tensor x = (torch::randn(k.shape) * torch::linspace(0.2, 3.0, c).view({1, c, 1, 1}) +
                    torch::linspace(-4.0, 6.0, c).view({1, c, 1, 1}))
                       .contiguous(fmt);
    at::Tensor z = k.add ? torch::randn(k.shape).contiguous(fmt) : at::Tensor();
    at::Tensor up = torch::randn(k.shape);
    auto [fused, eager] = twins(c);
    auto ref = twins(c).second;  // the eager ops in float64: what both are measured against
    ref->to(at::kDouble);
    REQUIRE(kg::model::fused_bn_supported(x, z));
    const auto dbl = [](const at::Tensor& t) { return t.defined() ? t.to(at::kDouble) : t; };
    for (int step = 0; step < 2; ++step) {  // twice: the running statistics move on from where the first left them
      const Result a = run(fused, x, z, k.relu, up), b = run(eager, x, z, k.relu, up);
      const Result d = run(ref, dbl(x), dbl(z), k.relu, dbl(up));
      CHECK(a.fused == 1);
      CHECK(b.fused == 0);
      CHECK(a.y.is_contiguous(fmt));
      as_close(a.y, b.y, d.y, 1e-6, "y");
      as_close(a.dx, b.dx, d.dx, 1e-5, "dx");
      as_close(a.dz, b.dz, d.dz, 1e-6, "dz");
      as_close(a.dw, b.dw, d.dw, 1e-5, "dweight");
      as_close(a.db, b.db, d.db, 1e-6, "dbias");
      as_close(a.running_mean, b.running_mean, d.running_mean, 1e-6, "running_mean");
      as_close(a.running_var, b.running_var, d.running_var, 1e-6, "running_var");
      CHECK(torch::equal(a.tracked, b.tracked));
    }
  }
}

TEST_CASE("fused BatchNorm leaves what it does not take to the eager ops", "[unit][model]") {
  auto [fused, eager] = twins(4);
  const at::Tensor x = torch::randn({3, 4, 5, 5});
  SECTION("evaluation uses the running statistics, eagerly") {
    fused->eval();
    eager->eval();
    at::Tensor y = fused->forward_act(x.detach().requires_grad_(true), {}, true);
    CHECK(fused_nodes(y) == 0);
    CHECK(torch::allclose(y, eager->forward_act(x, {}, true)));
  }
  SECTION("other dtypes, layouts and shapes are not taken") {
    CHECK_FALSE(kg::model::fused_bn_supported(x.to(at::kDouble), {}));
    CHECK_FALSE(kg::model::fused_bn_supported(x.to(at::kBFloat16), {}));
    CHECK_FALSE(kg::model::fused_bn_supported(x.transpose(2, 3), {}));  // neither NCHW nor channels_last
    CHECK_FALSE(kg::model::fused_bn_supported(x.flatten(2), {}));
    CHECK_FALSE(kg::model::fused_bn_supported(x, torch::randn({3, 4, 5, 4})));
    CHECK(kg::model::fused_bn_supported(x, torch::randn({3, 4, 5, 5}).contiguous(at::MemoryFormat::ChannelsLast)));
    // A double BatchNorm trains eagerly.
    fused->to(at::kDouble);
    fused->train();
    const at::Tensor xd = x.to(at::kDouble).requires_grad_();
    CHECK_FALSE(kg::model::fused_bn_supported(*fused, xd, {}));
    CHECK(fused_nodes(fused->forward_act(xd, {}, true)) == 0);
  }
  SECTION("a residual in another layout than x is read in x's") {
    const at::Tensor z = torch::randn({3, 4, 5, 5}).contiguous(at::MemoryFormat::ChannelsLast);
    const at::Tensor up = torch::ones({3, 4, 5, 5});
    const Result a = run(fused, x, z, true, up), b = run(eager, x, z, true, up);
    CHECK(a.fused == 1);
    CHECK(rel_diff(a.y, b.y) < 2e-6);
    CHECK(rel_diff(a.dz, b.dz) == 0.0);
  }
}

namespace {

kg::model::NetworkPtr build(const std::string& name, bool fused, bool ckpt) {
  auto recipe = kg::config::Recipe::validate(
      kg::config::parse_toml_string("[model]\nname = \"" + name + "\"\nfused_bn = " + (fused ? "true" : "false") +
                                        "\ngrad_checkpointing = " + (ckpt ? "true" : "false") + "\n",
                                    "test.toml"));
  kg::model::ModelContext ctx;
  ctx.in_chans = 3;
  ctx.num_outputs = 5;
  ctx.height = ctx.width = 32;
  torch::manual_seed(11);
  auto net = kg::model::build(recipe, ctx);
  torch::NoGradGuard g;  // away from zero_init_last, which would silence each block's last BatchNorm
  for (auto& p : net->named_parameters(true))
    if (p.value().dim() == 1) p.value().uniform_(0.5, 1.5);
  return net;
}

struct Step {
  at::Tensor loss;
  int fused = 0;
  std::map<std::string, at::Tensor> grads, buffers;
};

Step step(kg::model::Network& net, const at::Tensor& x) {
  net.train();
  net.zero_grad();
  Step s;
  at::Tensor y = net.forward(x);
  s.loss = (y * torch::linspace(-1, 1, y.numel()).view(y.sizes())).sum();
  s.fused = fused_nodes(s.loss);
  s.loss.backward();
  for (auto& p : net.named_parameters(true)) s.grads[p.key()] = p.value().grad().clone();
  for (auto& b : net.named_buffers(true)) s.buffers[b.key()] = b.value().clone();
  return s;
}

}  // namespace

TEST_CASE("model.fused_bn trains ResNets to the eager step's loss, gradients and statistics", "[unit][model]") {
  for (const std::string name : {"resnet9", "resnet18", "resnet50"}) {
    for (bool channels_last : {false, true}) {
      INFO(name << (channels_last ? " channels_last" : " NCHW"));
      auto fused = build(name, true, false), eager = build(name, false, false), ref = build(name, false, false);
      fused->set_channels_last(channels_last);
      eager->set_channels_last(channels_last);
      ref->to(at::kDouble);  // the same step in float64, what both are measured against
      torch::manual_seed(5);
      at::Tensor x = torch::randn({4, 3, 32, 32});
      const Step d = step(*ref, x.to(at::kDouble));
      if (channels_last) x = x.contiguous(at::MemoryFormat::ChannelsLast);
      const Step a = step(*fused, x), b = step(*eager, x);
      CHECK(a.fused > 0);
      CHECK(b.fused == 0);
      const double truth = d.loss.item<double>();
      CHECK(std::abs(a.loss.item<double>() - truth) <=
            std::max(2 * std::abs(b.loss.item<double>() - truth), 1e-6 * std::abs(truth)));
      // Each gradient against its own largest entry, or a thousandth of the network's where it is smaller (the
      // stem BatchNorm's bias gradient of a ResNet-50 is a sum that cancels to ~1e-6).
      double largest = 0;
      for (auto& [k, g] : d.grads) largest = std::max(largest, g.abs().max().item<double>());
      for (auto& [k, g] : d.grads) {
        INFO("parameter " << k);
        const double scale = std::max(g.abs().max().item<double>(), 1e-3 * largest);
        const double ef = (a.grads.at(k).to(at::kDouble) - g).abs().max().item<double>() / scale;
        const double ee = (b.grads.at(k).to(at::kDouble) - g).abs().max().item<double>() / scale;
        INFO("fused " << ef << ", eager " << ee << " from float64");
        // Through 20-50 layers both float32 steps land ~1e-4 from float64, the fused one up to ~2x further (its
        // backward adds its three terms in another order); a wrong formula would be off by the gradient itself.
        CHECK(ef <= std::max(4 * ee, 2e-4));
      }
      for (auto& [k, v] : d.buffers) {
        INFO("buffer " << k);
        if (v.is_floating_point())
          as_close(a.buffers.at(k), b.buffers.at(k), v, 1e-6, "buffer");
        else
          CHECK(torch::equal(a.buffers.at(k), v));
      }
    }
  }
  SECTION("with gradient checkpointing, the fused network's own gradients") {
    auto plain = build("resnet18", true, false), ckpt = build("resnet18", true, true);
    torch::manual_seed(5);
    const at::Tensor x = torch::randn({4, 3, 32, 32});
    const Step a = step(*ckpt, x), b = step(*plain, x);
    CHECK(a.loss.item<double>() == Approx(b.loss.item<double>()).epsilon(1e-6));
    for (auto& [k, g] : b.grads) {
      INFO("parameter " << k);
      CHECK(rel_diff(a.grads.at(k), g) < 1e-5);
    }
    for (auto& [k, v] : b.buffers) {
      INFO("buffer " << k);
      CHECK(rel_diff(a.buffers.at(k), v) < 1e-6);
    }
  }
}

TEST_CASE("fused BatchNorm + add + ReLU on CUDA equals the eager ops (float32, bfloat16)", "[unit][gpu][model]") {
  KG_REQUIRE_GPU();
  struct Case {
    std::vector<int64_t> shape;
    at::ScalarType dtype;
    bool add, relu;
    double tol_y, tol_grad;
  };
  // bfloat16: eager rounds BatchNorm's output and the sum to bfloat16, the kernel rounds y once.
  const std::vector<Case> cases = {
      {{8, 64, 14, 14}, at::kFloat, true, true, 2e-5, 2e-4},
      {{8, 64, 14, 14}, at::kFloat, false, true, 2e-5, 2e-4},
      {{5, 37, 9, 11}, at::kFloat, true, false, 2e-5, 2e-4},
      {{16, 256, 7, 7}, at::kBFloat16, true, true, 3e-2, 6e-2},
      {{16, 256, 7, 7}, at::kBFloat16, false, true, 3e-2, 6e-2},
      {{4, 96, 12, 12}, at::kHalf, true, true, 5e-3, 2e-2},
  };
  for (const auto& k : cases) {
    INFO("shape " << at::IntArrayRef(k.shape) << " " << k.dtype << (k.add ? " + add" : "")
                  << (k.relu ? " + relu" : ""));
    torch::manual_seed(3);
    const int64_t c = k.shape[1];
    const auto cl = at::MemoryFormat::ChannelsLast;
    at::Tensor x = (torch::randn(k.shape) * torch::linspace(0.2, 3.0, c).view({1, c, 1, 1}) +
                    torch::linspace(-4.0, 6.0, c).view({1, c, 1, 1}))
                       .to(torch::kCUDA, k.dtype)
                       .contiguous(cl);
    at::Tensor z = k.add ? torch::randn(k.shape).to(torch::kCUDA, k.dtype).contiguous(cl) : at::Tensor();
    at::Tensor up = torch::randn(k.shape).to(torch::kCUDA, k.dtype);
    auto [fused, eager] = twins(c);
    fused->to(torch::kCUDA);
    eager->to(torch::kCUDA);
    REQUIRE(kg::model::fused_bn_supported(*fused, x, z));
    for (int step = 0; step < 2; ++step) {
      const Result a = run(fused, x, z, k.relu, up), b = run(eager, x, z, k.relu, up);
      CHECK(a.fused == 1);
      CHECK(a.y.is_contiguous(cl));
      CHECK(a.y.scalar_type() == k.dtype);
      CHECK(rel_diff(a.y, b.y) < k.tol_y);
      CHECK(rel_diff(a.dx, b.dx) < k.tol_grad);
      CHECK(rel_diff(a.dz, b.dz) < k.tol_y);
      CHECK(rel_diff(a.dw, b.dw) < k.tol_grad);
      CHECK(rel_diff(a.db, b.db) < k.tol_grad);
      CHECK(rel_diff(a.running_mean, b.running_mean) < 1e-5);
      CHECK(rel_diff(a.running_var, b.running_var) < 1e-4);
      CHECK(torch::equal(a.tracked, b.tracked));
    }
  }
  SECTION("NCHW on the GPU is left to the eager ops") {
    auto [fused, eager] = twins(8);
    fused->to(torch::kCUDA);
    CHECK_FALSE(kg::model::fused_bn_supported(*fused, torch::randn({2, 8, 4, 4}, torch::kCUDA), {}));
  }
}

}  // namespace KG_UNITY_ID
}  // namespace
