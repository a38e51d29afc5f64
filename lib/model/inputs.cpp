#include "model/inputs.h"

#include <ATen/ATen.h>

#include "core/error.h"
#include "model/model.h"

namespace kg::model {

Inputs Inputs::image(at::Tensor pixels, at::Tensor features) {
  Inputs in;
  in.pixels = std::move(pixels);
  in.features = std::move(features);
  return in;
}

int64_t Inputs::size() const {
  const at::Tensor& first = pixels.defined() ? pixels : ids;
  KG_ASSERT(first.defined(), "model inputs with neither pixels nor token ids");
  return first.size(0);
}

Inputs Inputs::narrow(int64_t start, int64_t count) const {
  return map([&](const at::Tensor& t) { return t.narrow(0, start, count); });
}

Inputs Inputs::to(const c10::Device& device, bool non_blocking) const {
  return map([&](const at::Tensor& t) { return t.to(device, non_blocking); });
}

Inputs dummy_inputs(const ModelContext& ctx, int64_t batch, const c10::TensorOptions& opts) {
  const auto fo = opts.dtype(at::kFloat);
  Inputs in;
  if (ctx.seq_len > 0) {  // a text model: token id 0 everywhere, no padding (the longest a batch can be)
    const auto io = opts.dtype(at::kLong);
    in.ids = at::zeros({batch, ctx.seq_len}, io);
    in.mask = at::ones({batch, ctx.seq_len}, io);
    in.type_ids = at::zeros({batch, ctx.seq_len}, io);
  } else {
    in.pixels = at::zeros({batch, ctx.in_chans, ctx.height, ctx.width}, fo);
  }
  if (ctx.num_features > 0) in.features = at::zeros({batch, ctx.num_features}, fo);
  return in;
}

std::string describe_input(const ModelContext& ctx) {
  if (ctx.seq_len > 0) return std::to_string(ctx.seq_len) + " tokens";
  return std::to_string(ctx.in_chans) + "x" + std::to_string(ctx.height) + "x" + std::to_string(ctx.width);
}

}  // namespace kg::model
