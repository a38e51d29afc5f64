// Weights in torch.save's zip format (.pth, .pt, pytorch_model.bin), read without Python and without running
// pickled code: the archive through LibTorch's own zip reader (caffe2::serialize::PyTorchStreamReader), its pickle
// through a restricted unpickler that builds only what torch.save writes for tensors and plain containers
// (dict, OrderedDict, list, tuple, str, numbers). An object of any other Python type (argparse.Namespace in timm's
// training checkpoints, a pickled nn.Module) is never built: it stays a name, and is refused where kgtrain would
// need its content.
#pragma once
#include <string>

#include "model/weights/safetensors.h"

namespace kg::model {

// What read_torch_save found: the state dict, and where in the file it was.
struct TorchSaveWeights {
  TensorMap tensors;
  std::string key;  // "" (the file is the state dict), or the entry holding it: "state_dict", "model", ...
};

// The state dict of a torch.save file: the file's dict of tensors itself, or the one under state_dict, model,
// model_state_dict, module, then state_dict_ema, model_ema, ema (timm's and Lightning's checkpoints).
// CheckpointError (exit 3) naming the file for a truncated or corrupt archive, a pickle kgtrain does not read,
// or a file without a state dict (its keys listed).
TorchSaveWeights read_torch_save(const std::string& path);

// Whether the first bytes are a zip archive's (torch.save since PyTorch 1.6, TorchScript).
bool is_zip_file(const std::string& path);

}  // namespace kg::model
