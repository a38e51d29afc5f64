// Initial and external weights: load by name with a report, adapt the first conv to the input
// channels (timm's adapt_input_conv), and re-initialise a head whose shape belongs to another task.
#pragma once
#include <string>

#include "model/model.h"
#include "model/safetensors.h"

namespace kg::model {

// A first-conv kernel [O, I, kh, kw] for `in_chans` inputs (timm adapt_input_conv): 1 channel sums the
// RGB kernels; other counts repeat the 3-channel kernel and rescale by 3 / in_chans.
// CheckpointError when the kernel's channels cannot be converted.
at::Tensor adapt_input_conv(const at::Tensor& w, int64_t in_chans, const std::string& where);

struct LoadPolicy {
  bool strict = false;      // missing/unexpected backbone tensors are errors
  bool reinit_head = true;  // head tensors of another shape, or missing, keep their init (new task)
};

// A weights file in any form kgtrain reads, told apart by its first bytes: safetensors, or torch.save's zip
// (.pth, .pt, pytorch_model.bin; a state dict nested in a checkpoint is found, model/torch_save.h). `source` names
// what was read for messages: "w.pth", or "w.pth (its state_dict)". CheckpointError (exit 3) naming the file.
struct WeightsFile {
  TensorMap tensors;
  std::string source;
};
WeightsFile read_weights(const std::string& path);

// Copies `tensors` into the network. Names saved through a wrapper (DataParallel's "module.", Lightning's "model.",
// a detector's "backbone.") lose that prefix when none matches the model as it is and every name carries it. A backbone
// tensor of the wrong shape is always an error (exit 3); BatchNorm's num_batches_tracked may be absent.
LoadReport load_weights(Network& net, TensorMap tensors, const LoadPolicy& policy, const std::string& source);
// model.pretrained: read the file, then load_weights with the head re-initialised when it differs.
LoadReport load_pretrained(Network& net, const std::string& path, bool strict);

}  // namespace kg::model
