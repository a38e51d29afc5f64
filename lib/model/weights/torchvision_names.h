// torchvision's names for the networks it shares with timm. kgtrain's backbones carry timm's names; torchvision's
// ResNet, ResNeXt and Wide ResNet already match them, while its EfficientNet (V1 and V2), ConvNeXt and Swin keep their
// layers in a `features` Sequential (features.1.0.block.0.0.weight) and its ViT in an `encoder`
// (encoder.layers.encoder_layer_0.self_attention.in_proj_weight). A file in one of those layouts is renamed to timm's
// before it loads, as scripts/golden/gen_efficientnet.py and gen_convnext.py rename torchvision's models for the
// golden fixtures; scripts/check_timm_parity.py --torchvision checks each family against torchvision's forward.
#pragma once
#include <optional>
#include <set>
#include <string>

#include "model/weights/safetensors.h"

namespace kg::model {

// The torchvision architecture a file in torchvision's layout holds, and the kgtrain `model.name` that computes it
// ("" when kgtrain has none, e.g. vit_h_14).
struct TorchvisionArch {
  std::string family;   // "efficientnet", "convnext", "vit", "swin"
  std::string name;     // torchvision's: "efficientnet_b5", "efficientnet_v2_s", "vit_b_16", "swin_t"
  std::string network;  // kgtrain's: "tv_efficientnet_b5", "efficientnet_v2_s", "vit_base_patch16_224", ...
};
// nullopt when `file` is not in one of the layouts above.
std::optional<TorchvisionArch> torchvision_arch(const TensorMap& file);

struct Renamed {
  TensorMap tensors;
  std::string note;  // "torchvision's efficientnet_b0 names mapped to timm's"
};

// `file` renamed from torchvision's layout to timm's, when it is in one (nullopt otherwise). `model` is the
// network's model.name: a file for another network is refused (ConfigError, exit 2) naming the torchvision
// architecture and the model.name that computes it: torchvision's efficientnet_b0 in tf_efficientnet_b0 (TF's padding
// and eps: the same names and shapes, other features), its efficientnet_v2_s in timm's efficientnetv2_s (eps 1e-5),
// its vit_b_16 in a resnet50. An empty `model` skips that check. `model_names` (the network's state_dict names)
// decide whether the renaming applies at all. A name the mapping does not know stays as it is (the load report lists
// it as unexpected); torchvision's Swin relative_position_index (timm computes it) is dropped; ConvNeXt's layer_scale
// [C, 1, 1] becomes timm's gamma [C].
std::optional<Renamed> from_torchvision(const TensorMap& file, const std::set<std::string>& model_names,
                                        const std::string& model = "");

}  // namespace kg::model
