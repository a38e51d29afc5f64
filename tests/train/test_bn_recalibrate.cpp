// BN recalibration (lib/train/bn_recalibrate.cpp): one cumulative-average pass over the training
// batches, as torch.optim.swa_utils.update_bn; nothing to do without BatchNorm layers.
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include "train/bn_net_fixture.h"
#include "train/bn_recalibrate.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using namespace kg::test::bn;

TEST_CASE("BN recalibration is one cumulative-average pass over the training batches", "[unit][callbacks]") {
  Data data;
  const auto batches = data.images();
  REQUIRE(batches.size() == 5);
  auto net = make_net();
  std::vector<std::string> bn_names;
  auto options = all_bn_options(*net, &bn_names);
  REQUIRE(options.size() == 3);  // bn, head_hidden.0, head_hidden.4 (or wherever the head puts them)
  const std::string head_bn = bn_names[1];
  INFO("head BatchNorm: " << head_bn);

  // Stale statistics from "training" that the recalibration must discard.
  {
    torch::NoGradGuard ng;
    for (auto& b : net->named_buffers(true)) {
      if (b.key().find("running_mean") != std::string::npos) b.value().fill_(7);
      if (b.key().find("running_var") != std::string::npos) b.value().fill_(9);
      if (b.key().find("num_batches_tracked") != std::string::npos) b.value().fill_(123);
    }
  }
  net->eval();
  net->bn->train();  // a mixed state that must come back as it was

  SECTION("full pass") {
    auto loader = data.loader();
    CHECK(kg::train::recalibrate_bn(*net, *loader, torch::kCPU) == 3);
    const auto e = expected_stats(batches, batches.size(), 1e-5);
    CHECK(net->bn->running_mean.item<double>() == Approx(e.bn2d_mean).epsilon(1e-5));
    CHECK(net->bn->running_var.item<double>() == Approx(e.bn2d_var).epsilon(1e-5));
    CHECK(buffer(*net, head_bn + ".running_mean").item<double>() == Approx(e.head_mean).margin(1e-5));
    CHECK(buffer(*net, head_bn + ".running_var").item<double>() == Approx(e.head_var).epsilon(1e-4));
    for (auto& name : bn_names) CHECK(buffer(*net, name + ".num_batches_tracked").item<int64_t>() == 5);
    // Not what momentum 0.1 would have left.
    CHECK(std::abs(net->bn->running_mean.item<double>() - e.bn2d_mean_m01) > 1e-2);
    CHECK(std::abs(net->bn->running_var.item<double>() - e.bn2d_var_m01) > 1e-2);
  }
  SECTION("bn_batches limits the pass") {
    auto loader = data.loader();
    kg::train::recalibrate_bn(*net, *loader, torch::kCPU, 2);
    const auto e = expected_stats(batches, 2, 1e-5);
    CHECK(net->bn->running_mean.item<double>() == Approx(e.bn2d_mean).epsilon(1e-5));
    CHECK(net->bn->running_var.item<double>() == Approx(e.bn2d_var).epsilon(1e-5));
    CHECK(net->bn->num_batches_tracked.item<int64_t>() == 2);
  }
  // Momenta and modes are restored.
  for (auto* o : options) {
    REQUIRE(o->momentum().has_value());
    CHECK(*o->momentum() == 0.1);
  }
  CHECK_FALSE(net->is_training());
  CHECK(net->bn->is_training());
  for (auto& item : net->named_modules("", false))
    if (item.key() != "bn") CHECK_FALSE(item.value()->is_training());
}

TEST_CASE("BN recalibration without BatchNorm layers runs nothing", "[unit][callbacks]") {
  struct NoBn final : kg::model::Network {
    explicit NoBn(const kg::model::ModelContext& ctx) {
      conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 2, 3)));
      add_group("stem", {"conv"});
      finish(ctx, *this, "fc");
    }
    at::Tensor forward_features(const at::Tensor& x) override { return conv->forward(x); }
    torch::nn::Conv2d conv{nullptr};
  };
  kg::model::ModelContext ctx;
  ctx.in_chans = 1;
  ctx.num_outputs = 2;
  ctx.height = ctx.width = 12;
  auto net = std::make_shared<NoBn>(ctx);
  Data data;
  auto loader = data.loader();
  CHECK(kg::train::recalibrate_bn(*net, *loader, torch::kCPU) == 0);
  kg::data::Batch b;
  CHECK(loader->next(b));  // untouched
  CHECK(b.index == 0);
}

}  // namespace KG_UNITY_ID
}  // namespace
