#include "model/model.h"

#include <torch/torch.h>

#include "config/sections.h"
#include "core/error.h"
#include "core/strings.h"
#include "model/batchnorm.h"
#include "model/grad_checkpoint.h"
#include "model/weights/weights.h"

namespace kg::model {

ModelRegistry& model_registry() {
  static ModelRegistry r("model");
  return r;
}

namespace {
config::Fields<ModelOptions> model_fields() {
  auto positive_list = [](const config::json& v) -> std::string {
    for (auto& x : v)
      if (!x.is_number_integer() || x.get<int64_t>() < 1)
        return "expected a list of positive layer sizes, got " + v.dump();
    return "";
  };
  config::Fields<ModelOptions> f;
  f.field("name", &ModelOptions::name, "network architecture (see kgtrain show --list)").kind("model");
  f.field("pretrained", &ModelOptions::pretrained,
          "initial weights with timm/torchvision names: a safetensors or torch.save (.pth/.pt/.bin; a state dict, or a "
          "checkpoint holding one; never run as code) file, or a Hugging Face timm folder (config.json, whose "
          "architecture must be model.name); a differing head is re-initialised, the first conv adapted to "
          "data.channels; \"\" = random init. A text model (model.name = a config.json model_type: bert, deberta-v2, "
          "...) requires it: the Hugging Face folder it is built from (config.json + model.safetensors or "
          "pytorch_model.bin)");
  f.field("pretrained_strict", &ModelOptions::pretrained_strict,
          "fail when a backbone tensor of model.pretrained is missing or unexpected (default: report and go on)");
  f.field("drop_rate", &ModelOptions::drop_rate, "dropout before the classifier (timm drop_rate)").range(0, 0.99);
  f.field("multi_sample_dropout.samples", &ModelOptions::msd_samples,
          "multi-sample dropout (Inoue 2019, Kaggle NLP heads): in training the classifier runs on this many dropout "
          "masks of its input and the logits are averaged; evaluation runs it once without dropout (0 = off; replaces "
          "drop_rate)")
      .range(0, 64);
  f.field("multi_sample_dropout.p", &ModelOptions::msd_p, "multi-sample dropout: each mask's drop probability")
      .range(0, 0.99);
  f.field("drop_path_rate", &ModelOptions::drop_path_rate,
          "stochastic depth: per-block drop probability rising linearly from 0 to about this value over the blocks, as "
          "in timm (resnet18+, efficientnet, convnext)")
      .range(0, 0.99);
  f.field("global_pool", &ModelOptions::global_pool,
          "pooling before the head; \"\" = the family's own (avg; max for resnet9)")
      .choices({"", "avg", "max", "avgmax", "catavgmax"});
  f.field("head_hidden", &ModelOptions::head_hidden,
          "hidden layer sizes of a fastai create_head head (BatchNorm, dropout, linear, ReLU each), e.g. [512]; [] = "
          "one linear layer")
      .check(positive_list);
  f.field("head_dropout", &ModelOptions::head_dropout,
          "fastai ps with head_hidden: dropout before the last linear layer (half before hidden ones)")
      .range(0, 0.99);
  f.field("feature_hidden", &ModelOptions::feature_hidden,
          "MLP layer sizes that data.feature_cols pass through before joining the pooled image features; [] = joined "
          "directly (after BatchNorm)")
      .check(positive_list);
  f.field("grad_checkpointing", &ModelOptions::grad_checkpointing,
          "recompute each stage's activations during backward: less activation memory, about a third more compute");
  f.field("fused_bn", &ModelOptions::fused_bn,
          "training: BatchNorm + residual add + ReLU as one fused autograd node instead of three ops (ResNet, "
          "ResNeXt, Wide ResNet, resnet9; float32 on the CPU, channels_last float32/bfloat16/float16 on CUDA; "
          "anything else runs the eager ops); false = the eager ops");
  f.field("y_range", &ModelOptions::y_range,
          "regression: [low, high]: the output is low + (high - low) * sigmoid(x), fastai's y_range (with "
          "data.target_transform = \"log1p\" the sigmoid spans log1p(low)..log1p(high)); [] = unbounded")
      .check([](const config::json& v) -> std::string {
        if (v.empty()) return "";
        if (v.size() != 2 || !v[0].is_number() || !v[1].is_number() || !(v[0].get<double>() < v[1].get<double>()))
          return "expected [low, high] with low < high, got " + v.dump();
        return "";
      });
  return f;
}
KG_REGISTER_SECTION("model", "the network", model_fields().schema(), "model");
}  // namespace

ModelOptions ModelOptions::load(const config::Tree& recipe) {
  return model_fields().load(config::Options(&recipe, "model"));
}
std::string model_name(const config::Recipe& recipe) { return recipe.get<ModelOptions>().name; }

int64_t LayerGroup::numel() const {
  int64_t n = 0;
  for (auto& [name, t] : params) n += t.numel();
  return n;
}

at::Tensor Network::forward(const Inputs& in) {
  if (!channels_last_ || !in.pixels.defined() || in.pixels.dim() != 4)
    return forward_head(forward_backbone(in), in.features);
  Inputs nhwc = in;
  nhwc.pixels = in.pixels.contiguous(at::MemoryFormat::ChannelsLast);
  return forward_head(forward_backbone(nhwc), in.features);
}

at::Tensor Network::forward(const at::Tensor& x, const at::Tensor& features) {
  return forward(Inputs::image(x, features));
}

at::Tensor Network::forward_backbone(const Inputs& in) {
  KG_CHECK(in.pixels.defined(), ConfigError, "model ", arch_.empty() ? std::string("this network") : arch_,
           " takes images; this batch has ", in.is_text() ? "token ids (text)" : "no input");
  return forward_features(in.pixels);
}

at::Tensor Network::forward_head(const at::Tensor& feature_map, const at::Tensor& features) {
  return head_.forward(pre_logits(global_pool(feature_map, pool_)), features);
}

void Network::add_group(std::string name, std::vector<std::string> prefixes) {
  groups_.emplace_back(std::move(name), std::move(prefixes));
}

std::vector<LayerGroup> Network::layer_groups() const {
  std::vector<LayerGroup> out;
  for (auto& [g, prefixes] : groups_) out.push_back({g, {}});
  out.push_back({"head", {}});
  for (const auto& p : named_parameters(true)) {
    const std::string& name = p.key();
    LayerGroup* dst = nullptr;
    if (head_.owns(name)) {
      dst = &out.back();
    } else {
      for (size_t i = 0; i < groups_.size() && !dst; ++i)
        for (auto& pre : groups_[i].second)
          if (in_module(name, pre)) dst = &out[i];
    }
    KG_ASSERT(dst, "parameter ", name, " belongs to no layer group");
    dst->params.emplace_back(name, p.value());
  }
  return out;
}

std::vector<std::string> Network::group_names() const {
  std::vector<std::string> names;
  for (auto& [g, p] : groups_) names.push_back(g);
  names.push_back("head");
  return names;
}

bool Network::skips_weight_decay(const std::string& param) const {
  return std::find(no_weight_decay_.begin(), no_weight_decay_.end(), param) != no_weight_decay_.end();
}

void Network::finish(const ModelContext& ctx, torch::nn::Module& fc_parent, const std::string& fc_path,
                     const std::string& default_pool, const std::vector<std::string>& pools) {
  pool_ = ctx.model.global_pool.empty() ? default_pool : ctx.model.global_pool;
  if (pools.empty())
    KG_CHECK(known_pool(pool_), ConfigError, "model.global_pool: unknown pool \"", pool_,
             "\" (known: avg, max, avgmax, catavgmax)");
  else
    KG_CHECK(std::find(pools.begin(), pools.end(), pool_) != pools.end(), ConfigError, "model.global_pool: \"", pool_,
             "\" is not a pool of this model (it takes: ", join(pools, ", "), ")");
  int64_t width = 0;
  {
    // What nn.LazyLinear does in Python: one forward pass reveals the feature width.
    torch::NoGradGuard no_grad;
    bool was_training = is_training();
    eval();
    at::Tensor f = forward_backbone(dummy_inputs(ctx, 1, torch::kCPU));
    train(was_training);
    KG_CHECK(f.dim() == 4 || f.dim() == 2, DataError, "the backbone returned shape ", f.sizes(), " for a 1x",
             describe_input(ctx), " input; expected a feature map [N, C, H, W] or pooled features [N, C]");
    width = f.size(1) * (f.dim() == 4 ? pool_multiplier(pool_) : 1);
  }
  build_pre_logits(width);
  HeadSpec spec;
  spec.in_features = width;
  spec.num_outputs = ctx.num_outputs;
  spec.num_features = ctx.num_features;
  spec.hidden = ctx.model.head_hidden;
  spec.hidden_dropout = ctx.model.head_dropout;
  spec.feature_hidden = ctx.model.feature_hidden;
  spec.drop_rate = ctx.model.drop_rate;
  spec.msd_samples = ctx.model.msd_samples;
  spec.msd_p = ctx.model.msd_p;
  KG_CHECK(spec.msd_samples == 0 || spec.drop_rate == 0, ConfigError,
           "model.multi_sample_dropout.samples = ", spec.msd_samples, " drops the classifier's input ",
           "(multi_sample_dropout.p) and model.drop_rate = ", spec.drop_rate, " does too: set one of them");
  spec.target_transform = ctx.target_transform;
  spec.y_range = ctx.model.y_range;
  KG_CHECK(ctx.regression || ctx.target_transform == "none", ConfigError, "data.target_transform = \"",
           ctx.target_transform, "\" scales regression targets; this task has classes: set it to \"none\"");
  KG_CHECK(ctx.regression || ctx.model.y_range.empty(), ConfigError,
           "model.y_range bounds a regression output; this task has classes: set model.y_range = []");
  KG_CHECK(spec.num_outputs > 0, ConfigError, "the model needs at least one output (classes, labels or targets), got ",
           spec.num_outputs);
  head_.build(*this, fc_parent, fc_path, spec);
  grad_checkpointing_ = ctx.model.grad_checkpointing;
  // model.fused_bn: the BatchNorms a family runs through forward_act fuse their add and ReLU (model/bn_act.h).
  for (auto& m : modules(/*include_self=*/false))
    if (auto* bn = dynamic_cast<BatchNorm2dImpl*>(m.get())) bn->fused = ctx.model.fused_bn;
}

at::Tensor Network::run_stage(const std::shared_ptr<torch::nn::Module>& stage,
                              const std::function<at::Tensor(const at::Tensor&)>& fn, const at::Tensor& x) {
  if (grad_checkpointing_ && is_training() && at::GradMode::is_enabled()) return checkpoint(stage, fn, x);
  return fn(x);
}

void Network::set_channels_last(bool on) {
  torch::NoGradGuard no_grad;
  const auto fmt = on ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
  for (auto& p : parameters(true))
    if (p.dim() == 4) p.set_data(p.contiguous(fmt));
  for (auto& b : buffers(true))
    if (b.dim() == 4) b.set_data(b.contiguous(fmt));
  channels_last_ = on;
}

NetworkPtr build(const config::Recipe& recipe, ModelContext ctx) {
  config::Options opts = recipe.section("model");
  ctx.model = recipe.get<ModelOptions>();
  NetworkPtr net = with_context("while building model " + ctx.model.name,
                                [&] { return model_registry().create(ctx.model.name, opts, ctx); });
  net->set_arch(ctx.model.name);
  // A text family loads its own folder (config.json, weights) while it is built, and reports it.
  if (!ctx.model.pretrained.empty() && !net->pretrained_report())
    net->set_pretrained_report(
        load_pretrained(*net, ctx.model.pretrained, ctx.model.pretrained_strict, ctx.model.name));
  return net;
}

int64_t count_parameters(const torch::nn::Module& m, bool trainable_only) {
  int64_t n = 0;
  for (const auto& p : m.parameters())
    if (!trainable_only || p.requires_grad()) n += p.numel();
  return n;
}

}  // namespace kg::model
