// Grad-CAM on every CNN family: a [N, H, W] map in [0, 1] at the input's size; the model's weights, gradients and
// mode untouched. Where it points is tested end to end (tests/jobs/test_interpret.cpp, the marks task).
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/error.h"
#include "model/grad_cam.h"
#include "model/model.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

kg::model::NetworkPtr build(const std::string& name, const std::string& extra = "") {
  auto recipe = kg::config::Recipe::validate(
      kg::config::parse_toml_string("[model]\nname = \"" + name + "\"\n" + extra, "cam.toml"));
  return kg::model::build(recipe, {3, 4});
}

}  // namespace

TEST_CASE("Grad-CAM runs on every CNN family and keeps the model as it was", "[unit][model]") {
  for (const char* name : {"resnet9", "resnet18", "resnet50", "efficientnet_b0", "convnext_tiny"}) {
    INFO(name);
    torch::manual_seed(0);
    auto net = build(name, std::string(name) == "resnet9" ? "width = 8\n" : "");
    net->train();
    const at::Tensor x = torch::randn({2, 3, 64, 64});
    const auto before = net->parameters()[0].clone();
    const auto cam = kg::model::grad_cam(*net, x, torch::tensor({1, 3}), torch::tensor({false, true}));
    CHECK(cam.cams.sizes() == at::IntArrayRef({2, 64, 64}));
    CHECK(cam.cams.min().item<float>() >= 0.0f);
    CHECK(cam.cams.max().item<float>() <= 1.0f);
    CHECK(cam.logits.sizes() == at::IntArrayRef({2, 4}));
    CHECK(cam.map_height >= 2);
    CHECK(net->is_training());                          // the mode it had
    CHECK(torch::equal(net->parameters()[0], before));  // no update
    CHECK(!net->parameters()[0].grad().defined());      // no gradient left on the weights
  }
}

}  // namespace KG_UNITY_ID
}  // namespace
