#include "model/grad_cam.h"

#include <torch/torch.h>

#include "core/error.h"

namespace kg::model {

CamResult grad_cam(Network& net, const at::Tensor& x, const at::Tensor& columns, const at::Tensor& negate,
                   const at::Tensor& features) {
  const bool was_training = net.is_training();
  net.eval();
  torch::AutoGradMode grad_on(true);
  at::Tensor input = net.channels_last() ? x.contiguous(at::MemoryFormat::ChannelsLast) : x;
  at::Tensor fmap = net.forward_features(input);
  KG_CHECK(fmap.dim() == 4, DataError,
           "Grad-CAM needs a feature map from the backbone, and this model's forward_features returns pooled "
           "features of shape [",
           fmap.size(0), ", ", fmap.size(1), "] (a TorchScript or non-CNN model): no location to show");
  if (!fmap.requires_grad()) fmap.requires_grad_(true);  // a frozen backbone: still differentiable w.r.t. the map
  const at::Tensor logits = net.forward_head(fmap, features);
  const at::Tensor cols = columns.to(logits.device()).to(torch::kLong).view({-1, 1});
  at::Tensor score = logits.gather(1, cols).view({-1});
  score = torch::where(negate.to(logits.device()).to(torch::kBool), -score, score);
  const at::Tensor grad = torch::autograd::grad({score.sum()}, {fmap})[0];
  net.train(was_training);
  const at::Tensor weights = grad.to(torch::kFloat).mean({2, 3}, /*keepdim=*/true);  // [N, C, 1, 1]
  at::Tensor cam = torch::relu((weights * fmap.detach().to(torch::kFloat)).sum(1, /*keepdim=*/true));
  CamResult r;
  r.map_height = cam.size(2);
  r.map_width = cam.size(3);
  cam = torch::nn::functional::interpolate(cam, torch::nn::functional::InterpolateFuncOptions()
                                                    .size(std::vector<int64_t>{x.size(2), x.size(3)})
                                                    .mode(torch::kBilinear)
                                                    .align_corners(false));
  cam = cam.squeeze(1);
  const at::Tensor hi = std::get<0>(cam.flatten(1).max(1)).view({-1, 1, 1});
  r.cams = torch::where(hi > 0, cam / hi.clamp_min(1e-12), torch::zeros_like(cam)).cpu();
  r.logits = logits.detach();
  return r;
}

}  // namespace kg::model
