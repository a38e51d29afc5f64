// Gradient checkpointing (lib/model/grad_checkpoint.cpp): the same loss, gradients and BatchNorm
// statistics as the plain network for every registered backbone, dropout/drop-path masks replayed,
// gradients for stages behind a frozen stem, a finite-difference check of the node, and the memory it saves.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <unordered_set>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/error.h"
#include "core/fs.h"
#include "device/autocast_state.h"
#include "device/device.h"
#include "device/precision.h"
#include "model/grad_checkpoint.h"
#include "model/model.h"
#include "model/weights/safetensors.h"
#include "model/text/text_network.h"
#include "support/autograd_graph.h"
#include "support/fixtures.h"
#include "support/gpu.h"
#include "support/heap.h"
#include "support/model_families.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

kg::model::NetworkPtr build(const std::string& toml, int64_t in_chans, int64_t outputs, int64_t size) {
  auto recipe = kg::config::Recipe::validate(kg::config::parse_toml_string(toml, "test.toml"));
  kg::model::ModelContext ctx;
  ctx.in_chans = in_chans;
  ctx.num_outputs = outputs;
  ctx.height = ctx.width = size;
  return kg::model::build(recipe, ctx);
}

// How many checkpointed stages the loss's autograd graph holds.
int count_checkpoint_nodes(const at::Tensor& loss) {
  return kg::test::count_nodes(loss, "kg::model::CheckpointBackward");
}

struct Step {
  at::Tensor loss;
  int checkpoints = 0;
  std::map<std::string, at::Tensor> grads;  // undefined when the parameter got none
  kg::model::TensorMap buffers;             // after the step
  at::Tensor rng_after;                     // draws from the CPU and the input device generators after backward
};

// One train-mode forward/backward from a fixed seed.
Step step(kg::model::Network& net, const at::Tensor& x, const at::Tensor& w, uint64_t seed) {
  net.train();
  net.zero_grad();
  torch::manual_seed(seed);
  Step s;
  auto y = net.forward(x);
  s.loss = (y * w).sum();
  s.checkpoints = count_checkpoint_nodes(s.loss);
  s.loss.backward();
  s.rng_after = torch::cat({torch::rand({4}), torch::rand({4}, x.options()).cpu()});  // CPU and x's device
  for (auto& p : net.named_parameters(true))
    s.grads[p.key()] = p.value().grad().defined() ? p.value().grad().clone() : at::Tensor();
  for (auto& b : net.named_buffers(true)) s.buffers[b.key()] = b.value().clone();
  return s;
}

// Checkpointed vs plain: the same loss, every parameter gradient and every buffer.
void compare(const Step& plain, const Step& ckpt) {
  CHECK(plain.checkpoints == 0);
  CHECK(ckpt.checkpoints > 0);
  CHECK(ckpt.loss.item<double>() == Approx(plain.loss.item<double>()).epsilon(1e-6));
  CHECK(torch::equal(plain.rng_after, ckpt.rng_after));  // the recompute does not shift later random draws
  REQUIRE(plain.grads.size() == ckpt.grads.size());
  int with_grad = 0;
  for (auto& [name, g] : plain.grads) {
    INFO("parameter " << name);
    const auto& h = ckpt.grads.at(name);
    REQUIRE(g.defined() == h.defined());
    if (!g.defined()) continue;
    ++with_grad;
    const double scale = g.abs().max().item<double>();
    const double diff = (g - h).abs().max().item<double>();
    CHECK(diff <= 1e-5 * scale + 1e-9);
  }
  CHECK(with_grad == static_cast<int>(plain.grads.size()));
  for (auto& [name, b] : plain.buffers) {
    INFO("buffer " << name);
    const auto& c = ckpt.buffers.at(name);
    if (b.is_floating_point())
      CHECK((b - c).abs().max().item<double>() <= 1e-6 * (1 + b.abs().max().item<double>()));
    else
      CHECK(torch::equal(b, c));  // num_batches_tracked: one step, counted once
  }
}

// The same weights in a plain and a checkpointed build of `toml`.
std::pair<kg::model::NetworkPtr, kg::model::NetworkPtr> twins(const std::string& toml, int64_t size) {
  torch::manual_seed(1);
  auto plain = build(toml, 3, 5, size);
  {
    // Away from the init: resnet's zero-initialised last BatchNorm (and convnext's 1e-6 layer scale)
    // would make residual branches, and so drop-path masks, vanish.
    torch::NoGradGuard no_grad;
    for (auto& p : plain->named_parameters(true))
      if (p.value().dim() == 1 && !plain->is_head_param(p.key()) && p.key().find("bias") == std::string::npos)
        p.value().uniform_(0.5, 1.5);
  }
  auto ckpt = build(toml + "\ngrad_checkpointing = true\n", 3, 5, size);
  auto report = kg::model::load_state_dict(*ckpt, kg::model::state_dict(*plain), /*strict=*/true, "plain twin");
  REQUIRE(report.clean());
  REQUIRE_FALSE(plain->grad_checkpointing());
  REQUIRE(ckpt->grad_checkpointing());
  return {plain, ckpt};
}

}  // namespace

TEST_CASE("checkpointed resnet9 and resnet18 give the plain network's loss, gradients and BatchNorm stats",
          "[unit][model]") {
  torch::manual_seed(2);
  auto x = torch::randn({4, 3, 32, 32});
  auto w = torch::randn({4, 5});
  for (std::string toml :
       {"[model]\nname = \"resnet9\"\nwidth = 4", "[model]\nname = \"resnet18\"\nsmall_input = true"}) {
    INFO(toml);
    auto [plain, ckpt] = twins(toml, 32);
    auto a = step(*plain, x, w, 5);
    auto b = step(*ckpt, x, w, 5);
    compare(a, b);
    // The running stats moved (train mode) and num_batches_tracked counts the step once.
    for (auto& [name, t] : a.buffers)
      if (name.find("num_batches_tracked") != std::string::npos) CHECK(t.item<int64_t>() == 1);
  }
}

TEST_CASE("every registered backbone family checkpoints with the plain network's gradients", "[unit][model]") {
  torch::manual_seed(3);
  auto x = torch::randn({2, 3, 32, 32});
  auto w = torch::randn({2, 5});
  int tested = 0;
  for (auto& name : kg::test::representative_models()) {
    if (name == "torchscript") continue;           // one opaque stage: refuses grad_checkpointing
    if (kg::model::is_text_model(name)) continue;  // a Hugging Face folder: tests/model/text/test_text_network.cpp
    INFO("model " << name);
    auto* info = kg::model::model_registry().find_info(name);
    REQUIRE(info);
    // The documented example plus stochastic depth where the family has it.
    auto [plain, ckpt] = twins(info->example + "\ndrop_path_rate = 0.2", 32);
    compare(step(*plain, x, w, 7), step(*ckpt, x, w, 7));
    ++tested;
  }
  CHECK(tested >= 4);  // resnet9, resnet18/34/50 at least
}

TEST_CASE("the recompute runs in the forward pass's autocast (bf16 + grad_checkpointing)", "[unit][model]") {
  // The backward runs outside the step's AutocastScope: a recompute in float32 would meet bf16 saved
  // tensors (LibTorch: "Input type CPUBFloat16Type and weight type CPUFloatType") or give other gradients.
  torch::manual_seed(4);
  auto x = torch::randn({2, 3, 32, 32});
  auto w = torch::randn({2, 5});
  auto [plain, ckpt] = twins("[model]\nname = \"resnet9\"\nwidth = 4", 32);
  auto run = [&](kg::model::Network& net) {
    net.train();
    net.zero_grad();
    at::Tensor loss;
    {
      kg::device::AutocastScope autocast(kg::device::Precision::bf16, c10::kCPU);
      loss = (net.forward(x).to(at::kFloat) * w).sum();
    }
    loss.backward();
    std::map<std::string, at::Tensor> g;
    for (auto& p : net.named_parameters(true)) g[p.key()] = p.value().grad().clone();
    return std::make_pair(loss.item<double>(), g);
  };
  auto a = run(*plain);
  auto b = run(*ckpt);
  CHECK(b.first == Approx(a.first).epsilon(1e-6));
  for (auto& [name, g] : a.second) {
    INFO("parameter " << name);
    REQUIRE(b.second.at(name).defined());
    // bf16 matmuls: the same casts and kernels, so equal up to summation order.
    CHECK((g - b.second.at(name)).abs().max().item<double>() <= 1e-3 * (g.abs().max().item<double>() + 1e-6));
  }
  CHECK_FALSE(kg::device::autocast_enabled(c10::kCPU));  // the backward left the thread as it found it
}

TEST_CASE("drop-path masks are replayed in the recompute", "[unit][model]") {
  const std::string toml = "[model]\nname = \"resnet18\"\nsmall_input = true\ndrop_path_rate = 0.5";
  torch::manual_seed(4);
  auto x = torch::randn({8, 3, 32, 32});
  auto w = torch::randn({8, 5});
  auto [plain, ckpt] = twins(toml, 32);
  // Drop-path is active: two seeds give two different train-mode losses.
  auto s1 = step(*plain, x, w, 11), s2 = step(*plain, x, w, 12);
  REQUIRE(s1.loss.item<double>() != Approx(s2.loss.item<double>()).epsilon(1e-6));
  for (uint64_t seed : {11, 12}) {
    // Both nets start the step from the same BatchNorm statistics.
    kg::model::load_state_dict(*ckpt, kg::model::state_dict(*plain), true, "plain twin");
    auto a = step(*plain, x, w, seed);
    compare(a, step(*ckpt, x, w, seed));
  }
}

TEST_CASE("stages behind a frozen stem still get gradients", "[unit][model]") {
  // PyTorch's reentrant checkpoint returns no parameter gradients when the stage input needs none.
  auto [plain, ckpt] = twins("[model]\nname = \"resnet18\"\nsmall_input = true", 32);
  for (auto* net : {plain.get(), ckpt.get()})
    for (auto& p : net->named_parameters(true))
      if (p.key().rfind("conv1.", 0) == 0 || p.key().rfind("bn1.", 0) == 0) p.value().set_requires_grad(false);
  torch::manual_seed(5);
  auto x = torch::randn({2, 3, 32, 32});
  auto w = torch::randn({2, 5});
  auto a = step(*plain, x, w, 1), b = step(*ckpt, x, w, 1);
  CHECK(b.checkpoints == 4);
  REQUIRE(b.grads.size() == a.grads.size());
  for (auto& [name, g] : b.grads) {
    INFO(name);
    const bool frozen = name.rfind("conv1.", 0) == 0 || name.rfind("bn1.", 0) == 0;
    CHECK(g.defined() == !frozen);
    if (!g.defined()) continue;
    CHECK((g - a.grads.at(name)).abs().max().item<double>() <=
          1e-5 * a.grads.at(name).abs().max().item<double>() + 1e-9);
    if (name.rfind("layer1.0.conv1", 0) == 0) CHECK(g.abs().sum().item<double>() > 0);
  }
}

TEST_CASE("checkpoint's gradients match finite differences (double, with dropout)", "[unit][model]") {
  torch::manual_seed(6);
  namespace nn = torch::nn;
  nn::Sequential stage(nn::Conv2d(nn::Conv2dOptions(2, 3, 3).padding(1)), nn::Tanh(), nn::Dropout(0.3),
                       nn::Conv2d(nn::Conv2dOptions(3, 2, 1)));
  stage->to(torch::kDouble);
  stage->train();
  auto fn = [stage](const at::Tensor& t) mutable { return stage->forward(t); };
  auto x = torch::randn({2, 2, 4, 4}, torch::kDouble).requires_grad_(true);
  auto w = torch::randn({2, 2, 4, 4}, torch::kDouble);
  auto f = [&] {
    torch::manual_seed(99);  // the same dropout mask in every evaluation
    return (kg::model::checkpoint(stage.ptr(), fn, x) * w).sum();
  };

  auto loss = f();
  REQUIRE(loss.grad_fn());
  CHECK(count_checkpoint_nodes(loss) == 1);
  loss.backward();
  std::vector<std::pair<std::string, at::Tensor>> checked{{"x", x}};
  for (auto& p : stage->named_parameters()) checked.emplace_back(p.key(), p.value());
  const double eps = 1e-6;
  for (auto& [name, t] : checked) {
    INFO(name);
    REQUIRE(t.grad().defined());
    auto analytic = t.grad().flatten();
    auto flat = t.detach().view({-1});  // the same storage: perturbing it perturbs the parameter
    double worst = 0;
    for (int64_t i = 0; i < flat.numel(); ++i) {
      torch::NoGradGuard no_grad;
      const double v = flat[i].item<double>();
      flat[i] = v + eps;
      const double up = f().item<double>();
      flat[i] = v - eps;
      const double down = f().item<double>();
      flat[i] = v;
      const double numeric = (up - down) / (2 * eps);
      worst = std::max(worst, std::abs(numeric - analytic[i].item<double>()) / (1 + std::abs(numeric)));
    }
    CHECK(worst < 1e-6);
  }
}

TEST_CASE("checkpoint edge cases: input modified in place, output without gradient", "[unit][model]") {
  auto lin = torch::nn::Linear(3, 3);
  auto fn = [lin](const at::Tensor& t) mutable { return lin->forward(t); };

  SECTION("an input modified after the forward pass is refused in backward") {
    auto a = torch::randn({2, 3}, torch::requires_grad());
    auto x = a * 1;
    auto y = kg::model::checkpoint(lin.ptr(), fn, x);
    x.add_(1);
    CHECK_THROWS_WITH(y.sum().backward(), Catch::Contains("modified in place"));
  }
  SECTION("a stage output that depends on nothing trainable gives no gradients and no error") {
    auto detached = [](const at::Tensor& t) { return t.detach() * 2; };
    auto x = torch::randn({2, 3});
    auto y = kg::model::checkpoint(lin.ptr(), detached, x);
    REQUIRE(y.requires_grad());  // the node is there: the stage has parameters
    CHECK_NOTHROW(y.sum().backward());
    CHECK_FALSE(lin->weight.grad().defined());
  }
  SECTION("the input alone gets its gradient when the stage has no trainable parameters") {
    for (auto& p : lin->parameters()) p.set_requires_grad(false);
    auto x = torch::randn({2, 3}, torch::requires_grad());
    auto y = kg::model::checkpoint(lin.ptr(), fn, x);
    y.sum().backward();
    REQUIRE(x.grad().defined());
    CHECK(torch::allclose(x.grad(), lin->weight.sum(0).expand({2, 3})));
  }
  SECTION("without grad mode it is a plain call") {
    torch::NoGradGuard no_grad;
    auto y = kg::model::checkpoint(lin.ptr(), fn, torch::randn({2, 3}));
    CHECK_FALSE(y.requires_grad());
  }
}

TEST_CASE("checkpointing keeps far less activation memory (resnet18, 64 px, batch 16)", "[unit][model]") {
  if (!kg::test::heap_statistics_available()) {  // nothing to measure (scripts/sanitize.sh's build)
    WARN(KG_TEST_SKIPPED_MARKER ": this allocator keeps no malloc statistics (a sanitizer build)");
    return;
  }
  torch::manual_seed(7);
  auto net = build("[model]\nname = \"resnet18\"\nsmall_input = true", 3, 10, 64);
  net->train();
  auto x = torch::randn({16, 3, 64, 64});
  {
    torch::NoGradGuard no_grad;  // warm-up: allocator pools and kernels built on first use stay out of the figures
    net->forward(x);
  }
  auto held = [&](bool on) {
    net->set_grad_checkpointing(on);
    const int64_t before = kg::device::heap_in_use();
    auto y = net->forward(x);
    const int64_t after = kg::device::heap_in_use();
    if (on) y.sum().backward();  // the checkpointed graph is usable
    return static_cast<double>(after) - static_cast<double>(before);
  };
  const double plain = held(false), ckpt = held(true);
  WARN("activation memory held after forward, resnet18 64 px batch 16: plain "
       << plain / (1 << 20) << " MiB, checkpointed " << ckpt / (1 << 20) << " MiB");
  CHECK(plain > 50.0 * (1 << 20));
  CHECK(ckpt < 0.7 * plain);
}

TEST_CASE("checkpointing on CUDA replays the CUDA generator's drop-path masks", "[unit][gpu][model]") {
  KG_REQUIRE_GPU();
  // Deterministic cuDNN algorithms without TF32: the recompute then matches the first forward pass
  // exactly, and the comparison measures the replay, not the choice of convolution algorithm.
  auto& ctx = at::globalContext();
  const bool det = ctx.deterministicCuDNN(), bench = ctx.benchmarkCuDNN(), tf32 = ctx.allowTF32CuDNN();
  ctx.setDeterministicCuDNN(true);
  ctx.setBenchmarkCuDNN(false);
  ctx.setAllowTF32CuDNN(false);
  struct Restore {
    std::function<void()> f;
    ~Restore() { f(); }
  } restore{[&] {
    ctx.setDeterministicCuDNN(det);
    ctx.setBenchmarkCuDNN(bench);
    ctx.setAllowTF32CuDNN(tf32);
  }};
  auto [plain, ckpt] = twins("[model]\nname = \"resnet18\"\nsmall_input = true\ndrop_path_rate = 0.5", 32);
  plain->to(torch::kCUDA);
  ckpt->to(torch::kCUDA);
  torch::manual_seed(9);
  auto x = torch::randn({8, 3, 32, 32}).cuda();
  auto w = torch::randn({8, 5}).cuda();
  compare(step(*plain, x, w, 21), step(*ckpt, x, w, 21));
}

TEST_CASE("kgtrain fit trains with model.grad_checkpointing = true", "[integration][model]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 64, 16);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  std::string run = dir / "run";
  auto fit = kg::test::run_kgtrain({"fit", recipe, "model.grad_checkpointing=true", "--run-dir", run, "--quiet"});
  INFO(fit.output);
  REQUIRE(fit.exit_code == 0);
  auto summary = nlohmann::json::parse(kg::read_file(run + "/summary.json"));
  CHECK(summary["status"] == "completed");
  CHECK(summary["best"]["value"].get<double>() >= 0.9);
}

}  // namespace KG_UNITY_ID
}  // namespace
