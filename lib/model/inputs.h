// What a network reads, by name: an image batch's pixels, or a text batch's token ids, attention mask and token type
// ids, and beside either the tabular features (data.feature_cols). Data produces it (data::Batch, to_model_input),
// every network consumes it (Network::forward), and every place that needs an input without data (the build-time dry
// forward, auto batch size's trial steps, show --model's summary, bench-model) makes it from the model's context with
// dummy_inputs(), not a shape of its own.
#pragma once
#include <array>
#include <cstdint>
#include <string>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/TensorOptions.h>

namespace kg::model {

struct ModelContext;

struct Inputs {
  at::Tensor pixels;    // images: float [B, C, H, W] (uint8 in a loader's batch until to_model_input normalizes it)
  at::Tensor ids;       // text: int64 [B, L] token ids
  at::Tensor mask;      // text: int64 [B, L], 1 = a token, 0 = padding
  at::Tensor type_ids;  // text: int64 [B, L] token type (segment) ids; undefined = all 0
  at::Tensor features;  // float [B, F] from data.feature_cols; undefined when the model takes none
  at::Tensor predict;   // masked-language-model batches: bool [B, L], the positions whose token the network predicts

  // An image batch (`features` may be undefined).
  static Inputs image(at::Tensor pixels, at::Tensor features = {});
  bool is_text() const { return ids.defined(); }
  // B: the samples of the batch.
  int64_t size() const;
  // Samples [start, start + count), as views.
  Inputs narrow(int64_t start, int64_t count) const;
  // Every defined tensor on `device` (non-blocking: the loader's batches are in pinned memory).
  Inputs to(const c10::Device& device, bool non_blocking = true) const;
  // `fn` of every defined tensor, the undefined ones left undefined.
  template <class Fn>
  Inputs map(Fn fn) const {
    auto f = [&](const at::Tensor& t) { return t.defined() ? at::Tensor(fn(t)) : t; };
    return {f(pixels), f(ids), f(mask), f(type_ids), f(features), f(predict)};
  }
  // The fields in a fixed order (pixels, ids, mask, type_ids, features, predict), defined or not.
  std::array<const at::Tensor*, 6> fields() const { return {&pixels, &ids, &mask, &type_ids, &features, &predict}; }
  std::array<at::Tensor*, 6> fields() { return {&pixels, &ids, &mask, &type_ids, &features, &predict}; }
};

// Zeros of the shape a batch of `batch` samples has for the model of `ctx` (its input channels and size, its numeric
// features), float32 on `opts`' device: what every dry or trial forward runs.
Inputs dummy_inputs(const ModelContext& ctx, int64_t batch, const c10::TensorOptions& opts);
// "3x64x64": one sample's input, for messages and summaries.
std::string describe_input(const ModelContext& ctx);

}  // namespace kg::model
