#include "model/torchvision_names.h"

#include <map>
#include <regex>

#include <torch/torch.h>

#include "core/error.h"

namespace kg::model {
namespace {

// torchvision MBConv children -> timm names. Blocks without expansion (torchvision's stage 1, timm's
// DepthwiseSeparableConv) hold [dw, se, project]; the others [expand, dw, se, project].
const std::map<std::string, std::string> kDepthwiseSeparable{{"0.0", "conv_dw"},          {"0.1", "bn1"},
                                                             {"1.fc1", "se.conv_reduce"}, {"1.fc2", "se.conv_expand"},
                                                             {"2.0", "conv_pw"},          {"2.1", "bn2"}};
const std::map<std::string, std::string> kInvertedResidual{
    {"0.0", "conv_pw"},          {"0.1", "bn1"},      {"1.0", "conv_dw"}, {"1.1", "bn2"}, {"2.fc1", "se.conv_reduce"},
    {"2.fc2", "se.conv_expand"}, {"3.0", "conv_pwl"}, {"3.1", "bn3"}};

// torchvision efficientnet_b0..b7: features.0 = stem conv + BN, features.1..7 = the stages, features.8 = head conv +
// BN, classifier.1 = the linear layer.
std::string efficientnet_name(const std::string& tv, const TensorMap& file) {
  static const std::regex stem(R"(features\.0\.([01])\.(\w+))"), head(R"(features\.8\.([01])\.(\w+))"),
      classifier(R"(classifier\.1\.(\w+))"), block(R"(features\.(\d+)\.(\d+)\.block\.(\d+\.(?:\d+|fc1|fc2))\.(\w+))");
  std::smatch m;
  if (std::regex_match(tv, m, stem)) return (m[1] == "0" ? "conv_stem." : "bn1.") + m[2].str();
  if (std::regex_match(tv, m, head)) return (m[1] == "0" ? "conv_head." : "bn2.") + m[2].str();
  if (std::regex_match(tv, m, classifier)) return "classifier." + m[1].str();
  if (std::regex_match(tv, m, block)) {
    const std::string prefix = "features." + m[1].str() + "." + m[2].str() + ".block.";
    const bool expands = file.count(prefix + "3.0.weight") > 0;  // four children: an inverted residual
    const auto& table = expands ? kInvertedResidual : kDepthwiseSeparable;
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

}  // namespace

std::optional<Renamed> from_torchvision(const TensorMap& file, const std::set<std::string>& model_names) {
  if (!file.count("features.0.0.weight")) return std::nullopt;
  const bool efficientnet = model_names.count("conv_stem.weight") && model_names.count("blocks.0.0.conv_dw.weight");
  const bool convnext = model_names.count("stem.0.weight") && model_names.count("stages.0.blocks.0.conv_dw.weight");
  if (!efficientnet && !convnext) return std::nullopt;
  // torchvision's efficientnet_b5..b7 (stems of 48, 56, 64 channels) hold TF-ported weights for BatchNorm eps 1e-3
  // with PyTorch's padding: neither timm's efficientnet_b* (eps 1e-5) nor its tf_ port ("same" padding) computes
  // their features, so they would load without an error into the wrong network.
  KG_CHECK(
      !efficientnet || file.at("features.0.0.weight").size(0) < 48, CheckpointError,
      "these are torchvision's efficientnet_b5/b6/b7 weights, made for BatchNorm eps 1e-3 with PyTorch's padding: "
      "kgtrain's efficientnet_b* use eps 1e-5 and its tf_efficientnet_b* TF's \"same\" padding, so neither computes "
      "their features; use timm's weights for tf_efficientnet_b5..b7 or efficientnet_b5..b7 instead");
  Renamed r;
  for (const auto& [name, t] : file) {
    const std::string to = efficientnet ? efficientnet_name(name, file) : convnext_name(name);
    const bool gamma = convnext && to.size() > 6 && to.compare(to.size() - 6, 6, ".gamma") == 0;
    r.tensors[to] = gamma ? t.reshape({-1}) : t;  // layer_scale [C, 1, 1] -> gamma [C]
  }
  r.note = std::string("torchvision's ") + (efficientnet ? "efficientnet" : "convnext") + " names mapped to timm's";
  return r;
}

}  // namespace kg::model
