// Grad-CAM (Selvaraju et al., 2017) on a network's last feature map: the gradient of each image's class
// score with respect to the map, averaged over space, weighs the map's channels; the weighted sum goes
// through ReLU, is upsampled (bilinear) to the input size and scaled to [0, 1] per image. Works for every
// CNN family (resnet*, efficientnet*, convnext*: forward_features returns [N, C, h, w]).
#pragma once
#include <ATen/core/Tensor.h>

#include "model/model.h"

namespace kg::model {

struct CamResult {
  at::Tensor cams;                        // float [N, H, W] in [0, 1] (all zero where no location raised the score)
  at::Tensor logits;                      // [N, outputs], detached
  int64_t map_height = 0, map_width = 0;  // the feature map's size (the CAM's true resolution)
};

// `x` [N, C, H, W] on the network's device; `scores` picks what each image explains: the output column
// `columns[i]`, negated where `negate[i]` (binary's negative class). The network is run in eval mode.
// DataError when the backbone returns pooled features (no map to localise on).
CamResult grad_cam(Network& net, const at::Tensor& x, const at::Tensor& columns, const at::Tensor& negate,
                   const at::Tensor& features = {});

}  // namespace kg::model
