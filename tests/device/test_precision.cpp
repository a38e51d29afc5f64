// device.precision: the autocast scope reaches LibTorch, restores the previous state, and the
// training loop runs its forward pass in bf16 while weights stay float32.
#include <catch2/catch.hpp>

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "core/error.h"
#include "device/precision.h"
#include "support/fixtures.h"
#include "train/trainer_rig.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::device::AutocastScope;
using kg::device::Precision;

TEST_CASE("device.precision names", "[unit][device][precision]") {
  CHECK(kg::device::parse_precision("fp32") == Precision::fp32);
  CHECK(kg::device::parse_precision("bf16") == Precision::bf16);
  CHECK(kg::device::parse_precision("fp16") == Precision::fp16);
  CHECK(kg::device::precision_name(Precision::bf16) == "bf16");
  CHECK(kg::device::precision_name(Precision::fp16) == "fp16");
  CHECK_THROWS_AS(kg::device::parse_precision("fp8"), kg::ConfigError);
  CHECK_THROWS_WITH(kg::device::parse_precision("fp8"), Catch::Contains("device.precision") && Catch::Contains("bf16"));
}

TEST_CASE("AutocastScope: bf16 matmuls and convolutions inside, float32 outside", "[unit][device][precision]") {
  torch::manual_seed(0);
  torch::nn::Linear lin(8, 4);
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 5, 3));
  auto x = torch::randn({2, 8});
  auto img = torch::randn({2, 3, 6, 6});
  REQUIRE_FALSE(at::autocast::is_cpu_enabled());
  {
    AutocastScope s(Precision::bf16, c10::kCPU);
    CHECK(at::autocast::is_cpu_enabled());
    CHECK(lin->forward(x).scalar_type() == at::kBFloat16);
    CHECK(conv->forward(img).scalar_type() == at::kBFloat16);
    {
      AutocastScope inner(Precision::fp32, c10::kCPU);  // fp32 is a no-op: the outer scope still applies
      CHECK(lin->forward(x).scalar_type() == at::kBFloat16);
    }
    CHECK(at::autocast::is_cpu_enabled());
    // bf16 is close to float32, not equal: a real cast happened.
    auto y16 = lin->forward(x).to(at::kFloat);
    at::autocast::set_cpu_enabled(false);
    auto y32 = lin->forward(x);
    at::autocast::set_cpu_enabled(true);
    CHECK(torch::allclose(y16, y32, 2e-2, 2e-2));
    CHECK_FALSE(torch::equal(y16, y32));
  }
  CHECK_FALSE(at::autocast::is_cpu_enabled());
  CHECK(lin->forward(x).scalar_type() == at::kFloat);
  {
    AutocastScope s(Precision::fp32, c10::kCPU);
    CHECK_FALSE(at::autocast::is_cpu_enabled());
  }
}

TEST_CASE("bf16 training: float32 weights, a different but equally good run",
          "[integration][device][precision][trainer]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 64, 4);
  auto run = [&](const std::string& precision, const std::string& sub) {
    std::filesystem::create_directories(dir / sub);
    kg::test::Rig r(ds.root, dir / sub,
                    {"train.epochs=3", "train.batch_size=8", "optim.lr=0.05", "device.precision=" + precision}, 48);
    r.trainer->fit();
    auto ev = r.trainer->evaluate();
    return std::make_pair(r.params(), ev.values.at("accuracy"));
  };
  auto [p32, acc32] = run("fp32", "a");
  auto [p16, acc16] = run("bf16", "b");
  for (auto& [k, v] : p16) CHECK(v.scalar_type() == at::kFloat);
  double diff = kg::test::max_diff(p32, p16);
  CHECK(diff > 0);    // the forward really ran in bf16
  CHECK(diff < 0.5);  // ... and trained the same model
  CHECK(acc16 >= acc32 - 0.2);
}

}  // namespace KG_UNITY_ID
}  // namespace
