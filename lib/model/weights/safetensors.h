// safetensors (https://github.com/huggingface/safetensors): an 8-byte little-endian header length, a
// JSON header {name: {dtype, shape, data_offsets}}, then raw little-endian bytes. kgtrain's own reader
// and writer: the header is capped and every offset and shape is checked against the file.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace torch::nn {
class Module;
}

namespace kg::model {

using TensorMap = std::map<std::string, at::Tensor>;  // sorted by name: the file layout order

// Bytes depend only on names, dtypes, shapes and values: equal weights give equal files.
std::string encode_safetensors(const TensorMap& tensors);
void write_safetensors(const std::string& path, const TensorMap& tensors);  // atomic

// CheckpointError (exit 3) for a missing, truncated or inconsistent file.
TensorMap decode_safetensors(const std::string& bytes, const std::string& name_for_errors);
TensorMap read_safetensors(const std::string& path);

// Parameters and buffers of a module by their dotted names (PyTorch state_dict names), on the CPU.
TensorMap state_dict(const torch::nn::Module& m);

struct LoadReport {
  std::vector<std::string> missing, unexpected, mismatched;
  std::vector<std::string> reinitialized;  // head tensors of another shape (a new task): left at their init
  std::vector<std::string> adapted;        // first conv converted to the model's input channels
  std::vector<std::string> renamed;        // a wrapper's prefix stripped from every name ("module.")
  std::vector<std::string> reinit_layers;  // model.reinit_layers: encoder layers drawn anew after loading
  int64_t loaded = 0;                      // tensors copied
  bool clean() const { return missing.empty() && unexpected.empty() && mismatched.empty(); }
  std::string str() const;
};
// Copies tensors into the module's parameters/buffers by name. Returns what did not match; with
// `strict`, any mismatch is a CheckpointError naming them.
LoadReport load_state_dict(torch::nn::Module& m, const TensorMap& tensors, bool strict, const std::string& source);

}  // namespace kg::model
