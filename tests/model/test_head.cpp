// The shared head (model/head.h): multi-sample dropout runs the classifier on several dropout masks in training and
// averages the logits; evaluation runs it once, without dropout; it and model.drop_rate are one or the other.
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include "core/error.h"
#include "model/head.h"
#include "model/model.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

struct Owner : torch::nn::Module {};

}  // namespace

TEST_CASE("head: multi-sample dropout averages the classifier over its masks in training", "[unit][model]") {
  Owner owner;
  kg::model::Head head;
  kg::model::HeadSpec spec;
  spec.in_features = 8;
  spec.num_outputs = 3;
  spec.msd_samples = 4;
  spec.msd_p = 0.5;
  torch::manual_seed(0);
  head.build(owner, owner, "fc", spec);
  auto fc = std::dynamic_pointer_cast<torch::nn::LinearImpl>(owner.named_children()["fc"]);
  REQUIRE(fc);
  const at::Tensor x = torch::randn({5, 8});

  owner.train();
  torch::manual_seed(7);
  const at::Tensor y = head.forward(x, {});
  torch::manual_seed(7);
  at::Tensor expected = torch::zeros({5, 3});
  for (int i = 0; i < 4; ++i) expected += fc->forward(torch::dropout(x, 0.5, true));
  expected /= 4.0;
  CHECK(torch::allclose(y, expected, 1e-6, 1e-6));
  torch::manual_seed(7);
  const at::Tensor one_mask = fc->forward(torch::dropout(x, 0.5, true));
  CHECK_FALSE(torch::allclose(y, one_mask, 1e-3, 1e-3));  // four masks, not one
  y.sum().backward();
  REQUIRE(fc->weight.grad().defined());
  CHECK(fc->weight.grad().abs().sum().item<double>() > 0);

  owner.eval();
  CHECK(torch::equal(head.forward(x, {}), fc->forward(x)));  // evaluation: once, no dropout
}

TEST_CASE("head: multi-sample dropout and model.drop_rate are one or the other", "[unit][model]") {
  kg::model::ModelContext ctx;
  ctx.in_chans = 1;
  ctx.num_outputs = 2;
  ctx.height = ctx.width = 12;
  ctx.model.name = "resnet9";
  ctx.model.msd_samples = 5;
  kg::config::Recipe recipe;
  CHECK_NOTHROW(kg::model::model_registry().create("resnet9", recipe.section("model"), ctx));
  ctx.model.drop_rate = 0.2;
  CHECK_THROWS_WITH(kg::model::model_registry().create("resnet9", recipe.section("model"), ctx),
                    Catch::Contains("multi_sample_dropout.samples = 5") && Catch::Contains("drop_rate"));
}

}  // namespace KG_UNITY_ID
}  // namespace
