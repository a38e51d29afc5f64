#include "model/weights/torchvision_names.h"

#include <map>
#include <regex>

#include <torch/torch.h>

#include "core/error.h"
#include "core/strings.h"

namespace kg::model {
namespace {

bool has_tensor(const TensorMap& file, const std::string& name) { return file.count(name) > 0; }

// The number of children `prefix`0., `prefix`1., ... that have a tensor named `prefix`<i>.`leaf`.
int64_t count_indexed(const TensorMap& file, const std::string& prefix, const std::string& leaf) {
  int64_t n = 0;
  while (has_tensor(file, prefix + std::to_string(n) + "." + leaf)) ++n;
  return n;
}

// The highest k with a features.k.* tensor: EfficientNet's head conv.
int64_t last_feature(const TensorMap& file) {
  static const std::regex features(R"(features\.(\d+)\..*)");
  int64_t last = -1;
  std::smatch m;
  for (const auto& [name, t] : file)
    if (std::regex_match(name, m, features)) last = std::max<int64_t>(last, std::stoi(m[1].str()));
  return last;
}

// torchvision's efficientnet_b0..b7 (told apart by the head conv's width; b0 and b1 by the depth of the second
// stage) and efficientnet_v2_s/m/l (a full 3x3 conv opens the first stage, where V1 has a depthwise one).
TorchvisionArch efficientnet_arch(const TensorMap& file) {
  TorchvisionArch a{"efficientnet", "", ""};
  const int64_t stem = file.at("features.0.0.weight").size(0);
  const bool v2 = file.at("features.1.0.block.0.0.weight").size(1) > 1;
  if (v2) {
    a.name = stem == 32 ? "efficientnet_v2_l" : last_feature(file) == 7 ? "efficientnet_v2_s" : "efficientnet_v2_m";
    a.network = a.name;
    return a;
  }
  const std::string head = "features." + std::to_string(last_feature(file)) + ".0.weight";
  static const std::map<int64_t, int> by_width{{1280, 0}, {1408, 2}, {1536, 3}, {1792, 4},
                                               {2048, 5}, {2304, 6}, {2560, 7}};
  auto it = has_tensor(file, head) ? by_width.find(file.at(head).size(0)) : by_width.end();
  if (it == by_width.end()) return a;  // not a width torchvision builds: the shapes decide
  int b = it->second;
  if (b == 0 && count_indexed(file, "features.2.", "block.0.0.weight") > 2) b = 1;
  a.name = "efficientnet_b" + std::to_string(b);
  a.network = (b >= 5 ? "tv_" : "") + a.name;  // b5..b7: TF's weights for PyTorch's padding with eps 1e-3
  return a;
}

TorchvisionArch convnext_arch(const TensorMap& file) {
  const int64_t dim = file.at("features.0.0.weight").size(0);
  const int64_t third = count_indexed(file, "features.5.", "block.0.weight");
  const std::string size = dim == 96    ? (third <= 9 ? "tiny" : "small")
                           : dim == 128 ? "base"
                           : dim == 192 ? "large"
                                        : "";
  return {"convnext", size.empty() ? "" : "convnext_" + size, size.empty() ? "" : "convnext_" + size};
}

TorchvisionArch vit_arch(const TensorMap& file) {
  const auto& proj = file.at("conv_proj.weight");  // [dim, 3, patch, patch]
  const int64_t dim = proj.size(0), patch = proj.size(2);
  static const std::map<std::pair<int64_t, int64_t>, std::pair<std::string, std::string>> known{
      {{768, 16}, {"vit_b_16", "vit_base_patch16_224"}},
      {{768, 32}, {"vit_b_32", "vit_base_patch32_224"}},
      {{1024, 16}, {"vit_l_16", "vit_large_patch16_224"}},
      {{1024, 32}, {"vit_l_32", ""}},
      {{1280, 14}, {"vit_h_14", ""}}};
  auto it = known.find({dim, patch});
  if (it == known.end()) return {"vit", "", ""};
  return {"vit", it->second.first, it->second.second};
}

TorchvisionArch swin_arch(const TensorMap& file) {
  if (has_tensor(file, "features.1.0.attn.cpb_mlp.0.weight")) return {"swin", "swin_v2", ""};  // no kgtrain network
  const int64_t dim = file.at("features.0.0.weight").size(0);
  const int64_t third = count_indexed(file, "features.5.", "norm1.weight");
  if (dim == 96)
    return third <= 6 ? TorchvisionArch{"swin", "swin_t", "swin_tiny_patch4_window7_224"}
                      : TorchvisionArch{"swin", "swin_s", "swin_small_patch4_window7_224"};
  if (dim == 128) return {"swin", "swin_b", "swin_base_patch4_window7_224"};
  return {"swin", "", ""};
}

// torchvision MBConv children -> timm names. Blocks without expansion (torchvision's stage 1, timm's
// DepthwiseSeparableConv) hold [dw, se, project]; the others [expand, dw, se, project]. V2's FusedMBConv holds
// [conv] (timm's ConvBnAct, the first stage) or [expanding conv, project] (timm's EdgeResidual).
const std::map<std::string, std::string> kDepthwiseSeparable{{"0.0", "conv_dw"},          {"0.1", "bn1"},
                                                             {"1.fc1", "se.conv_reduce"}, {"1.fc2", "se.conv_expand"},
                                                             {"2.0", "conv_pw"},          {"2.1", "bn2"}};
const std::map<std::string, std::string> kInvertedResidual{
    {"0.0", "conv_pw"},          {"0.1", "bn1"},      {"1.0", "conv_dw"}, {"1.1", "bn2"}, {"2.fc1", "se.conv_reduce"},
    {"2.fc2", "se.conv_expand"}, {"3.0", "conv_pwl"}, {"3.1", "bn3"}};
const std::map<std::string, std::string> kConvBnAct{{"0.0", "conv"}, {"0.1", "bn1"}};
const std::map<std::string, std::string> kEdgeResidual{
    {"0.0", "conv_exp"}, {"0.1", "bn1"}, {"1.0", "conv_pwl"}, {"1.1", "bn2"}};

const std::map<std::string, std::string>& mbconv_table(const TensorMap& file, const std::string& block) {
  if (has_tensor(file, block + "3.0.weight")) return kInvertedResidual;
  if (has_tensor(file, block + "1.fc1.weight")) return kDepthwiseSeparable;
  if (has_tensor(file, block + "1.0.weight")) return kEdgeResidual;
  return kConvBnAct;
}

// torchvision efficientnet_b*, efficientnet_v2_*: features.0 = stem conv + BN, then the stages, the last features.k
// = head conv + BN, classifier.1 = the linear layer.
std::string efficientnet_name(const std::string& tv, const TensorMap& file, const std::string& head) {
  static const std::regex stem(R"(features\.0\.([01])\.(\w+))"), last(R"(features\.(\d+)\.([01])\.(\w+))"),
      classifier(R"(classifier\.1\.(\w+))"), block(R"(features\.(\d+)\.(\d+)\.block\.(\d+\.(?:\d+|fc1|fc2))\.(\w+))");
  std::smatch m;
  if (std::regex_match(tv, m, stem)) return (m[1] == "0" ? "conv_stem." : "bn1.") + m[2].str();
  if (std::regex_match(tv, m, last) && m[1].str() == head) return (m[2] == "0" ? "conv_head." : "bn2.") + m[3].str();
  if (std::regex_match(tv, m, classifier)) return "classifier." + m[1].str();
  if (std::regex_match(tv, m, block)) {
    const auto& table = mbconv_table(file, "features." + m[1].str() + "." + m[2].str() + ".block.");
    auto it = table.find(m[3].str());
    if (it != table.end())
      return "blocks." + std::to_string(std::stoi(m[1].str()) - 1) + "." + m[2].str() + "." + it->second + "." +
             m[4].str();
  }
  return tv;
}

// torchvision convnext_*: features.0 = stem, odd features = stages (block.0 dw conv, block.2 LayerNorm, block.3 and
// block.5 the MLP, layer_scale), even features 2, 4, 6 = downsamples, classifier.0 = LayerNorm2d, classifier.2 = fc.
std::string convnext_name(const std::string& tv) {
  static const std::regex stem(R"(features\.0\.([01])\.(\w+))"),
      block(R"(features\.([1357])\.(\d+)\.(block\.\d|layer_scale)(\.\w+)?)"),
      down(R"(features\.([246])\.([01])\.(\w+))"), classifier(R"(classifier\.([02])\.(\w+))");
  static const std::map<std::string, std::string> parts{{"block.0", "conv_dw"},
                                                        {"block.2", "norm"},
                                                        {"block.3", "mlp.fc1"},
                                                        {"block.5", "mlp.fc2"},
                                                        {"layer_scale", "gamma"}};
  std::smatch m;
  if (std::regex_match(tv, m, stem)) return "stem." + m[1].str() + "." + m[2].str();
  if (std::regex_match(tv, m, block) && parts.count(m[3].str()))
    return "stages." + std::to_string((std::stoi(m[1].str()) - 1) / 2) + ".blocks." + m[2].str() + "." +
           parts.at(m[3].str()) + m[4].str();
  if (std::regex_match(tv, m, down))
    return "stages." + std::to_string(std::stoi(m[1].str()) / 2) + ".downsample." + m[2].str() + "." + m[3].str();
  if (std::regex_match(tv, m, classifier)) return std::string(m[1] == "0" ? "head.norm." : "head.fc.") + m[2].str();
  return tv;
}

// torchvision vit_*: conv_proj, class_token, encoder.pos_embedding, encoder.layers.encoder_layer_<i>.{ln_1,
// self_attention.in_proj_* (q, k, v stacked as timm's qkv), self_attention.out_proj, ln_2, mlp.0, mlp.3 (before
// torchvision 0.13: mlp.linear_1, mlp.linear_2)}, encoder.ln, heads.head.
std::string vit_name(const std::string& tv) {
  static const std::regex layer(R"(encoder\.layers\.encoder_layer_(\d+)\.(.+)\.(\w+))");
  static const std::map<std::string, std::string> parts{
      {"ln_1", "norm1"},          {"ln_2", "norm2"},    {"self_attention.out_proj", "attn.proj"},
      {"mlp.0", "mlp.fc1"},       {"mlp.3", "mlp.fc2"}, {"mlp.linear_1", "mlp.fc1"},
      {"mlp.linear_2", "mlp.fc2"}};
  static const std::map<std::string, std::string> whole{{"class_token", "cls_token"},
                                                        {"encoder.pos_embedding", "pos_embed"},
                                                        {"conv_proj.weight", "patch_embed.proj.weight"},
                                                        {"conv_proj.bias", "patch_embed.proj.bias"},
                                                        {"encoder.ln.weight", "norm.weight"},
                                                        {"encoder.ln.bias", "norm.bias"},
                                                        {"heads.head.weight", "head.weight"},
                                                        {"heads.head.bias", "head.bias"}};
  if (auto it = whole.find(tv); it != whole.end()) return it->second;
  std::smatch m;
  if (!std::regex_match(tv, m, layer)) return tv;
  const std::string block = "blocks." + m[1].str() + ".", part = m[2].str(), leaf = m[3].str();
  if (part == "self_attention" && (leaf == "in_proj_weight" || leaf == "in_proj_bias"))
    return block + "attn.qkv." + (leaf == "in_proj_weight" ? "weight" : "bias");
  auto it = parts.find(part);
  return it == parts.end() ? tv : block + it->second + "." + leaf;
}

// torchvision swin_t/s/b: features.0 = patch embedding (conv, permute, LayerNorm), odd features = stages (blocks
// norm1, attn.{qkv, proj, relative_position_bias_table}, norm2, mlp.0, mlp.3), even features 2, 4, 6 = patch merging
// (timm's downsample at the start of the next stage), norm, head.
std::string swin_name(const std::string& tv) {
  static const std::regex embed(R"(features\.0\.([02])\.(\w+))"), block(R"(features\.([1357])\.(\d+)\.(.+))"),
      merge(R"(features\.([246])\.(reduction|norm)\.(\w+))");
  static const std::map<std::string, std::string> mlp{{"mlp.0.", "mlp.fc1."}, {"mlp.3.", "mlp.fc2."}};
  std::smatch m;
  if (std::regex_match(tv, m, embed))
    return std::string("patch_embed.") + (m[1] == "0" ? "proj." : "norm.") + m[2].str();
  if (std::regex_match(tv, m, block)) {
    std::string rest = m[3].str();
    for (const auto& [from, to] : mlp)
      if (starts_with(rest, from)) rest = to + rest.substr(from.size());
    return "layers." + std::to_string((std::stoi(m[1].str()) - 1) / 2) + ".blocks." + m[2].str() + "." + rest;
  }
  if (std::regex_match(tv, m, merge))
    return "layers." + std::to_string(std::stoi(m[1].str()) / 2) + ".downsample." + m[2].str() + "." + m[3].str();
  if (tv == "head.weight" || tv == "head.bias") return "head.fc." + tv.substr(5);
  return tv;
}

// timm's name for a network of the same computation: the image size a ViT or Swin is built for is not part of it,
// and DeiT (not DeiT III) is ViT's network with other weights.
std::string computation(std::string name) {
  for (const char* size : {"_224", "_384"})
    if (ends_with(name, size)) name.resize(name.size() - 4);
  if (starts_with(name, "deit_")) name = "vit_" + name.substr(5);
  return name;
}

// The family's state_dict names in `model_names`: the renaming applies.
bool model_is(const std::string& family, const std::set<std::string>& model_names) {
  auto in = [&](const char* a, const char* b) { return model_names.count(a) && model_names.count(b); };
  if (family == "efficientnet") return in("conv_stem.weight", "blocks.0.0.bn1.weight");
  if (family == "convnext") return in("stem.0.weight", "stages.0.blocks.0.conv_dw.weight");
  if (family == "vit") return in("cls_token", "blocks.0.attn.qkv.weight");
  return in("patch_embed.proj.weight", "layers.0.blocks.0.attn.qkv.weight");  // swin
}

}  // namespace

std::optional<TorchvisionArch> torchvision_arch(const TensorMap& file) {
  if (has_tensor(file, "conv_proj.weight") && has_tensor(file, "encoder.pos_embedding")) return vit_arch(file);
  if (!has_tensor(file, "features.0.0.weight")) return std::nullopt;
  if (has_tensor(file, "features.1.0.attn.qkv.weight")) return swin_arch(file);
  if (has_tensor(file, "features.1.0.block.0.0.weight")) return efficientnet_arch(file);
  if (has_tensor(file, "features.1.0.block.0.weight")) return convnext_arch(file);
  return std::nullopt;
}

std::optional<Renamed> from_torchvision(const TensorMap& file, const std::set<std::string>& model_names,
                                        const std::string& model) {
  const auto arch = torchvision_arch(file);
  // A network with torchvision's own names (a TorchScript file traced from torchvision) takes the file as it is.
  if (!arch || model_names.count("features.0.0.weight") || model_names.count("conv_proj.weight")) return std::nullopt;
  const std::string what = "torchvision's " + (arch->name.empty() ? arch->family : arch->name) + " weights";
  if (!model.empty() && computation(model) != computation(arch->network)) {
    KG_CHECK(!arch->network.empty(), ConfigError, "these are ", what, ", and kgtrain has no network that computes ",
             arch->name.empty() ? "them" : arch->name, " (model.name = \"", model, "\")");
    std::string why;
    if (starts_with(arch->network, "tv_") || starts_with(arch->name, "efficientnet_v2"))
      why =
          " (TF's weights for BatchNorm eps 1e-3 with PyTorch's padding: timm's efficientnet* use eps 1e-5 and its "
          "tf_* TF's \"same\" padding, so they would load without an error and compute other features)";
    else if (starts_with(model, "tf_"))
      why =
          " (PyTorch's padding and BatchNorm eps 1e-5, where the tf_ network has TF's \"same\" padding and eps 1e-3: "
          "they would load without an error and compute other features)";
    throw ConfigError(what + " are computed by model.name = \"" + arch->network + "\", not \"" + model + "\"" + why);
  }
  if (!model_is(arch->family, model_names)) return std::nullopt;
  const std::string head = std::to_string(last_feature(file));
  Renamed r;
  for (const auto& [name, t] : file) {
    if (arch->family == "swin" && ends_with(name, ".relative_position_index")) continue;  // timm computes it
    std::string to = arch->family == "efficientnet" ? efficientnet_name(name, file, head)
                     : arch->family == "convnext"   ? convnext_name(name)
                     : arch->family == "vit"        ? vit_name(name)
                                                    : swin_name(name);
    const bool gamma = arch->family == "convnext" && ends_with(to, ".gamma");
    r.tensors[to] = gamma ? t.reshape({-1}) : t;  // layer_scale [C, 1, 1] -> gamma [C]
  }
  r.note = what.substr(0, what.size() - 8) + " names mapped to timm's";
  return r;
}

}  // namespace kg::model
