// The every-model tests' list (tests/support/model_families.h) against the registry: each larger sibling is a
// registered model whose stand-in is registered and built, and every model kgtrain had before the siblings came
// (resnet9 ... convnext_small) is still built itself.
#include <catch2/catch.hpp>

#include <algorithm>

#include "model/model.h"
#include "support/model_families.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

TEST_CASE("every larger sibling stands for a registered model the every-model tests build", "[unit][model]") {
  const auto names = kg::model::model_registry().names();
  const auto built = kg::test::representative_models();
  auto has = [](const std::vector<std::string>& v, const std::string& n) {
    return std::find(v.begin(), v.end(), n) != v.end();
  };
  for (auto& [sibling, stand_in] : kg::test::larger_siblings()) {
    INFO(sibling << " -> " << stand_in);
    CHECK(has(names, sibling));
    CHECK(has(built, stand_in));
  }
  for (const char* n : {"resnet9",
                        "resnet18",
                        "resnet34",
                        "resnet50",
                        "efficientnet_b0",
                        "efficientnet_b1",
                        "efficientnet_b2",
                        "efficientnet_b3",
                        "efficientnet_b4",
                        "convnext_tiny",
                        "convnext_small",
                        "resnext50_32x4d",
                        "seresnext50_32x4d",
                        "tf_efficientnet_b0",
                        "efficientnetv2_s",
                        "tf_efficientnetv2_s",
                        "efficientnetv2_rw_s",
                        "vit_tiny_patch16_224",
                        "deit3_small_patch16_224",
                        "swin_tiny_patch4_window7_224",
                        "eca_nfnet_l0"}) {
    INFO(n);
    CHECK(has(built, n));
  }
  CHECK(built.size() + kg::test::larger_siblings().size() == names.size());
}

}  // namespace KG_UNITY_ID
}  // namespace
