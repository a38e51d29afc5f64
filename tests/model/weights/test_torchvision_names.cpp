// torchvision's EfficientNet (V1, V2), ConvNeXt, ViT and Swin names renamed to timm's
// (model/weights/torchvision_names.h), name by name against torchvision 0.26's state_dict keys; the architecture each
// file holds, and the refusal of a file for another network. scripts/check_timm_parity.py --torchvision loads real
// torchvision files end to end (CI).
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include "core/error.h"
#include "model/weights/torchvision_names.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

const std::set<std::string> kEfficientNet{"conv_stem.weight", "blocks.0.0.bn1.weight"};
const std::set<std::string> kConvNeXt{"stem.0.weight", "stages.0.blocks.0.conv_dw.weight"};
const std::set<std::string> kViT{"cls_token", "blocks.0.attn.qkv.weight"};
const std::set<std::string> kSwin{"patch_embed.proj.weight", "layers.0.blocks.0.attn.qkv.weight"};

kg::model::TensorMap named(const std::vector<std::string>& names) {
  kg::model::TensorMap m;
  for (auto& n : names) m[n] = torch::zeros({2});
  return m;
}

// An EfficientNet file's shape-bearing tensors: the stem, the first block's first conv (V1: depthwise [C, 1, 3, 3],
// V2: a full conv), the head conv at features.`head`, and `second_stage` blocks in features.2.
kg::model::TensorMap efficientnet(int64_t stem, bool v2, int64_t head_width, int head = 8, int second_stage = 2) {
  auto m = named({});
  m["features.0.0.weight"] = torch::zeros({stem, 3, 3, 3});
  m["features.1.0.block.0.0.weight"] = torch::zeros({stem, v2 ? stem : 1, 3, 3});
  for (int b = 0; b < second_stage; ++b) m["features.2." + std::to_string(b) + ".block.0.0.weight"] = torch::zeros({2});
  m["features." + std::to_string(head) + ".0.weight"] = torch::zeros({head_width, 8, 1, 1});
  return m;
}

std::set<std::string> names_of(const kg::model::TensorMap& m) {
  std::set<std::string> got;
  for (auto& [n, t] : m) got.insert(n);
  return got;
}

std::string network_of(const kg::model::TensorMap& file) {
  auto a = kg::model::torchvision_arch(file);
  REQUIRE(a);
  return a->name + " -> " + a->network;
}

}  // namespace

TEST_CASE("torchvision's efficientnet names become timm's", "[unit][model]") {
  auto file = efficientnet(32, false, 1280);
  for (auto& [n, t] :
       named({"features.0.1.running_var", "features.1.0.block.1.fc1.weight", "features.1.0.block.1.fc2.bias",
              "features.1.0.block.2.1.weight", "features.2.0.block.1.1.bias", "features.2.0.block.2.fc1.weight",
              "features.2.0.block.3.0.weight", "features.2.0.block.3.1.weight", "features.2.1.block.3.0.weight",
              "features.8.1.running_mean", "classifier.1.bias", "extra.thing"}))
    file[n] = t;
  auto r = kg::model::from_torchvision(file, kEfficientNet, "efficientnet_b0");
  REQUIRE(r);
  CHECK(r->note == "torchvision's efficientnet_b0 names mapped to timm's");
  CHECK(names_of(r->tensors) == std::set<std::string>{"conv_stem.weight", "bn1.running_var",
                                                      // stage 1: depthwise-separable [dw, se, project]
                                                      "blocks.0.0.conv_dw.weight", "blocks.0.0.se.conv_reduce.weight",
                                                      "blocks.0.0.se.conv_expand.bias", "blocks.0.0.bn2.weight",
                                                      // stage 2: inverted residual [expand, dw, se, project]
                                                      "blocks.1.0.conv_pw.weight", "blocks.1.1.conv_pw.weight",
                                                      "blocks.1.0.bn2.bias", "blocks.1.0.se.conv_reduce.weight",
                                                      "blocks.1.0.conv_pwl.weight", "blocks.1.0.bn3.weight",
                                                      "blocks.1.1.conv_pwl.weight", "conv_head.weight",
                                                      "bn2.running_mean", "classifier.bias", "extra.thing"});
}

TEST_CASE("torchvision's efficientnet_v2 names become timm's: fused blocks, then MBConv, the head last",
          "[unit][model]") {
  auto file = efficientnet(24, true, 1280, /*head=*/7, /*second_stage=*/1);
  for (auto& [n, t] :
       named({"features.1.0.block.0.1.bias", "features.2.0.block.1.0.weight", "features.2.0.block.1.1.running_mean",
              "features.4.0.block.0.0.weight", "features.4.0.block.2.fc1.weight", "features.4.0.block.3.0.weight",
              "features.4.0.block.3.1.weight", "features.7.1.bias", "classifier.1.weight"}))
    file[n] = t;
  auto r = kg::model::from_torchvision(file, kEfficientNet, "efficientnet_v2_s");
  REQUIRE(r);
  CHECK(names_of(r->tensors) ==
        std::set<std::string>{// stage 1: FusedMBConv without expansion = timm's ConvBnAct
                              "conv_stem.weight", "blocks.0.0.conv.weight", "blocks.0.0.bn1.bias",
                              // stage 2: FusedMBConv = timm's EdgeResidual
                              "blocks.1.0.conv_exp.weight", "blocks.1.0.conv_pwl.weight", "blocks.1.0.bn2.running_mean",
                              // stage 4: MBConv = inverted residual
                              "blocks.3.0.conv_pw.weight", "blocks.3.0.se.conv_reduce.weight",
                              "blocks.3.0.conv_pwl.weight", "blocks.3.0.bn3.weight",
                              // features.7: the head conv (features.8 for m and l)
                              "conv_head.weight", "bn2.bias", "classifier.weight"});
}

TEST_CASE("torchvision's convnext names become timm's, layer_scale a vector", "[unit][model]") {
  auto file = named({"features.0.1.bias", "features.1.0.block.0.weight", "features.1.2.block.2.weight",
                     "features.3.0.block.3.bias", "features.5.8.block.5.weight", "features.2.0.weight",
                     "features.6.1.bias", "classifier.0.weight", "classifier.2.weight"});
  file["features.0.0.weight"] = torch::zeros({96, 3, 4, 4});
  file["features.7.1.layer_scale"] = torch::full({768, 1, 1}, 0.5);
  auto r = kg::model::from_torchvision(file, kConvNeXt, "convnext_tiny");
  REQUIRE(r);
  CHECK(names_of(r->tensors) ==
        std::set<std::string>{
            "stem.0.weight", "stem.1.bias", "stages.0.blocks.0.conv_dw.weight", "stages.0.blocks.2.norm.weight",
            "stages.1.blocks.0.mlp.fc1.bias", "stages.2.blocks.8.mlp.fc2.weight", "stages.1.downsample.0.weight",
            "stages.3.downsample.1.bias", "head.norm.weight", "head.fc.weight", "stages.3.blocks.1.gamma"});
  CHECK(r->tensors.at("stages.3.blocks.1.gamma").sizes() == c10::IntArrayRef{768});
}

TEST_CASE("torchvision's vit names become timm's: in_proj is qkv, encoder.ln the final norm", "[unit][model]") {
  auto file =
      named({"class_token", "encoder.pos_embedding", "conv_proj.bias", "encoder.layers.encoder_layer_0.ln_1.weight",
             "encoder.layers.encoder_layer_0.self_attention.in_proj_weight",
             "encoder.layers.encoder_layer_0.self_attention.in_proj_bias",
             "encoder.layers.encoder_layer_0.self_attention.out_proj.weight",
             "encoder.layers.encoder_layer_11.ln_2.bias", "encoder.layers.encoder_layer_11.mlp.0.weight",
             "encoder.layers.encoder_layer_11.mlp.3.bias", "encoder.layers.encoder_layer_3.mlp.linear_2.weight",
             "encoder.ln.weight", "heads.head.weight", "heads.head.bias"});
  file["conv_proj.weight"] = torch::zeros({768, 3, 16, 16});
  auto r = kg::model::from_torchvision(file, kViT, "vit_base_patch16_224");
  REQUIRE(r);
  CHECK(r->note == "torchvision's vit_b_16 names mapped to timm's");
  CHECK(names_of(r->tensors) ==
        std::set<std::string>{"cls_token", "pos_embed", "patch_embed.proj.weight", "patch_embed.proj.bias",
                              "blocks.0.norm1.weight", "blocks.0.attn.qkv.weight", "blocks.0.attn.qkv.bias",
                              "blocks.0.attn.proj.weight", "blocks.11.norm2.bias", "blocks.11.mlp.fc1.weight",
                              "blocks.11.mlp.fc2.bias", "blocks.3.mlp.fc2.weight", "norm.weight", "head.weight",
                              "head.bias"});
  // DeiT's network is ViT's, and the image size is the model's to choose (pos_embed is resampled as it loads).
  CHECK(kg::model::from_torchvision(file, kViT, "deit_base_patch16_384"));
}

TEST_CASE("torchvision's swin names become timm's: merging opens the next stage, relative_position_index dropped",
          "[unit][model]") {
  auto file = named({"features.0.0.bias", "features.0.2.weight", "features.1.0.norm1.weight",
                     "features.1.0.attn.relative_position_bias_table", "features.1.0.attn.relative_position_index",
                     "features.1.1.mlp.0.weight", "features.1.1.mlp.3.bias", "features.2.reduction.weight",
                     "features.2.norm.bias", "features.5.5.attn.qkv.bias", "features.6.norm.weight",
                     "features.7.1.attn.proj.weight", "norm.weight", "head.weight", "head.bias"});
  file["features.0.0.weight"] = torch::zeros({96, 3, 4, 4});
  file["features.1.0.attn.qkv.weight"] = torch::zeros({288, 96});
  auto r = kg::model::from_torchvision(file, kSwin, "swin_tiny_patch4_window7_224");
  REQUIRE(r);
  CHECK(r->note == "torchvision's swin_t names mapped to timm's");
  CHECK(names_of(r->tensors) ==
        std::set<std::string>{"patch_embed.proj.weight", "patch_embed.proj.bias", "patch_embed.norm.weight",
                              "layers.0.blocks.0.norm1.weight", "layers.0.blocks.0.attn.relative_position_bias_table",
                              "layers.0.blocks.0.attn.qkv.weight", "layers.0.blocks.1.mlp.fc1.weight",
                              "layers.0.blocks.1.mlp.fc2.bias", "layers.1.downsample.reduction.weight",
                              "layers.1.downsample.norm.bias", "layers.2.blocks.5.attn.qkv.bias",
                              "layers.3.downsample.norm.weight", "layers.3.blocks.1.attn.proj.weight", "norm.weight",
                              "head.fc.weight", "head.fc.bias"});
}

TEST_CASE("the architecture of a torchvision file and the kgtrain network that computes it", "[unit][model]") {
  CHECK(network_of(efficientnet(32, false, 1280)) == "efficientnet_b0 -> efficientnet_b0");
  CHECK(network_of(efficientnet(32, false, 1280, 8, 3)) == "efficientnet_b1 -> efficientnet_b1");
  CHECK(network_of(efficientnet(40, false, 1536)) == "efficientnet_b3 -> efficientnet_b3");
  // b4 and b5 share a 48-channel stem: the head tells them apart; b5..b7 are TF's weights for eps 1e-3.
  CHECK(network_of(efficientnet(48, false, 1792)) == "efficientnet_b4 -> efficientnet_b4");
  CHECK(network_of(efficientnet(48, false, 2048)) == "efficientnet_b5 -> tv_efficientnet_b5");
  CHECK(network_of(efficientnet(64, false, 2560)) == "efficientnet_b7 -> tv_efficientnet_b7");
  CHECK(network_of(efficientnet(24, true, 1280, 7)) == "efficientnet_v2_s -> efficientnet_v2_s");
  CHECK(network_of(efficientnet(24, true, 1280, 8)) == "efficientnet_v2_m -> efficientnet_v2_m");
  CHECK(network_of(efficientnet(32, true, 1280, 8)) == "efficientnet_v2_l -> efficientnet_v2_l");
  auto vit = named({"encoder.pos_embedding"});
  vit["conv_proj.weight"] = torch::zeros({1280, 3, 14, 14});
  CHECK(network_of(vit) == "vit_h_14 -> ");
  auto swin = named({"features.1.0.attn.qkv.weight"});
  swin["features.0.0.weight"] = torch::zeros({128, 3, 4, 4});
  CHECK(network_of(swin) == "swin_b -> swin_base_patch4_window7_224");
}

TEST_CASE("a torchvision file for another network is refused, naming the model.name that computes it",
          "[unit][model]") {
  using Catch::Contains;
  // The same names and shapes, other features: the silent mismatch.
  CHECK_THROWS_WITH(
      kg::model::from_torchvision(efficientnet(32, false, 1280), kEfficientNet, "tf_efficientnet_b0"),
      Contains("torchvision's efficientnet_b0 weights are computed by model.name = \"efficientnet_b0\"") &&
          Contains("\"same\" padding"));
  CHECK_THROWS_AS(kg::model::from_torchvision(efficientnet(48, false, 2048), kEfficientNet, "efficientnet_b5"),
                  kg::ConfigError);
  CHECK_THROWS_WITH(kg::model::from_torchvision(efficientnet(48, false, 2048), kEfficientNet, "tf_efficientnet_b5"),
                    Contains("\"tv_efficientnet_b5\"") && Contains("eps 1e-3"));
  CHECK_THROWS_WITH(kg::model::from_torchvision(efficientnet(24, true, 1280, 7), kEfficientNet, "efficientnetv2_s"),
                    Contains("\"efficientnet_v2_s\", not \"efficientnetv2_s\""));
  CHECK_THROWS_WITH(kg::model::from_torchvision(efficientnet(32, false, 1280), {"conv1.weight"}, "resnet50"),
                    Contains("not \"resnet50\""));
  auto vit = named({"encoder.pos_embedding"});
  vit["conv_proj.weight"] = torch::zeros({1280, 3, 14, 14});
  CHECK_THROWS_WITH(kg::model::from_torchvision(vit, kViT, "vit_large_patch16_224"),
                    Contains("no network that computes vit_h_14"));
  // The right network, or one whose name is unknown (built outside model::build), takes the file.
  CHECK(kg::model::from_torchvision(efficientnet(48, false, 2048), kEfficientNet, "tv_efficientnet_b5"));
  CHECK(kg::model::from_torchvision(efficientnet(48, false, 1792), kEfficientNet, "efficientnet_b4"));
  CHECK(kg::model::from_torchvision(efficientnet(48, false, 1792), kEfficientNet, ""));
}

TEST_CASE("files not in torchvision's layout, or networks with its names, are left alone", "[unit][model]") {
  kg::model::TensorMap timm_file{{"conv_stem.weight", torch::zeros({2})}};
  CHECK_FALSE(kg::model::from_torchvision(timm_file, kEfficientNet, "efficientnet_b0"));
  // resnet: torchvision's names are timm's, no layout to recognise
  CHECK_FALSE(kg::model::from_torchvision(named({"conv1.weight", "fc.weight"}), {"conv1.weight"}, "resnet50"));
  // a TorchScript network traced from torchvision has its names already
  CHECK_FALSE(kg::model::from_torchvision(efficientnet(32, false, 1280), {"features.0.0.weight"}, "torchscript"));
}

}  // namespace KG_UNITY_ID
}  // namespace
