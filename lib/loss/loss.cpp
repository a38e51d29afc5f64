#include "loss/loss.h"

#include <algorithm>
#include <map>

#include <torch/torch.h>

#include "config/sections.h"
#include "config/recipe.h"
#include "core/error.h"
#include "core/strings.h"
#include "core/tasks.h"

namespace kg::loss {

LossRegistry& loss_registry() {
  static LossRegistry r("loss");
  return r;
}

namespace {

TaskTable& task_table() {
  static TaskTable t;
  return t;
}

config::Fields<LossOptions> loss_fields() {
  config::Fields<LossOptions> f;
  f.field("name", &LossOptions::name,
          "loss function; when not set, fit uses the task's default: cross_entropy (multiclass), "
          "bce_with_logits (binary, multilabel), mse (regression)")
      .kind("loss");
  f.field("distill.teacher", &LossOptions::distill_teacher,
          "knowledge distillation from a teacher: its run folder (reads oof.csv: every training row needs an "
          "out-of-fold prediction, e.g. a teacher fitted with cv.fold = \"all\") or a CSV of id + prob_<class> "
          "(probabilities) or logit_<class> columns; \"\" = off. docs/text.md#distillation");
  f.field("distill.alpha", &LossOptions::distill_alpha,
          "weight of the distillation term: (1 - alpha) * loss + alpha * T^2 * KL(teacher || student)")
      .range(0, 1);
  f.field("distill.temperature", &LossOptions::distill_temperature,
          "T: both models' logits are divided by it before the softmax (sigmoid); the term is scaled by T^2")
      .min(0.05);
  return f;
}
// Without loss.name, fit trains with the task's default loss: validate its keys against that one.
std::string task_default_loss(const config::Tree& t) {
  const config::Entry* e = t.find("data.task");
  const std::string task = e && e->value.is_string() ? e->value.get<std::string>() : "multiclass";
  const auto& known = task_names();
  return std::find(known.begin(), known.end(), task) != known.end() ? default_loss(parse_task(task))
                                                                    : "";  // else: reported at data.task
}
const bool kLossSection =
    config::add_section({"loss", "the training loss", loss_fields().schema(), "loss", task_default_loss});

}  // namespace

at::Tensor DeviceConstant::like(const at::Tensor& logits) const {
  if (!host_.defined()) return {};
  if (!on_device_.defined() || on_device_.device() != logits.device() ||
      on_device_.scalar_type() != logits.scalar_type())
    on_device_ = host_.to(logits.device(), logits.scalar_type());
  return on_device_;
}

bool add_loss_tasks(const std::string& name, std::vector<Task> tasks) {
  return task_table().add(name, std::move(tasks));
}

const std::vector<Task>& supported_tasks(const std::string& name) { return task_table().supported(name); }

std::vector<std::string> losses_for(Task task) { return task_table().components_for(task); }

std::string default_loss(Task task) {
  if (task == Task::multiclass) return "cross_entropy";
  if (task == Task::regression) return "mse";
  return "bce_with_logits";
}

LossOptions loss_options(const config::Recipe& recipe) { return loss_fields().load(recipe.section("loss")); }

std::string loss_name(const config::Recipe& recipe, Task task) {
  // validate() fills in data.task's default loss; a tree that skipped validation gets it here too.
  const bool explicit_name = recipe.origin_of("loss.name").kind != config::Origin::Kind::Default;
  return explicit_name ? loss_fields().load(recipe.section("loss")).name : default_loss(task);
}

LossPtr build(const config::Recipe& recipe, const LossContext& ctx) {
  const config::Options opts = recipe.section("loss");
  const std::string name = loss_name(recipe, ctx.task);
  const auto& tasks = supported_tasks(name);
  if (loss_registry().find_info(name) && !tasks.empty()) {
    const bool ok = std::find(tasks.begin(), tasks.end(), ctx.task) != tasks.end();
    KG_CHECK(ok, ConfigError, opts.where("name"), ": loss \"", name, "\" does not fit data.task = \"",
             task_name(ctx.task), "\" (it supports ", join(task_names(tasks), ", "), "; losses for ",
             task_name(ctx.task), ": ", join(losses_for(ctx.task), ", "), ")");
  }
  LossPtr hard = with_context("while building loss " + name, [&] { return loss_registry().create(name, opts, ctx); });
  const LossOptions o = loss_options(recipe);
  return o.distill_teacher.empty() ? std::move(hard) : distill(std::move(hard), o, ctx);
}

namespace detail {
at::Tensor dense_targets(const at::Tensor& logits, const at::Tensor& targets, const char* loss) {
  KG_CHECK(logits.dim() == 2, DataError, "loss ", loss, ": expected logits [N, K], got ", logits.sizes());
  at::Tensor t = targets;
  if (t.dim() == 1 && logits.size(1) == 1) t = t.unsqueeze(1);
  KG_CHECK(t.sizes() == logits.sizes(), DataError, "loss ", loss, ": expected targets shaped like the logits ",
           logits.sizes(), ", got ", targets.sizes());
  return t.to(logits.dtype());
}
}  // namespace detail

}  // namespace kg::loss
