// EMA of the weights, timm ModelEmaV3 (timm/utils/model_ema.py) as timm's train.py drives it.
#include "train/callbacks/ema.h"

#include <cmath>
#include <set>

#include <torch/torch.h>

#include "config/sections.h"
#include "core/error.h"
#include "core/strings.h"
#include "device/compat.h"
#include "train/trainer.h"

namespace kg::train {
namespace {

constexpr const char* kEmaPrefix = "cb.ema.";

config::Fields<EmaOptions> ema_fields() {
  config::Fields<EmaOptions> f;
  f.field("enabled", &EmaOptions::enabled,
          "keep an exponential moving average of the weights, evaluated each epoch as ema_* metrics");
  f.field("decay", &EmaOptions::decay,
          "weight kept by the old average at each update (timm 0.9998; ~1/(1-decay) updates of memory)")
      .range(0, 1);
  f.field("warmup", &EmaOptions::warmup,
          "timm decay warm-up: decay = min(decay, 1 - (1 + step/warmup_gamma)^-warmup_power)");
  f.field("warmup_power", &EmaOptions::warmup_power,
          "warm-up exponent (timm 2/3 reaches 0.999 at ~31k updates; 3/4 suits shorter runs)")
      .positive();
  f.field("warmup_gamma", &EmaOptions::warmup_gamma, "warm-up step divisor (timm's inv_gamma)").positive();
  f.field("every", &EmaOptions::every,
          "update the average every N optimizer updates (the decay applies per EMA update)")
      .min(1);
  f.field("use_for_best", &EmaOptions::use_for_best,
          "the EMA weights may become checkpoints/best when their monitored metric wins");
  return f;
}

KG_REGISTER_SECTION("ema", "exponential moving average of the weights (timm ModelEmaV3)", ema_fields().schema(), "");

KG_REGISTER(callback_registry(), "ema",
            "exponential moving average of the weights, evaluated and checkpointed beside them (keys in [ema])",
            "[ema]\nenabled = true\ndecay = 0.999", config::Fields<config::NoOptions>(),
            [](const config::NoOptions&, const config::Recipe& recipe) -> CallbackPtr {
              auto o = recipe.get<EmaOptions>();
              return o.enabled ? std::make_unique<EmaCallback>(o) : nullptr;
            });

// Parameters and buffers by their state_dict names (the live tensors, not copies).
std::vector<std::pair<std::string, at::Tensor>> named_tensors(const torch::nn::Module& m) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& p : m.named_parameters(true)) out.emplace_back(p.key(), p.value());
  for (const auto& b : m.named_buffers(true))
    if (b.value().defined()) out.emplace_back(b.key(), b.value());
  return out;
}

std::string first_names(const std::vector<std::string>& v) {
  std::vector<std::string> head(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(v.size(), 5)));
  return join(head, ", ") + (v.size() > 5 ? ", ..." : "");
}

}  // namespace

EmaOptions EmaOptions::load(const config::Tree& recipe) { return ema_fields().load(config::Options(&recipe, "ema")); }

double ema_decay(const EmaOptions& o, int64_t step) {
  const int64_t s = std::max<int64_t>(0, step - 1);
  if (s <= 0) return 0.0;
  if (!o.warmup) return o.decay;
  const double d = 1.0 - std::pow(1.0 + static_cast<double>(s) / o.warmup_gamma, -o.warmup_power);
  return std::max(std::min(d, o.decay), 0.0);
}

void EmaCallback::attach(const torch::nn::Module& m) {
  torch::NoGradGuard no_grad;
  auto live = named_tensors(m);
  pairs_.clear();
  if (restored_) {
    std::vector<std::string> missing, mismatched, unexpected;
    std::set<std::string> names;
    for (auto& [n, t] : live) {
      names.insert(n);
      auto it = shadow_.find(n);
      if (it == shadow_.end())
        missing.push_back(n);
      else if (it->second.sizes() != t.sizes())
        mismatched.push_back(n + " " + c10::str(it->second.sizes()) + " vs model " + c10::str(t.sizes()));
    }
    for (auto& [n, t] : shadow_)
      if (!names.count(n)) unexpected.push_back(n);
    std::string problems;
    if (!missing.empty()) problems += " missing: " + first_names(missing) + ";";
    if (!unexpected.empty()) problems += " unexpected: " + first_names(unexpected) + ";";
    if (!mismatched.empty()) problems += " shape mismatch: " + first_names(mismatched) + ";";
    KG_CHECK(problems.empty(), CheckpointError, "the checkpoint's EMA weights (state tensors ", kEmaPrefix,
             "*) do not match the model:", problems,
             " resume with the recipe that wrote the checkpoint, or set ema.enabled = false");
    // On the model's device, dtype and memory format.
    for (auto& [n, t] : live) {
      auto on_device = at::empty_like(t.detach(), at::MemoryFormat::Preserve);
      on_device.copy_(shadow_[n]);
      shadow_[n] = on_device;
    }
  } else {
    shadow_.clear();
    updates_ = 0;
    for (auto& [n, t] : live) shadow_[n] = t.detach().clone();
  }
  for (auto& [n, t] : live) pairs_.emplace_back(shadow_.at(n), t);
}

void EmaCallback::update(int64_t step) {
  KG_ASSERT(!pairs_.empty(), "EMA update before attach()");
  const double w = 1.0 - ema_decay(o_, step);
  torch::NoGradGuard no_grad;
#if KG_TORCH_VERSION_AT_LEAST(2, 0)
  // Multi-tensor lerp (timm's ModelEmaV3 uses torch._foreach_lerp_): a few launches instead of one per
  // tensor on CUDA, the same lerp per element. LibTorch 1.13 has no _foreach_lerp_.
  std::vector<at::Tensor> avg, live;
  for (auto& [s, m] : pairs_) {
    if (w == 1.0 || !s.is_floating_point())
      s.copy_(m);  // first update (decay 0) and integer buffers
    else if (m.scalar_type() == s.scalar_type() && m.device() == s.device()) {
      avg.push_back(s);
      live.push_back(m);
    } else {
      s.lerp_(m.to(s.scalar_type()), w);
    }
  }
  if (!avg.empty()) at::_foreach_lerp_(avg, live, w);
#else
  for (auto& [s, m] : pairs_) {
    if (w == 1.0 || !s.is_floating_point())
      s.copy_(m);  // first update (decay 0) and integer buffers
    else
      s.lerp_(m.to(s.scalar_type()), w);
  }
#endif
  ++updates_;
}

void EmaCallback::on_fit_start(Trainer& t) {
  const bool resumed = t.state().step > 0;
  attach(t.net());
  if (resumed && !restored_)
    t.log(
        "  ema: the checkpoint holds no EMA state (ema was off when it was written): the average starts from the "
        "resumed weights");
  t.log("  ema: decay " + format_double(o_.decay) + (o_.warmup ? " with warm-up" : "") +
        (o_.every > 1 ? ", every " + std::to_string(o_.every) + " updates" : "") + ", " +
        std::to_string(shadow_.size()) + " tensors");
}

void EmaCallback::on_step_end(Trainer& t) {
  const int64_t step = t.state().step;
  if (step % o_.every == 0) update(step);
}

void EmaCallback::on_epoch_end(Trainer& t, EpochReport& r) {
  auto ev = t.evaluate(&shadow_);
  Variant v;
  v.name = "ema";
  v.weights = &shadow_;
  v.values = std::move(ev.values);
  v.candidate_for_best = o_.use_for_best;
  r.variants.push_back(std::move(v));
}

void EmaCallback::save_state(model::TensorMap& tensors, nlohmann::json& state) const {
  if (shadow_.empty()) return;
  for (auto& [n, s] : shadow_)
    tensors[kEmaPrefix + n] =
        s.detach().to(at::TensorOptions().device(at::kCPU), /*non_blocking=*/false, /*copy=*/true);
  state["updates"] = updates_;
}

void EmaCallback::load_state(const model::TensorMap& tensors, const nlohmann::json& state) {
  const std::string prefix = kEmaPrefix;
  model::TensorMap saved;
  for (auto it = tensors.lower_bound(prefix); it != tensors.end() && it->first.compare(0, prefix.size(), prefix) == 0;
       ++it)
    saved[it->first.substr(prefix.size())] = it->second;
  const bool has_meta = state.is_object() && state.contains("updates");
  if (saved.empty()) {
    KG_CHECK(!has_meta, CheckpointError, "the checkpoint's state.json has EMA state but state.safetensors holds no ",
             prefix, "* tensors: the checkpoint is damaged");
    restored_ = false;
    return;
  }
  try {
    updates_ = has_meta ? state.at("updates").get<int64_t>() : 0;
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(std::string("checkpoint state.json callbacks.ema is malformed: ") + e.what());
  }
  shadow_ = std::move(saved);
  pairs_.clear();
  restored_ = true;
}

}  // namespace kg::train
