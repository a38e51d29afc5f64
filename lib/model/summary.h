// A model's size and cost: parameters, forward FLOPs per image and an estimate of training memory.
// FLOPs are counted from the operators a forward pass actually dispatches (an at::RecordFunction
// callback), so every family, TorchScript backbones included, is measured the same way — fvcore's
// convention: 2 x the multiply-accumulates of convolutions and matrix products, nothing else.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kg::model {

class Network;

struct ModelSummary {
  int64_t total_params = 0;
  int64_t trainable_params = 0;
  std::vector<int64_t> input_shape;  // [C, H, W] of one image; [L] tokens of one text
  int64_t feature_dim = 0;           // numeric feature columns fed beside the image
  int64_t macs = 0;                  // multiply-accumulates of one image's forward pass (convolutions, linear, matmul)
  double gflops = 0;                 // 2 * macs / 1e9
  // Training memory at `batch`: fp32 weights (+ buffers), fp32 gradients, AdamW's two fp32 moments,
  // and the activations autograd holds after a training-mode forward pass.
  int64_t batch = 1;
  int64_t weight_bytes = 0;
  int64_t grad_bytes = 0;
  int64_t optimizer_bytes = 0;  // AdamW's two slots until set_optimizer says otherwise
  std::string optimizer = "AdamW";
  // The recipe's optimizer: its name and the parameter-sized tensors it keeps per parameter (Optimizer::state_slots).
  void set_optimizer(const std::string& name, int64_t slots) {
    optimizer = name;
    optimizer_bytes = slots * trainable_params * 4;
  }
  int64_t activation_bytes = 0;         // op outputs still referenced when the forward returns (what backward needs)
  int64_t activation_output_bytes = 0;  // every top-level op output of the forward (an upper bound, torchsummary-style)
  bool channels_last = false;
  bool grad_checkpointing = false;

  int64_t train_bytes() const { return weight_bytes + grad_bytes + optimizer_bytes + activation_bytes; }
  // "11.7M parameters (11.7M trainable), input 3x224x224, 3.64 GFLOPs/image\ntraining memory at batch 32: ..."
  std::string str() const;
  nlohmann::json to_json() const;
};

// Measures `net` on zero images [batch, in_chans, height, width] (+ zero features [batch, feature_dim]).
// FLOPs come from one eval-mode forward pass at batch 1 without autograd; activations from one
// training-mode forward pass at batch 2 (BatchNorm needs two samples in training mode), scaled
// linearly to `batch`. The network's parameters, buffers (BatchNorm running statistics), train/eval
// mode of every submodule and the default generator of its device are as they were on return.
ModelSummary summarize(Network& net, const ModelContext& ctx, int64_t batch);
// The same for an image model's input in_chans x height x width (+ feature_dim features).
ModelSummary summarize(Network& net, int64_t in_chans, int64_t height, int64_t width, int64_t batch,
                       int64_t feature_dim = 0);

// Multiply-accumulates of the convolutions and matrix products `fn` dispatches on this thread
// (nested calls counted once: aten::linear's inner addmm is part of the linear).
int64_t count_macs(const std::function<void()>& fn);

// "11.69M", "412.7K", "950"
std::string count_text(int64_t n);
// "1.50 GiB", "45.2 MiB", "812 B"
std::string bytes_text(int64_t bytes);

}  // namespace kg::model
