// The `torchscript` backbone: a TorchScript file made in Python (torch.jit.trace / trace_module /
// script) runs as the feature extractor, with kgtrain's head on top. Its parameters and buffers are
// mirrored into the Network under their own dotted names (stem.0.weight, layer1.0.conv1.weight, ...)
// as the SAME tensors, so the optimizer, state_dict/safetensors save and load, `.to(device)` and
// channels_last all act on what the script module computes with.
//
// Tracing bakes BatchNorm's and dropout's training flag into the graph (scripts/golden/gen_torchscript.py
// checks it with torch 1.13): a module traced in train mode keeps using batch statistics and updating
// its running stats under eval(); one traced in eval mode always uses (and never updates) its running
// statistics. train()/eval() only reach the graph of a torch.jit.script'ed module.
#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <torch/script.h>
#include <torch/torch.h>

#include "core/error.h"
#include "model/model.h"

namespace kg::model {
namespace {

// Keys of [model] when name = "torchscript"; each field's doc is in torchscript_fields() below and docs/reference.md.
struct TorchScriptOptions {
  std::string path;
  bool trust_torchscript = false;
};

torch::jit::Module load_script(const std::string& path) {
  std::error_code ec;
  KG_CHECK(std::filesystem::is_regular_file(path, ec), CheckpointError, "model.path: TorchScript file ", path,
           " does not exist or is not a file");
  try {
    return torch::jit::load(path, torch::kCPU);
  } catch (const c10::Error& e) {
    std::string why = e.what_without_backtrace();
    throw CheckpointError("model.path: cannot load TorchScript file " + path +
                          " (damaged, truncated or not TorchScript): " + why.substr(0, why.find('\n')));
  }
}

// Plain modules with the script module's own parameters and buffers, child by child, so that
// named_parameters() gives the script's dotted names. register_parameter/buffer keep the tensor
// itself (no copy), and Module::to() moves tensors with set_data(), which the script module sees too.
void mirror(const torch::jit::Module& src, torch::nn::Module& dst) {
  for (const auto& p : src.named_parameters(/*recurse=*/false))
    dst.register_parameter(p.name, p.value, /*requires_grad=*/true);
  for (const auto& b : src.named_buffers(/*recurse=*/false)) dst.register_buffer(b.name, b.value);
  for (const auto& c : src.named_children()) {
    auto child = std::make_shared<torch::nn::Module>(c.value.type()->name() ? c.value.type()->name()->name() : c.name);
    mirror(c.value, *child);
    if (!child->parameters().empty() || !child->buffers().empty()) dst.register_module(c.name, child);
  }
}

// The interpreter's message is a TorchScript traceback ending in the operator's own error line.
std::string last_error_line(const std::string& what) {
  size_t at = what.rfind("Error: ");
  if (at == std::string::npos) return what.substr(0, what.find('\n'));
  size_t start = what.rfind('\n', at);
  start = start == std::string::npos ? 0 : start + 1;
  return what.substr(start, what.find('\n', at) - start);
}

class TorchScriptNet final : public Network {
 public:
  TorchScriptNet(const TorchScriptOptions& o, const ModelContext& ctx) : path_(o.path) {
    KG_CHECK(!o.path.empty(), ConfigError, "model.path: the torchscript backbone needs the TorchScript file to run");
    KG_CHECK(o.trust_torchscript, ConfigError, "model.trust_torchscript: TorchScript is executable code: loading ",
             o.path,
             " runs its __setstate__ methods and running it calls whatever operators its author recorded, with any "
             "arguments. Set model.trust_torchscript = true only for files you made yourself or trust");
    KG_CHECK(!ctx.model.grad_checkpointing, ConfigError,
             "model.grad_checkpointing: not available with the torchscript "
             "backbone (the script module is one opaque stage; there is nothing to recompute stage by stage)");
    script_ = load_script(o.path);
    // trace_module(model, {"forward_features": x}) keeps timm's method name; a traced or scripted backbone uses
    // forward.
    method_ = script_.find_method("forward_features") ? "forward_features" : "forward";
    KG_CHECK(script_.find_method(method_), CheckpointError, "model.path: TorchScript file ", o.path,
             " has no forward or forward_features method");

    std::set<std::string> top;
    for (const auto& c : script_.named_children()) top.insert(c.name);
    for (const auto& p : script_.named_parameters(false)) top.insert(p.name);
    for (const auto& b : script_.named_buffers(false)) top.insert(b.name);
    for (const char* reserved : {"head_hidden", "head_drop", "feature_bn", "feature_mlp"})
      KG_CHECK(!top.count(reserved), ConfigError, "model.path: ", o.path, " has a top-level attribute \"", reserved,
               "\", a name kgtrain's head uses; rename it in Python");
    mirror(script_, *this);

    // Layer groups: each top-level child holding parameters, in order; the script's own top-level
    // parameters (a ViT's cls_token, pos_embed) train with the first group.
    std::vector<std::string> direct;
    for (const auto& p : script_.named_parameters(false)) direct.push_back(p.name);
    bool first = true;
    for (const auto& c : script_.named_children()) {
      if (c.value.named_parameters(true).size() == 0) continue;
      std::vector<std::string> prefixes{c.name};
      if (first) prefixes.insert(prefixes.end(), direct.begin(), direct.end());
      add_group(c.name == "head" ? "backbone.head" : c.name, prefixes);  // "head" is kgtrain's head's group
      first = false;
    }
    if (first && !direct.empty()) add_group("backbone", direct);
    for (const auto& p : named_parameters(true))
      if (p.value().dim() == 4) {
        set_first_conv(p.key());
        break;
      }

    // The classifier takes timm's usual name unless the script module has one of that name already
    // (a whole timm model traced with trace_module keeps its unused fc/classifier).
    std::string fc = "fc";
    for (const char* name : {"fc", "classifier", "kg_fc"})
      if (!top.count(name)) {
        fc = name;
        break;
      }
    // The build-time dry forward runs in eval mode, but a module traced in train mode still updates
    // its BatchNorm statistics: keep the file's values.
    std::vector<std::pair<at::Tensor, at::Tensor>> saved;
    for (auto& b : buffers(true)) saved.emplace_back(b, b.clone());
    try {
      finish(ctx, *this, fc);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {  // the interpreter rethrows op errors as std::runtime_error
      throw ConfigError("model.path: " + o.path + " failed on a 1x" + std::to_string(ctx.in_chans) + "x" +
                        std::to_string(ctx.height) + "x" + std::to_string(ctx.width) +
                        " input (data.channels, data.image_size): " + last_error_line(e.what()));
    }
    torch::NoGradGuard no_grad;
    for (auto& [buf, copy] : saved) buf.copy_(copy);
    script_.train(is_training());
  }

  at::Tensor forward_features(const at::Tensor& x) override {
    c10::IValue out = script_.get_method(method_)(std::vector<c10::IValue>{x});
    KG_CHECK(out.isTensor(), DataError, "model.path: ", path_, "'s ", method_, " returned a ", out.tagKind(),
             "; the torchscript backbone needs one tensor ([N, C, H, W] or [N, C])");
    return out.toTensor();
  }

  // Also switches the script module's `training` attribute (effective for scripted modules only).
  void train(bool on = true) override {
    Network::train(on);
    script_.train(on);
  }

 private:
  std::string path_;
  std::string method_;
  torch::jit::Module script_;
};

config::Fields<TorchScriptOptions> torchscript_fields() {
  config::Fields<TorchScriptOptions> f;
  f.field("path", &TorchScriptOptions::path,
          "required: TorchScript backbone file: torch.jit.trace(module, x).save(path), torch.jit.trace_module(model, "
          "{\"forward_features\": x}) or torch.jit.script(module); returns [N, C, H, W] or [N, C]. Tracing freezes "
          "BatchNorm/dropout in the mode traced (train: batch statistics even in eval; eval: frozen running "
          "statistics): trace in the mode you will use, or script it");
  f.field("trust_torchscript", &TorchScriptOptions::trust_torchscript,
          "allow loading and running model.path: a TorchScript file is a program that runs whatever operators its "
          "author chose; set true only for files you made or trust");
  return f;
}

KG_REGISTER(model_registry(), "torchscript",
            "a TorchScript backbone from Python (parameters keep their Python names; kgtrain's head on top)",
            "[model]\nname = \"torchscript\"\npath = \"backbone.pt\"\ntrust_torchscript = true", torchscript_fields(),
            [](const TorchScriptOptions& o, const ModelContext& ctx) -> NetworkPtr {
              return std::make_shared<TorchScriptNet>(o, ctx);
            });

}  // namespace
}  // namespace kg::model
