// torchvision's EfficientNet and ConvNeXt names renamed to timm's (model/torchvision_names.h), name by name against
// scripts/golden/gen_efficientnet.py's and gen_convnext.py's tables; scripts/check_timm_parity.py loads real
// torchvision files end to end (CI).
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include "core/error.h"
#include "model/torchvision_names.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

const std::set<std::string> kEfficientNet{"conv_stem.weight", "blocks.0.0.conv_dw.weight"};
const std::set<std::string> kConvNeXt{"stem.0.weight", "stages.0.blocks.0.conv_dw.weight"};

kg::model::TensorMap named(const std::vector<std::string>& names, int64_t stem_channels = 32) {
  kg::model::TensorMap m;
  for (auto& n : names) m[n] = torch::zeros({2});
  m["features.0.0.weight"] = torch::zeros({stem_channels, 3, 3, 3});
  return m;
}

}  // namespace

TEST_CASE("torchvision's efficientnet names become timm's", "[unit][model]") {
  auto file =
      named({"features.0.1.running_var", "features.1.0.block.0.0.weight", "features.1.0.block.1.fc2.bias",
             "features.1.0.block.2.1.weight", "features.2.0.block.0.0.weight", "features.2.0.block.1.1.bias",
             "features.2.0.block.2.fc1.weight", "features.2.0.block.3.0.weight", "features.2.0.block.3.1.weight",
             "features.8.0.weight", "features.8.1.running_mean", "classifier.1.bias", "extra.thing"});
  auto r = kg::model::from_torchvision(file, kEfficientNet);
  REQUIRE(r);
  CHECK(r->note == "torchvision's efficientnet names mapped to timm's");
  std::set<std::string> got;
  for (auto& [n, t] : r->tensors) got.insert(n);
  CHECK(got ==
        std::set<std::string>{"conv_stem.weight", "bn1.running_var",
                              // stage 1: depthwise-separable [dw, se, project]
                              "blocks.0.0.conv_dw.weight", "blocks.0.0.se.conv_expand.bias", "blocks.0.0.bn2.weight",
                              // stage 2: inverted residual [expand, dw, se, project]
                              "blocks.1.0.conv_pw.weight", "blocks.1.0.bn2.bias", "blocks.1.0.se.conv_reduce.weight",
                              "blocks.1.0.conv_pwl.weight", "blocks.1.0.bn3.weight", "conv_head.weight",
                              "bn2.running_mean", "classifier.bias", "extra.thing"});
}

TEST_CASE("torchvision's convnext names become timm's, layer_scale a vector", "[unit][model]") {
  auto file = named({"features.0.1.bias", "features.1.2.block.0.weight", "features.1.2.block.2.weight",
                     "features.3.0.block.3.bias", "features.5.8.block.5.weight", "features.2.0.weight",
                     "features.6.1.bias", "classifier.0.weight", "classifier.2.weight"});
  file["features.7.1.layer_scale"] = torch::full({768, 1, 1}, 0.5);
  auto r = kg::model::from_torchvision(file, kConvNeXt);
  REQUIRE(r);
  std::set<std::string> got;
  for (auto& [n, t] : r->tensors) got.insert(n);
  CHECK(got == std::set<std::string>{
                   "stem.0.weight", "stem.1.bias", "stages.0.blocks.2.conv_dw.weight", "stages.0.blocks.2.norm.weight",
                   "stages.1.blocks.0.mlp.fc1.bias", "stages.2.blocks.8.mlp.fc2.weight", "stages.1.downsample.0.weight",
                   "stages.3.downsample.1.bias", "head.norm.weight", "head.fc.weight", "stages.3.blocks.1.gamma"});
  CHECK(r->tensors.at("stages.3.blocks.1.gamma").sizes() == c10::IntArrayRef{768});
}

TEST_CASE("files not in torchvision's layout, or for another family, are left alone", "[unit][model]") {
  kg::model::TensorMap timm_file{{"conv_stem.weight", torch::zeros({2})}};
  CHECK_FALSE(kg::model::from_torchvision(timm_file, kEfficientNet));
  CHECK_FALSE(kg::model::from_torchvision(named({}), {"conv1.weight", "layer1.0.conv1.weight"}));  // resnet: same names
}

TEST_CASE("torchvision's efficientnet_b5..b7 are refused: no kgtrain network computes their features",
          "[unit][model]") {
  CHECK_THROWS_AS(kg::model::from_torchvision(named({}, 48), kEfficientNet), kg::CheckpointError);
  CHECK_THROWS_WITH(kg::model::from_torchvision(named({}, 64), kEfficientNet),
                    Catch::Contains("torchvision's efficientnet_b5/b6/b7") && Catch::Contains("eps 1e-3"));
  CHECK(kg::model::from_torchvision(named({}, 40), kEfficientNet));  // b4's stem
}

}  // namespace KG_UNITY_ID
}  // namespace
