// Initial and external weights, one pipeline in this folder: a reader gives a TensorMap (safetensors.h; torch.save's
// zip through torch_save.h and its restricted unpickle.h), the names and shapes are adapted to kgtrain's network
// (torchvision_names.h; a timm folder's config.json in weights_config.h; the first conv to the input channels as
// timm's adapt_input_conv), then load_weights copies them by name with a report and re-initialises a head whose shape
// belongs to another task. The text encoders use the same readers (model/text/encoder.h: load_hf_state_dict).
#pragma once
#include <optional>
#include <string>

#include "model/model.h"
#include "model/weights/safetensors.h"
#include "model/weights/weights_config.h"

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
// (.pth, .pt, pytorch_model.bin; a state dict nested in a checkpoint is found, model/weights/torch_save.h); or a folder
// in Hugging Face's timm layout, whose config.json is read with the weights (model/weights/weights_config.h), as it is
// for a file beside one. `source` names what was read for messages: "w.pth", "w.pth (its state_dict)",
// "dir/model.safetensors (config.json: resnet50, 1000 classes)". CheckpointError (exit 3) naming the file; ConfigError
// (exit 2) for a bad config.json.
struct WeightsFile {
  TensorMap tensors;
  std::string source;
  std::optional<WeightsConfig> config;
};
WeightsFile read_weights(const std::string& path);
// read_weights, refused (exit 2, naming both) when its config.json states an architecture other than `model_name`.
WeightsFile read_weights_for(const std::string& path, const std::string& model_name);

// Copies `tensors` into the network. Names saved through a wrapper (DataParallel's "module.", Lightning's "model.",
// a detector's "backbone.") lose that prefix when none matches the model as it is and every name carries it. A backbone
// tensor of the wrong shape is always an error (exit 3); BatchNorm's num_batches_tracked may be absent.
LoadReport load_weights(Network& net, TensorMap tensors, const LoadPolicy& policy, const std::string& source);
// model.pretrained for the model `model_name`: read_weights_for, then load_weights with the head re-initialised when
// it differs.
LoadReport load_pretrained(Network& net, const std::string& path, bool strict, const std::string& model_name);

}  // namespace kg::model
