// device.cuda_graphs in the training loop, with graphs emulated on the CPU (device/graph.h): the
// trainer copies every batch into the graph's inputs, adds the graph's gradients to .grad the way
// backward does, captures a graph per input shape, undoes warm-up and capture, and so trains exactly
// as the eager loop does — bit-identical weights.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>

#include "core/fs.h"
#include "device/device.h"
#include "device/loss_scaler.h"
#include "device/oom.h"
#include "model/weights/safetensors.h"
#include "support/fixtures.h"
#include "support/gpu.h"
#include "support/job_helpers.h"
#include "train/step_graphs.h"
#include "train/trainer_rig.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace fs = std::filesystem;

using kg::test::EnvVar;

namespace {

// The Rig's weights after fit(); `captures`: graphs captured (-1 = graphs were off).
// `skips`: updates the loss scaler skipped.
std::map<std::string, at::Tensor> train(const kg::test::TinyDataset& ds, const fs::path& dir,
                                        std::vector<std::string> overrides, int64_t n_train,
                                        int64_t fake_oom_above = -1, int64_t* captures = nullptr,
                                        kg::device::LossScaler scaler = {}, int64_t* skips = nullptr) {
  fs::create_directories(dir);
  kg::test::Rig rig(ds.root, dir, overrides, n_train, {}, {}, scaler, fake_oom_above);
  rig.trainer->fit();
  if (captures) *captures = rig.trainer->graphs() ? rig.trainer->graphs()->captures() : -1;
  if (skips) *skips = rig.trainer->scaler().overflow_skips();
  return rig.params();
}

kg::device::LossScaler scaler(double init) {
  kg::device::LossScalerOptions o;
  o.init_scale = init;
  o.growth_interval = 3;
  return kg::device::LossScaler(o, /*enabled=*/true);
}

// `fit` with `base` twice: eagerly (plus `eager_extra`) into DIR/eager, with device.cuda_graphs emulated
// into DIR/graphs. Both must succeed; the graphed run's output is returned.
std::string fit_eager_and_graphed(const std::vector<std::string>& base, const std::string& dir,
                                  const std::vector<std::string>& eager_extra = {}) {
  auto eager = kg::test::run_kgtrain(kg::test::cat(kg::test::cat(base, eager_extra), {"--run-dir", dir + "/eager"}));
  INFO(eager.output);
  REQUIRE(eager.exit_code == 0);
  kg::test::RunResult graphed;
  {
    EnvVar emulate("KGTRAIN_EMULATE_CUDA_GRAPHS", "1");
    graphed = kg::test::run_kgtrain(kg::test::cat(base, {"device.cuda_graphs=true", "--run-dir", dir + "/graphs"}));
  }
  INFO(graphed.output);
  REQUIRE(graphed.exit_code == 0);
  return graphed.output;
}

bool same_weights(const std::string& dir) {
  return kg::read_file(dir + "/eager/checkpoints/last/model.safetensors") ==
         kg::read_file(dir + "/graphs/checkpoints/last/model.safetensors");
}

}  // namespace

TEST_CASE("cuda graphs (emulated): same weights as eager, with accumulation and a short last update",
          "[integration][train][graphs]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 64, 4);
  // 45 training rows in batches of 8 (the last 5 dropped, as fit does): updates of 2, 2 and 1 micro-batches —
  // gradients summed into .grad, and the short update's used in place.
  const std::vector<std::string> common{"train.epochs=2", "optim.lr=0.05", "optim.momentum=0.9", "train.batch_size=8",
                                        "train.accum_steps=2"};
  auto eager = train(ds, dir / "eager", common, 45);
  int64_t captures = 0;
  auto graphed = train(ds, dir / "graphs", kg::test::cat(common, {"device.cuda_graphs=true"}), 45, -1, &captures);
  CHECK(kg::test::max_diff(eager, graphed) == 0.0);
  CHECK(captures == 1);  // one input shape, kept across the epochs

  // One micro-batch per update: the graph's gradients are used in place.
  const std::vector<std::string> single{"train.epochs=2", "optim.lr=0.05", "train.batch_size=16", "optim.name=adamw"};
  auto eager1 = train(ds, dir / "eager1", single, 48);
  auto graphed1 = train(ds, dir / "graphs1", kg::test::cat(single, {"device.cuda_graphs=true"}), 48);
  CHECK(kg::test::max_diff(eager1, graphed1) == 0.0);
}

namespace {
// A capturer that fails as a real capture does when the step synchronizes with the host (or runs out of memory).
struct FailingCapturer : kg::device::GraphCapturer {
  bool oom = false;
  std::unique_ptr<kg::device::StepGraph> capture(const kg::device::GraphWork&, const std::vector<at::Tensor>&,
                                                 int) override {
    if (oom) kg::device::throw_fake_oom(4, 2);
    throw std::runtime_error("CUDA error: operation not permitted when stream is capturing");
  }
};
}  // namespace

TEST_CASE("a capture that fails turns graphs off and the step runs eagerly, out of memory propagates",
          "[integration][train][graphs]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 24, 4);
  kg::test::Rig rig(ds.root, dir.str(), {}, 20);
  const kg::train::MicroStep step{rig.net.get(), rig.loss.get(), kg::device::Precision::fp32, c10::kCPU, false};
  const auto params = rig.net->parameters();
  const at::Tensor x = torch::randn({4, 1, 12, 12}), y = torch::tensor({0, 1, 1, 0}, torch::kLong);

  auto oom = std::make_unique<FailingCapturer>();
  oom->oom = true;
  kg::train::GraphedSteps out_of_memory(std::move(oom), step, params, {});
  CHECK_THROWS_WITH(out_of_memory.run(kg::model::Inputs::image(x), y, 2.0, true), Catch::Contains("out of memory"));
  CHECK(out_of_memory.on());  // the trainer backs off and the next shape is captured

  std::vector<std::string> logs;
  kg::train::GraphedSteps steps(std::make_unique<FailingCapturer>(), step, params,
                                [&](const std::string& l) { logs.push_back(l); });
  for (auto& p : params) p.mutable_grad() = at::Tensor();
  const at::Tensor loss = steps.run(kg::model::Inputs::image(x), y, 2.0, true).clone();
  CHECK_FALSE(steps.on());
  REQUIRE(logs.size() == 1);
  CHECK_THAT(logs[0], Catch::Contains("cuda graphs: off for the rest of the run, the step could not be captured (CUDA "
                                      "error: operation not permitted when stream is capturing)"));
  std::vector<at::Tensor> got;
  for (auto& p : params) got.push_back(p.grad().clone());
  for (auto& p : params) p.mutable_grad() = at::Tensor();
  auto l = step.forward(kg::model::Inputs::image(x), y);
  step.backward(l, step.weight_tensor(2.0, x.device()));
  CHECK(torch::equal(loss, l.detach()));
  for (size_t i = 0; i < params.size(); ++i) CHECK(torch::equal(got[i], params[i].grad()));
}

TEST_CASE(
    "cuda graphs (emulated) with the fp16 loss scaler: the scale reaches the graph every step, overflows skip alike",
    "[integration][train][graphs][scaler]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 48, 4);
  const std::vector<std::string> common{"train.epochs=3", "train.batch_size=8", "optim.lr=0.05"};
  // 1024 doubling every 3 updates: each replay must multiply by the scale of its own step.
  auto eager = train(ds, dir / "a", common, 40, -1, nullptr, scaler(1024));
  auto graphed =
      train(ds, dir / "b", kg::test::cat(common, {"device.cuda_graphs=true"}), 40, -1, nullptr, scaler(1024));
  CHECK(kg::test::max_diff(eager, graphed) == 0.0);
  // A scale beyond float32: infinite losses, skipped updates and back-offs until it fits, the same with graphs.
  int64_t skips_eager = 0, skips_graphed = 0;
  auto e2 = train(ds, dir / "c", common, 40, -1, nullptr, scaler(std::ldexp(1.0, 140)), &skips_eager);
  auto g2 = train(ds, dir / "d", kg::test::cat(common, {"device.cuda_graphs=true"}), 40, -1, nullptr,
                  scaler(std::ldexp(1.0, 140)), &skips_graphed);
  CHECK(skips_eager >= 1);
  CHECK(skips_graphed == skips_eager);
  CHECK(kg::test::max_diff(e2, g2) == 0.0);
}

TEST_CASE("cuda graphs (emulated) with OOM back-off: the smaller micro-batch is captured anew, same weights",
          "[integration][train][graphs][oom]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 64, 4);
  const std::vector<std::string> common{"train.epochs=2", "optim.lr=0.05", "optim.momentum=0.9"};
  auto backed_off =
      train(ds, dir / "a", kg::test::cat(common, {"train.batch_size=16", "device.cuda_graphs=true"}), 48, 4);
  auto small = train(ds, dir / "b", kg::test::cat(common, {"train.batch_size=4", "train.accum_steps=4"}), 48);
  CHECK(kg::test::max_diff(backed_off, small) == 0.0);
}

TEST_CASE("fit with cuda graphs (emulated): resnet9 with BatchNorm, mixup and fine_tune's unfreezing train as eager",
          "[train][graphs][integration]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 60, 8);
  const std::string recipe = dir.write("r.toml", kg::test::tiny_recipe(ds.root));
  // fine_tune: 1 frozen epoch, then 1 with every group trainable (the graph is captured again).
  const std::vector<std::string> base{"fit",
                                      recipe,
                                      "train.mode=\"fine_tune\"",
                                      "train.freeze_epochs=1",
                                      "train.epochs=1",
                                      "plots.enabled=false",
                                      "train.batch_size=8",
                                      "mixup.mixup_alpha=0.4"};
  const std::string out = fit_eager_and_graphed(base, dir.str());
  CHECK_THAT(out, Catch::Contains("cuda graphs: training step captured for input [8, 1, 12, 12]") &&
                      Catch::Contains("trainable parameters or layer modes changed; the step is captured again"));
  CHECK(same_weights(dir.str()));
}

TEST_CASE("fit with cuda graphs where they cannot run: logged, the step runs eagerly", "[train][graphs][integration]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 24, 8);
  const std::string recipe = dir.write("r.toml", kg::test::tiny_recipe(ds.root));
  const std::vector<std::string> base{"fit", recipe, "train.epochs=1", "plots.enabled=false",
                                      "device.cuda_graphs=true"};
  auto cpu = kg::test::run_kgtrain(kg::test::cat(base, {"--run-dir", dir / "a"}));
  INFO(cpu.output);
  CHECK(cpu.exit_code == 0);
  CHECK_THAT(
      cpu.output,
      Catch::Contains("cuda graphs: off (CUDA graphs need a CUDA device (this run is on cpu)); the step runs eagerly"));
  auto ckpt = kg::test::run_kgtrain(kg::test::cat(base, {"model.grad_checkpointing=true", "--run-dir", dir / "b"}));
  INFO(ckpt.output);
  CHECK(ckpt.exit_code == 0);
  CHECK_THAT(ckpt.output, Catch::Contains("cuda graphs: off (model.grad_checkpointing recomputes activations"));
  kg::test::RunResult bad;
  {
    EnvVar emulate("KGTRAIN_EMULATE_CUDA_GRAPHS", "yes");
    bad = kg::test::run_kgtrain(kg::test::cat(base, {"--run-dir", dir / "c"}));
  }
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.output, Catch::Contains("KGTRAIN_EMULATE_CUDA_GRAPHS=yes: expected 1 (emulate) or 0"));
}

TEST_CASE("fit on CUDA with device.cuda_graphs: captured, and the weights of the eager run",
          "[integration][gpu][train][graphs]") {
  KG_REQUIRE_GPU();
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_pack_dataset(dir, 60, 8);  // raw packs: runs in a GPU build without image codecs
  const std::string recipe = dir.write("r.toml", kg::test::tiny_recipe(ds.root));
  // Deterministic algorithms: the two runs then differ only in how the kernels are launched.
  const std::vector<std::string> base{"fit",
                                      recipe,
                                      "data.format=pack",
                                      "train.epochs=2",
                                      "plots.enabled=false",
                                      "device.name=cuda",
                                      "device.deterministic=true",
                                      "device.tf32=false",
                                      "train.accum_steps=2"};
  auto eager = kg::test::run_kgtrain(kg::test::cat(base, {"--run-dir", dir / "eager"}));
  INFO(eager.output);
  REQUIRE(eager.exit_code == 0);
  auto graphed = kg::test::run_kgtrain(kg::test::cat(base, {"device.cuda_graphs=true", "--run-dir", dir / "graphs"}));
  INFO(graphed.output);
  REQUIRE(graphed.exit_code == 0);
  CHECK_THAT(graphed.output, Catch::Contains("cuda graphs: training step captured for input [8, 1, 12, 12]"));
  CHECK_THAT(graphed.output, !Catch::Contains("cuda graphs: off"));
  auto a = kg::model::read_safetensors(dir / "eager/checkpoints/last/model.safetensors");
  auto b = kg::model::read_safetensors(dir / "graphs/checkpoints/last/model.safetensors");
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (auto& [k, v] : a)
    worst = std::max(worst, (v.to(torch::kDouble) - b.at(k).to(torch::kDouble)).abs().max().item<double>());
  WARN("largest weight difference, graphs vs eager: " << worst);
  CHECK(worst < 1e-5);
}

TEST_CASE("fit --nproc 2 with cuda graphs (emulated): gradients summed after backward, the eager run's weights",
          "[train][graphs][dist][integration]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 48, 4);
  const std::string recipe = dir.write("r.toml", kg::test::tiny_recipe(ds.root));
  const std::vector<std::string> base{"fit",
                                      recipe,
                                      "train.epochs=2",
                                      "plots.enabled=false",
                                      "train.batch_size=6",
                                      "optim.name=sgd",
                                      "optim.momentum=0.9",
                                      "device.dist_timeout_s=60",
                                      "--nproc",
                                      "2"};
  const std::string out = fit_eager_and_graphed(base, dir.str(), {"device.dist_overlap=false"});
  CHECK_THAT(out, Catch::Contains("cuda graphs: training step captured for input [6, 1, 12, 12]"));
  CHECK(same_weights(dir.str()));
}

}  // namespace KG_UNITY_ID
}  // namespace
