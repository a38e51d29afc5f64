// torchvision's names for the networks it shares with timm. kgtrain's backbones carry timm's names; torchvision's
// ResNet and ResNeXt already match them, while its EfficientNet and ConvNeXt keep their layers in a `features`
// Sequential (features.1.0.block.0.0.weight). A file in that layout is renamed to timm's before it loads, as
// scripts/golden/gen_efficientnet.py and gen_convnext.py rename torchvision's models for the golden fixtures.
#pragma once
#include <optional>
#include <set>
#include <string>

#include "model/safetensors.h"

namespace kg::model {

struct Renamed {
  TensorMap tensors;
  std::string note;  // "torchvision's efficientnet names mapped to timm's"
};

// `file` renamed from torchvision's layout to timm's when it is in that layout and the model (`model_names`, its
// state_dict names) is the timm family it maps to; nullopt otherwise. A name the mapping does not know stays as it is
// (the load report lists it as unexpected). ConvNeXt's layer_scale [C, 1, 1] becomes timm's gamma [C].
std::optional<Renamed> from_torchvision(const TensorMap& file, const std::set<std::string>& model_names);

}  // namespace kg::model
