#include "model/text/encoder.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "core/error.h"
#include "model/grad_checkpoint.h"
#include "model/text/text_layers.h"
#include "model/weights/torch_save.h"

namespace kg::model::text {

namespace {
// "encoder.layer.1.x" is in "encoder.layer.1", "encoder.layer.10.x" is not.
bool text_in_module(const std::string& name, const std::string& prefix) {
  return name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 && name[prefix.size()] == '.';
}

std::map<std::string, TextFamily>& text_families() {
  static std::map<std::string, TextFamily> m;
  return m;
}
std::vector<std::string>& text_family_duplicates() {
  static std::vector<std::string> d;
  return d;
}

std::string text_shape_str(at::IntArrayRef s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}
}  // namespace

void TextEncoder::add_group(std::string name, std::vector<std::string> prefixes) {
  groups_.emplace_back(std::move(name), std::move(prefixes));
}

std::vector<LayerGroup> TextEncoder::layer_groups() const {
  std::vector<LayerGroup> out;
  for (const auto& [g, prefixes] : groups_) out.push_back({g, {}});
  for (const auto& p : named_parameters(true)) {
    const std::string& name = p.key();
    LayerGroup* dst = nullptr;
    for (size_t i = 0; i < groups_.size() && !dst; ++i)
      for (const auto& pre : groups_[i].second)
        if (text_in_module(name, pre)) dst = &out[i];
    KG_ASSERT(dst, "parameter ", name, " belongs to no layer group of the ", shape_.model_type, " encoder");
    dst->params.emplace_back(name, p.value());
  }
  return out;
}

std::vector<std::string> TextEncoder::group_names() const {
  std::vector<std::string> names;
  for (const auto& [g, p] : groups_) names.push_back(g);
  return names;
}

at::Tensor TextEncoder::run_layer(const std::shared_ptr<torch::nn::Module>& stage,
                                  const std::function<at::Tensor(const at::Tensor&)>& fn, const at::Tensor& x) {
  if (grad_checkpointing_ && is_training() && at::GradMode::is_enabled()) return checkpoint(stage, fn, x);
  return fn(x);
}

std::vector<at::Tensor> TextEncoder::run_packed_layers(const TokenLayout& layout, const at::Tensor& embeddings,
                                                       size_t count, const std::function<PackedLayer(size_t)>& layer,
                                                       const std::function<at::Tensor(const at::Tensor&)>& finish) {
  at::Tensor x = layout.pack(embeddings);
  std::vector<at::Tensor> hidden;
  for (size_t i = 0; i < count; ++i) {
    hidden.push_back(layout.unpack(x));
    const PackedLayer l = layer(i);
    x = run_layer(l.stage, l.fn, x);
    if (l.post) x = l.post(hidden.back(), x);
  }
  if (finish) x = finish(x);
  hidden.push_back(layout.unpack(x));
  return hidden;
}

void TextEncoder::check_inputs(const at::Tensor& ids, const at::Tensor& mask, const at::Tensor& types) const {
  KG_CHECK(ids.defined() && ids.dim() == 2 && !ids.is_floating_point(), DataError, shape_.model_type,
           " encoder: input_ids must be integer [batch, length], got ",
           ids.defined() ? text_shape_str(ids.sizes()) + " " + std::string(c10::toString(ids.scalar_type())) : "none");
  KG_CHECK(shape_.max_positions <= 0 || ids.size(1) <= shape_.max_positions, DataError, shape_.model_type,
           " encoder: sequences of ", ids.size(1), " tokens exceed its ", shape_.max_positions,
           " positions (config.json max_position_embeddings)");
  if (ids.is_cpu() && ids.numel() > 0) {
    const int64_t lo = ids.min().item<int64_t>(), hi = ids.max().item<int64_t>();
    KG_CHECK(lo >= 0 && hi < shape_.vocab_size, DataError, shape_.model_type, " encoder: token id ", lo < 0 ? lo : hi,
             " is outside its vocabulary of ", shape_.vocab_size,
             " (config.json vocab_size): the tokenizer does not match the model");
  }
  KG_CHECK(!mask.defined() || mask.sizes() == ids.sizes(), DataError, shape_.model_type, " encoder: attention_mask ",
           text_shape_str(mask.sizes()), " does not match input_ids ", text_shape_str(ids.sizes()));
  KG_CHECK(!types.defined() || types.sizes() == ids.sizes(), DataError, shape_.model_type, " encoder: token_type_ids ",
           text_shape_str(types.sizes()), " does not match input_ids ", text_shape_str(ids.sizes()));
}

void check_vocabulary(const TextEncoder& enc, int64_t tokenizer_size, const std::string& where) {
  KG_CHECK(tokenizer_size <= enc.shape().vocab_size, ConfigError, where, ": the tokenizer has ", tokenizer_size,
           " tokens but the ", enc.shape().model_type, " encoder's embeddings have ", enc.shape().vocab_size,
           " rows (config.json vocab_size)");
}

bool register_text_family(TextFamily family) {
  auto& m = text_families();
  if (m.count(family.model_type)) {
    text_family_duplicates().push_back(family.model_type);
    return false;
  }
  std::string key = family.model_type;
  m.emplace(std::move(key), std::move(family));
  return true;
}

std::vector<std::string> text_family_names() {
  KG_ASSERT(text_family_duplicates().empty(), "text family registered twice: ", text_family_duplicates().front());
  std::vector<std::string> names;
  for (const auto& [n, f] : text_families()) names.push_back(n);
  return names;
}

const TextFamily& text_family(const HfConfig& cfg) {
  auto names = text_family_names();
  auto it = text_families().find(cfg.model_type());
  if (it != text_families().end()) return it->second;
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  std::string arch = cfg.has("architectures") ? " (architectures " + cfg.dump("architectures") + ")" : "";
  throw ConfigError(cfg.path() + ": model_type \"" + cfg.model_type() + "\"" + arch +
                    " is not an encoder architecture kgtrain knows (known: " + known + ")");
}

TextEncoderPtr build_text_encoder(const HfConfig& cfg) {
  TextEncoderPtr enc = text_family(cfg).make(cfg);
  KG_ASSERT(enc && enc->shape().model_type == cfg.model_type(), "family ", cfg.model_type(), " built no encoder");
  return enc;
}

namespace {
bool is_skipped_buffer(const std::string& name) {
  static const std::vector<std::string> buffers{"position_ids", "token_type_ids"};
  for (const auto& b : buffers)
    if (name == b || (name.size() > b.size() && name.compare(name.size() - b.size() - 1, b.size() + 1, "." + b) == 0))
      return true;
  return false;
}

// The prefix a task model's save puts before the encoder's names ("deberta.", "module.bert."): what stands before
// the word embeddings' name, when the bare name is absent.
std::string find_prefix(const TensorMap& tensors, const std::string& word_name) {
  if (tensors.count(word_name)) return "";
  for (const auto& [name, t] : tensors) {
    if (name.size() <= word_name.size() || name.compare(name.size() - word_name.size(), word_name.size(), word_name))
      continue;
    std::string prefix = name.substr(0, name.size() - word_name.size());
    if (prefix.back() == '.') return prefix;
  }
  return "";
}

std::string gamma_beta_renamed(const std::string& name) {
  auto ends = [&](const std::string& s) {
    return name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  if (ends(".gamma")) return name.substr(0, name.size() - 6) + ".weight";
  if (ends(".beta")) return name.substr(0, name.size() - 5) + ".bias";
  return name;
}
}  // namespace

LoadReport load_hf_state_dict(TextEncoder& enc, const TensorMap& tensors, const std::string& source, bool strict) {
  LoadReport report;
  auto params = enc.named_parameters(true);
  const std::string prefix = find_prefix(tensors, enc.word_embeddings_name());
  if (!prefix.empty()) report.renamed.push_back(prefix);
  std::set<std::string> seen;
  torch::NoGradGuard no_grad;
  for (const auto& [file_name, t] : tensors) {
    if (file_name.compare(0, prefix.size(), prefix) != 0) {
      report.unexpected.push_back(file_name);  // a task head ("classifier.weight") or another model's part
      continue;
    }
    std::string name = file_name.substr(prefix.size());
    if (!params.contains(name) && params.contains(gamma_beta_renamed(name))) name = gamma_beta_renamed(name);
    if (!params.contains(name)) {
      if (!is_skipped_buffer(name)) report.unexpected.push_back(file_name);
      continue;
    }
    at::Tensor& p = params[name];
    if (p.sizes() != t.sizes()) {
      std::string what = source + ": " + file_name + " is " + text_shape_str(t.sizes()) + " in the file but " +
                         text_shape_str(p.sizes()) + " in the " + enc.shape().model_type +
                         " encoder config.json describes";
      if (name == enc.word_embeddings_name())
        what += " (vocabulary: config.json vocab_size " + std::to_string(enc.shape().vocab_size) + ", the file's " +
                std::to_string(t.size(0)) + " embedding rows)";
      throw CheckpointError(what);
    }
    KG_CHECK(t.is_floating_point(), CheckpointError, source, ": ", file_name, " is ", c10::toString(t.scalar_type()),
             ", not a floating-point tensor");
    p.copy_(t.to(p.device(), p.scalar_type()));
    seen.insert(name);
    ++report.loaded;
  }
  for (const auto& p : params)
    if (!seen.count(p.key())) report.missing.push_back(p.key());
  if (strict && (!report.missing.empty() || !report.unexpected.empty()))
    throw CheckpointError(source + ": does not match the " + enc.shape().model_type +
                          " encoder exactly: " + report.str());
  return report;
}

std::pair<TensorMap, std::string> read_hf_weights(const std::string& folder) {
  namespace fs = std::filesystem;
  const fs::path dir(folder);
  if (fs::exists(dir / "model.safetensors")) {
    std::string path = (dir / "model.safetensors").string();
    return {read_safetensors(path), path};
  }
  if (fs::exists(dir / "model.safetensors.index.json")) {
    std::string path = (dir / "model.safetensors.index.json").string();
    std::ifstream in(path);
    nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    KG_CHECK(!j.is_discarded() && j.contains("weight_map") && j["weight_map"].is_object(), CheckpointError, path,
             ": not a safetensors index (no weight_map)");
    std::set<std::string> shards;
    for (const auto& [name, file] : j["weight_map"].items()) shards.insert(file.get<std::string>());
    TensorMap all;
    for (const auto& s : shards)
      for (auto& [name, t] : read_safetensors((dir / s).string())) all.emplace(name, std::move(t));
    return {std::move(all), path};
  }
  if (fs::exists(dir / "pytorch_model.bin")) {
    std::string path = (dir / "pytorch_model.bin").string();
    return {read_torch_save(path).tensors, path};
  }
  throw CheckpointError(folder + ": no model.safetensors, model.safetensors.index.json or pytorch_model.bin");
}

LoadedTextEncoder load_text_encoder(const std::string& folder, bool strict) {
  const std::string cfg_path = (std::filesystem::path(folder) / "config.json").string();
  HfConfig cfg = HfConfig::read(cfg_path);
  LoadedTextEncoder out;
  out.encoder = build_text_encoder(cfg);
  auto [tensors, path] = read_hf_weights(folder);
  out.weights_file = path;
  out.report = load_hf_state_dict(*out.encoder, tensors, path, strict);
  return out;
}

}  // namespace kg::model::text
