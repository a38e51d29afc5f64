// Models: a registry of backbone families (resnet, efficientnet, convnext, torchscript, ...) built
// from `model.*` keys. Every network is backbone + head: the backbone's parameters keep timm's /
// torchvision's names (conv1, layer1.0.conv1, blocks.1.0.conv_dw, stages.0.blocks.0.mlp.fc1, ...) so
// weights move between kgtrain and Python; the head (pooling, optional hidden layers, numeric
// features, classifier) is sized by a dry forward pass at build time, as nn.LazyLinear would be.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>

#include "config/registry.h"
#include "config/recipe.h"
#include "model/head.h"
#include "model/inputs.h"
#include "model/weights/safetensors.h"

namespace kg::model {

// The keys every model shares (`[model]`); a family adds its own (resnet's small_input, ...).
// Recipe section [model]; each field's doc is in model_fields() (model/model.cpp) and docs/reference.md.
struct ModelOptions {
  static ModelOptions load(const config::Tree& recipe);  // recipe.get<ModelOptions>() decodes it once
  std::string name = "resnet9";
  std::string pretrained;
  bool pretrained_strict = false;
  double drop_rate = 0.0;
  int64_t msd_samples = 0;  // key multi_sample_dropout.samples
  double msd_p = 0.5;       // key multi_sample_dropout.p
  double drop_path_rate = 0.0;
  std::string global_pool;
  std::vector<int64_t> head_hidden;
  double head_dropout = 0.5;
  std::vector<int64_t> feature_hidden;
  bool grad_checkpointing = false;
  bool fused_bn = false;
  std::vector<double> y_range;
};

// What the data decides: input channels, outputs of the task, numeric features, image size.
struct ModelContext {
  int64_t in_chans = 3;      // data.channels
  int64_t num_outputs = 0;   // classes, labels or regression targets
  int64_t num_features = 0;  // data.feature_cols
  int64_t height = 64;       // input size for the build-time dry forward (and the summary)
  int64_t width = 64;
  // Text models (data.text_cols): the tokens per sample of a dry or trial forward, data.max_length; 0 = images.
  int64_t seq_len = 0;
  bool regression = false;                // data.task = "regression" (model.y_range, target_transform)
  std::string target_transform = "none";  // data.target_transform
  ModelOptions model;                     // the shared [model] keys
};

// A named set of parameters that trains together (fastai's layer groups): stem, stages, head.
struct LayerGroup {
  std::string name;
  std::vector<std::pair<std::string, at::Tensor>> params;
  int64_t numel() const;
};

class Network : public torch::nn::Module {
 public:
  // The model's inputs (pixels or token ids, + features [N, F] when the model takes data.feature_cols) -> outputs
  // [N, num_outputs]. A network whose outputs are not one row per sample overrides it (model/text/mlm.h: one row
  // per predicted token).
  virtual at::Tensor forward(const Inputs& in);
  // An image batch [N, C, H, W] (+ features): forward(Inputs::image(x, features)).
  at::Tensor forward(const at::Tensor& x, const at::Tensor& features = {});
  // The backbone on the inputs: an image network's is forward_features(in.pixels); a network of another modality
  // overrides it.
  virtual at::Tensor forward_backbone(const Inputs& in);
  // The image backbone alone: a feature map [N, C, h, w] (or already pooled [N, C]).
  virtual at::Tensor forward_features(const at::Tensor& x) = 0;
  // The rest of forward() after forward_features: pooling, pre-logits, head (Grad-CAM differentiates it).
  at::Tensor forward_head(const at::Tensor& feature_map, const at::Tensor& features = {});

  // Stem first, head last; every parameter is in exactly one group.
  std::vector<LayerGroup> layer_groups() const;
  std::vector<std::string> group_names() const;
  const std::string& first_conv() const { return first_conv_; }       // "conv1.weight"; "" when there is none
  std::string classifier() const { return head_.classifier_name(); }  // "fc.weight"'s module: "fc"
  bool is_head_param(const std::string& name) const { return head_.owns(name); }
  int64_t num_features() const { return head_.in_features(); }  // pooled backbone width
  int64_t num_outputs() const { return head_.num_outputs(); }
  const std::string& pool() const { return pool_; }
  // Regression: data.target_transform / model.y_range (model/target_scale.h).
  TargetScale& target_scale() { return head_.target_scale(); }
  const TargetScale& target_scale() const { return head_.target_scale(); }

  void set_grad_checkpointing(bool on) { grad_checkpointing_ = on; }
  bool grad_checkpointing() const { return grad_checkpointing_; }
  // Converts 4-D parameters/buffers and every input to NHWC (channels_last) memory layout.
  void set_channels_last(bool on);
  bool channels_last() const { return channels_last_; }

  // Parameters timm's no_weight_decay() names (ViT's pos_embed, cls_token): no weight decay, as for biases.
  bool skips_weight_decay(const std::string& param) const;
  // A file's tensor of another shape than the model's, made to fit when the family knows how (ViT's pos_embed for
  // another image size); undefined when it does not. `note` says what was done ("pos_embed 14x14 -> 4x4 grid").
  virtual at::Tensor fit_loaded(const std::string& /*name*/, const at::Tensor& /*file*/, const at::Tensor& /*model*/,
                                std::string& /*note*/) const {
    return {};
  }

  // The model.name it was built as ("" when built outside build()): which files fit it beyond names and shapes.
  const std::string& arch() const { return arch_; }
  void set_arch(std::string name) { arch_ = std::move(name); }

  // What model.pretrained loaded, when it was set.
  const std::optional<LoadReport>& pretrained_report() const { return pretrained_report_; }
  void set_pretrained_report(LoadReport r) { pretrained_report_ = std::move(r); }

 protected:
  // Declares a layer group by module-name prefixes, in forward order ("stem", {"conv1", "bn1"}).
  void add_group(std::string name, std::vector<std::string> prefixes);
  // A network that builds its own head instead of finish()'s: the module paths of the "head" layer group.
  void own_head(std::vector<std::string> prefixes) { head_.own(std::move(prefixes)); }
  void set_first_conv(std::string param) { first_conv_ = std::move(param); }
  void set_no_weight_decay(std::vector<std::string> params) { no_weight_decay_ = std::move(params); }
  // Called last in a family's constructor: a dry forward finds the feature width, then the head is
  // built with its classifier registered as `fc_name` under `fc_parent` (timm's name for the family).
  // `pools`: the model.global_pool values the family takes (empty: the CNN pools of head.h).
  void finish(const ModelContext& ctx, torch::nn::Module& fc_parent, const std::string& fc_path,
              const std::string& default_pool = "avg", const std::vector<std::string>& pools = {});
  // Applied to pooled features before the head (convnext's head.norm); identity by default.
  virtual at::Tensor pre_logits(const at::Tensor& pooled) { return pooled; }
  // Builds modules that depend on the pooled width (convnext's head.norm) before the head.
  virtual void build_pre_logits(int64_t /*pooled_width*/) {}

  // Runs one stage; with grad_checkpointing while training, its activations are recomputed in backward.
  at::Tensor run_stage(const std::shared_ptr<torch::nn::Module>& stage,
                       const std::function<at::Tensor(const at::Tensor&)>& fn, const at::Tensor& x);
  template <class Holder>
  at::Tensor run_stage(Holder& stage, const at::Tensor& x) {
    Holder h = stage;  // the recompute closure keeps the stage alive
    return run_stage(
        stage.ptr(), [h](const at::Tensor& t) mutable { return h->forward(t); }, x);
  }

 private:
  std::vector<std::pair<std::string, std::vector<std::string>>> groups_;
  std::string first_conv_;
  std::vector<std::string> no_weight_decay_;
  std::string pool_ = "avg";
  Head head_;
  bool grad_checkpointing_ = false;
  bool channels_last_ = false;
  std::optional<LoadReport> pretrained_report_;
  std::string arch_;
};
using NetworkPtr = std::shared_ptr<Network>;

using ModelRegistry = Registry<NetworkPtr(const ModelContext&)>;
ModelRegistry& model_registry();

std::string model_name(const config::Recipe& recipe);
// Builds the recipe's model (model.name + its keys) and loads model.pretrained when set.
// `ctx.model` is filled from the recipe.
NetworkPtr build(const config::Recipe& recipe, ModelContext ctx);
int64_t count_parameters(const torch::nn::Module& m, bool trainable_only = false);

}  // namespace kg::model
