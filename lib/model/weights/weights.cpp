#include "model/weights/weights.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include <torch/torch.h>

#include "core/error.h"
#include "core/strings.h"
#include "model/weights/torch_save.h"
#include "model/weights/torchvision_names.h"

namespace kg::model {

at::Tensor adapt_input_conv(const at::Tensor& w0, int64_t in_chans, const std::string& where) {
  KG_CHECK(w0.dim() == 4, CheckpointError, where, ": first conv weight has shape ", w0.sizes(),
           "; expected [out, in, kh, kw]");
  const int64_t have = w0.size(1);
  if (have == in_chans) return w0;
  at::Tensor w = w0.to(at::kFloat);
  if (in_chans == 1) {
    if (have > 3) {
      KG_CHECK(have % 3 == 0, CheckpointError, where, ": cannot adapt a ", have,
               "-channel first conv to 1 channel (needs a multiple of 3)");
      w = w.reshape({w.size(0), have / 3, 3, w.size(2), w.size(3)}).sum(2);
    } else {
      w = w.sum(1, /*keepdim=*/true);
    }
  } else {
    KG_CHECK(have == 3, CheckpointError, where, ": cannot adapt a ", have, "-channel first conv to ", in_chans,
             " channels (only 3-channel weights convert, as in timm)");
    const int64_t repeat = (in_chans + 2) / 3;
    w = w.repeat({1, repeat, 1, 1}).slice(1, 0, in_chans) * (3.0 / static_cast<double>(in_chans));
  }
  return w.to(w0.scalar_type()).contiguous();
}

namespace {

// The wrapper prefixes stripped, in order ("module.model." loses both); none when a name already matches.
std::vector<std::string> strip_wrapper_prefixes(TensorMap& tensors, const std::map<std::string, at::Tensor>& model) {
  std::vector<std::string> stripped;
  for (bool again = true; again && !tensors.empty();) {
    again = false;
    for (auto& [name, t] : tensors)
      if (model.count(name)) return stripped;
    for (const std::string prefix : {"module.", "model.", "backbone."}) {
      const bool all =
          std::all_of(tensors.begin(), tensors.end(), [&](const auto& kv) { return starts_with(kv.first, prefix); });
      if (!all) continue;
      TensorMap renamed;
      for (auto& [name, t] : tensors) renamed[name.substr(prefix.size())] = t;
      tensors = std::move(renamed);
      stripped.push_back("prefix " + prefix + " stripped");
      again = true;
      break;
    }
  }
  return stripped;
}

}  // namespace

namespace {

// torch.save's legacy format (before PyTorch 1.6) is a pickle stream that opens with its magic number: PROTO (0x80),
// the protocol (2), LONG1 (0x8a). A safetensors file opens with its header's length (8 bytes, little-endian), then
// the header's '{': its first byte is 0x80 whenever the length is 128 modulo 256, so the first byte alone proves
// nothing.
bool is_legacy_torch_save(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  KG_CHECK(in, CheckpointError, path, ": cannot open the weights file");
  unsigned char b[9] = {};
  in.read(reinterpret_cast<char*>(b), sizeof b);
  return b[0] == 0x80 && b[1] >= 2 && b[1] <= 5 && b[2] == 0x8a && !(in.gcount() == 9 && b[8] == '{');
}

WeightsFile read_weights_file(const std::string& path) {
  if (is_zip_file(path)) {
    auto w = read_torch_save(path);
    return {std::move(w.tensors), w.key.empty() ? path : path + " (its " + w.key + ")", std::nullopt};
  }
  KG_CHECK(!is_legacy_torch_save(path), CheckpointError, path,
           " is in torch.save's legacy format (PyTorch before 1.6), which kgtrain does not read: save it again with "
           "torch.save(torch.load(path), path) in PyTorch 1.6 or later");
  return {read_safetensors(path), path, std::nullopt};
}

}  // namespace

WeightsFile read_weights(const std::string& path) {
  std::error_code ec;
  const bool folder = std::filesystem::is_directory(path, ec);
  WeightsFile w = read_weights_file(folder ? weights_in_folder(path) : path);
  w.config = weights_config_for(path);
  if (w.config) w.source += " (" + w.config->str() + ")";
  return w;
}

WeightsFile read_weights_for(const std::string& path, const std::string& model_name) {
  WeightsFile w = read_weights(path);
  if (w.config) check_architecture(*w.config, model_name);
  return w;
}

LoadReport load_weights(Network& net, TensorMap tensors, const LoadPolicy& policy, const std::string& source) {
  std::map<std::string, at::Tensor> model;
  for (auto& p : net.named_parameters(true)) model.emplace(p.key(), p.value());
  for (auto& b : net.named_buffers(true)) model.emplace(b.key(), b.value());
  auto renamed = strip_wrapper_prefixes(tensors, model);
  {  // torchvision's layout (features.*, encoder.*) for the timm network
    std::set<std::string> names;
    for (auto& [name, t] : model) names.insert(name);
    if (auto tv = from_torchvision(tensors, names, net.arch())) {
      tensors = std::move(tv->tensors);
      renamed.push_back(tv->note);
    }
  }

  std::vector<std::string> adapted, reinit;
  const std::string& fc = net.first_conv();
  if (!fc.empty() && tensors.count(fc) && model.count(fc)) {
    at::Tensor& w = tensors[fc];
    const auto& want = model[fc];
    if (w.dim() == 4 && want.dim() == 4 && w.size(1) != want.size(1) && w.size(0) == want.size(0)) {
      w = adapt_input_conv(w, want.size(1), source + ": " + fc);
      adapted.push_back(fc + " " + std::to_string(tensors[fc].size(1)) + " channels");
    }
  }
  for (auto& [name, t] : tensors) {  // a shape the family can fit (ViT's pos_embed for another image size)
    auto it = model.find(name);
    if (it == model.end() || it->second.sizes() == t.sizes() || net.is_head_param(name)) continue;
    std::string note;
    at::Tensor fitted = net.fit_loaded(name, t, it->second, note);
    if (!fitted.defined()) continue;
    t = fitted;
    adapted.push_back(note);
  }
  if (policy.reinit_head) {
    for (auto& [name, t] : model) {
      if (!net.is_head_param(name) || TargetScale::is_buffer(name)) continue;  // fitted on the data, not loaded
      auto it = tensors.find(name);
      if (it == tensors.end()) {
        reinit.push_back(name);
      } else if (it->second.sizes() != t.sizes()) {
        reinit.push_back(name + " " + c10::str(it->second.sizes()) + " vs model " + c10::str(t.sizes()));
        tensors.erase(it);
      }
    }
  }
  LoadReport r = load_state_dict(net, tensors, /*strict=*/false, source);
  r.adapted = adapted;
  r.reinitialized = reinit;
  r.renamed = renamed;
  std::vector<std::string> missing;
  for (auto& m : r.missing) {
    if (ends_with(m, "num_batches_tracked")) continue;         // older torchvision files lack it
    if (policy.reinit_head && net.is_head_param(m)) continue;  // listed as re-initialised
    missing.push_back(m);
  }
  r.missing = missing;
  if (!r.mismatched.empty())
    throw CheckpointError(source + " does not fit the model (" + std::to_string(r.mismatched.size()) +
                          " tensors of another shape; is model.name right?): " + r.str());
  if (policy.strict && !r.clean()) {
    auto has = [](const std::vector<std::string>& v) {
      return std::any_of(v.begin(), v.end(), [](const std::string& n) { return TargetScale::is_buffer(n); });
    };
    const std::string hint =
        has(r.unexpected) ? "; its target_shift/target_scale are a fitted data.target_transform: set the same "
                            "data.target_transform as in training"
        : has(r.missing)  ? "; the recipe's data.target_transform needs the target_shift/target_scale that training "
                            "with it stores, and these weights were trained without it"
                          : "";
    throw CheckpointError(source + " does not match the model (model.pretrained_strict / a checkpoint must match " +
                          "exactly): " + r.str() + hint);
  }
  int64_t backbone = 0;  // a file that only matches the head leaves the backbone random: refuse it too
  for (auto& [name, t] : model)
    if (!net.is_head_param(name) && tensors.count(name) && tensors.at(name).sizes() == t.sizes()) ++backbone;
  if (backbone == 0)
    throw CheckpointError(
        source +
        ": no backbone tensor name matches the model, so nothing would load (is model.name right?): " + r.str());
  return r;
}

LoadReport load_pretrained(Network& net, const std::string& path, bool strict, const std::string& model_name) {
  auto w = read_weights_for(path, model_name);
  return load_weights(net, std::move(w.tensors), {strict, true}, w.source);
}

}  // namespace kg::model
