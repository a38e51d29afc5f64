// The registered models the every-model tests build (grad checkpointing, the summary): one of each code path. A
// larger sibling -- the same blocks at other widths, depths, windows or resolutions -- is named with the model that
// stands for it, so vit_large (304M parameters) is not built twice per test, and under AddressSanitizer. A new model
// is either built or listed here: tests/model/test_model_families.cpp fails on a name that is neither.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "model/model.h"

namespace kg::test {

inline const std::map<std::string, std::string>& larger_siblings() {
  static const std::map<std::string, std::string> m = [] {
    std::map<std::string, std::string> s = {
        {"resnet101", "resnet50"},
        {"resnet152", "resnet50"},
        {"resnext101_32x8d", "resnext50_32x4d"},
        {"resnext101_64x4d", "resnext50_32x4d"},
        {"wide_resnet50_2", "resnet50"},
        {"wide_resnet101_2", "resnet50"},
        {"seresnext101_32x8d", "seresnext50_32x4d"},
        {"efficientnet_b5", "efficientnet_b4"},
        {"efficientnet_b6", "efficientnet_b4"},
        {"efficientnet_b7", "efficientnet_b4"},
        {"efficientnetv2_m", "efficientnetv2_s"},
        {"efficientnetv2_l", "efficientnetv2_s"},
        {"efficientnet_v2_s", "efficientnetv2_s"},  // torchvision's eps: a value, not another code path
        {"efficientnet_v2_m", "efficientnetv2_s"},
        {"efficientnet_v2_l", "efficientnetv2_s"},
        {"tf_efficientnetv2_m", "tf_efficientnetv2_s"},
        {"tf_efficientnetv2_l", "tf_efficientnetv2_s"},
        {"efficientnetv2_rw_m", "efficientnetv2_rw_s"},
        {"convnext_base", "convnext_small"},
        {"convnext_large", "convnext_small"},
        {"swin_small_patch4_window7_224", "swin_tiny_patch4_window7_224"},
        {"swin_base_patch4_window7_224", "swin_tiny_patch4_window7_224"},
        {"swin_base_patch4_window12_384", "swin_tiny_patch4_window7_224"},
        {"swin_large_patch4_window7_224", "swin_tiny_patch4_window7_224"},
        {"eca_nfnet_l1", "eca_nfnet_l0"},
        {"eca_nfnet_l2", "eca_nfnet_l0"},
    };
    for (int i = 1; i <= 7; ++i) s["tf_efficientnet_b" + std::to_string(i)] = "tf_efficientnet_b0";
    for (int i = 5; i <= 7; ++i) s["tv_efficientnet_b" + std::to_string(i)] = "efficientnet_b4";
    for (const char* v :
         {"vit_tiny_patch16_384", "vit_small_patch16_224", "vit_small_patch16_384", "vit_base_patch16_224",
          "vit_base_patch16_384", "vit_large_patch16_224", "vit_large_patch16_384", "vit_base_patch32_224",
          "vit_base_patch32_384", "deit_tiny_patch16_224", "deit_small_patch16_224", "deit_base_patch16_224",
          "deit_base_patch16_384"})
      s[v] = "vit_tiny_patch16_224";
    for (const char* v : {"deit3_small_patch16_384", "deit3_base_patch16_224", "deit3_base_patch16_384",
                          "deit3_large_patch16_224", "deit3_large_patch16_384"})
      s[v] = "deit3_small_patch16_224";
    return s;
  }();
  return m;
}

// Every registered model but its larger siblings, in the registry's order.
inline std::vector<std::string> representative_models() {
  std::vector<std::string> out;
  for (auto& name : model::model_registry().names())
    if (!larger_siblings().count(name)) out.push_back(name);
  return out;
}

}  // namespace kg::test
