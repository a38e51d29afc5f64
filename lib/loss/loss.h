// Losses: (logits [N, K], targets) -> scalar, the mean over the batch. Target forms by task
// (data.task): multiclass int64 [N] class indices or float [N, K] soft probabilities (mixup, soft
// pseudo-labels); binary float [N, 1] and multilabel float [N, K] in [0, 1]; regression float [N, K].
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "config/registry.h"
#include "config/recipe.h"
#include "core/tasks.h"

namespace kg::loss {

class Loss {
 public:
  virtual ~Loss() = default;
  // Mean over the batch; differentiable in `logits`.
  virtual at::Tensor forward(const at::Tensor& logits, const at::Tensor& targets) const = 0;
};
using LossPtr = std::unique_ptr<Loss>;

// A loss's constant (class weights, pos_weight) kept on the device and in the dtype of the logits it
// last met: no host-to-device copy per step, which a CUDA graph could not capture either.
class DeviceConstant {
 public:
  DeviceConstant() = default;
  explicit DeviceConstant(at::Tensor host) : host_(std::move(host)) {}
  // Undefined when there is no constant.
  at::Tensor like(const at::Tensor& logits) const;

 private:
  at::Tensor host_;
  mutable at::Tensor on_device_;
};

// What a loss is built for: K model outputs and the task (data.task).
struct LossContext {
  int64_t num_outputs = 0;
  Task task = Task::multiclass;
};

using LossRegistry = Registry<LossPtr(const LossContext&)>;
LossRegistry& loss_registry();

// Tasks each loss supports, declared next to its registration (KG_LOSS_TASKS).
bool add_loss_tasks(const std::string& name, std::vector<Task> tasks);
const std::vector<Task>& supported_tasks(const std::string& name);  // empty for unknown names
// Losses that apply to `task`, sorted.
std::vector<std::string> losses_for(Task task);

// Recipe section [loss]; each field's doc is in loss_fields() (loss/loss.cpp) and docs/reference.md.
struct LossOptions {
  std::string name = "cross_entropy";
  // loss.distill = { teacher, alpha, temperature } (loss/distill.cpp, session/teacher.h)
  std::string distill_teacher;
  double distill_alpha = 0.5;
  double distill_temperature = 2.0;
};
// [loss]'s own keys (name, distill.*), decoded.
LossOptions loss_options(const config::Recipe& recipe);

// The loss for a task when loss.name is not set: cross_entropy (multiclass), bce_with_logits
// (binary, multilabel), mse (regression).
std::string default_loss(Task task);

// The loss a recipe trains `task` with: loss.name when the recipe sets it, else default_loss(task).
std::string loss_name(const config::Recipe& recipe, Task task);

// Builds [loss] for ctx.task. When the recipe does not set loss.name, default_loss(ctx.task) is used.
// ConfigError when the loss does not fit the task (naming the losses that do) or its options do not
// fit ctx (loss.class_weights length != K, ...).
// With loss.distill.teacher set, the loss is wrapped by distill() below.
LossPtr build(const config::Recipe& recipe, const LossContext& ctx);

// Knowledge distillation (Hinton et al. 2015, "Distilling the Knowledge in a Neural Network") around `hard`:
//   (1 - alpha) * hard(logits, y) + alpha * T^2 * KL(teacher_T || student_T)
// multiclass: softmax of the logits / T; binary and multilabel: each output's Bernoulli sigmoid(logit / T) (the
// BCE against the teacher's tempered probability less its entropy: the same gradient, 0 where they agree).
// Distilled targets are wider than the logits: [N, D + K], the hard targets as D float columns (multiclass:
// D = 1, the class index; soft multiclass, binary, multilabel: D = K) followed by the teacher's K logits
// (data::LoaderOptions::teacher packs them). Targets no wider than the logits (validation batches) get the
// hard loss alone. ConfigError naming loss.distill for regression or alpha / temperature out of range.
LossPtr distill(LossPtr hard, const LossOptions& o, const LossContext& ctx);

namespace detail {
// `targets` as float [N, K] shaped like `logits` ([N] is accepted when K = 1), for element-wise
// losses; DataError naming `loss` when the shapes do not match.
at::Tensor dense_targets(const at::Tensor& logits, const at::Tensor& targets, const char* loss);
}  // namespace detail

}  // namespace kg::loss

// KG_LOSS_TASKS("bce_with_logits", {Task::binary, Task::multilabel})
#define KG_LOSS_TASKS(name, ...) \
  static const bool KG_CONCAT(kg_loss_tasks_, __COUNTER__) = ::kg::loss::add_loss_tasks(name, __VA_ARGS__)
