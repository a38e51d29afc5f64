#include "train/step.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <unordered_set>

#include <torch/torch.h>

#include "core/error.h"
#include "device/autocast_state.h"
#include "device/test_hooks.h"

namespace kg::train {

namespace {
bool is_norm_module(const std::string& type_name) { return type_name.find("Norm") != std::string::npos; }

std::vector<at::Tensor> defined_grads(const std::vector<at::Tensor>& params) {
  std::vector<at::Tensor> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  return grads;
}

// Adaptive gradient clipping (Brock et al. 2021, timm adaptive_clip_grad): per output unit,
// ||g|| <= factor * max(||w||, eps).
void adaptive_clip(const std::vector<at::Tensor>& params, double factor) {
  torch::NoGradGuard ng;
  for (auto p : params) {
    if (!p.grad().defined()) continue;
    std::vector<int64_t> dims;  // every dim but the output unit's
    for (int64_t d = 1; d < p.dim(); ++d) dims.push_back(d);
    auto unit_norm = [&](const at::Tensor& t) { return p.dim() <= 1 ? t.norm(2) : t.norm(2, dims, /*keepdim=*/true); };
    auto max_norm = unit_norm(p.detach()).clamp_min(1e-3) * factor;
    auto gnorm = unit_norm(p.grad());
    auto clipped = p.grad() * (max_norm / gnorm.clamp_min(1e-6));
    p.mutable_grad() = torch::where(gnorm < max_norm, p.grad(), clipped);
  }
}
}  // namespace

at::Tensor forward_float32(model::Network& net, const model::Inputs& in, device::Precision precision,
                           c10::DeviceType device_type) {
  at::Tensor out;
  {
    device::AutocastScope autocast(precision, device_type);
    out = net.forward(in);
  }
  return out.to(torch::kFloat);
}

void trial_step(model::Network& net, optim::Optimizer& opt, const model::ModelContext& ctx,
                const device::DeviceInfo& dev, int64_t batch) {
  model::Inputs in = model::dummy_inputs(ctx, batch, torch::TensorOptions().device(dev.device));
  if (dev.channels_last && in.pixels.defined()) in.pixels = in.pixels.contiguous(at::MemoryFormat::ChannelsLast);
  const at::Tensor out = forward_float32(net, in, dev.precision, dev.device.type());
  device::maybe_fake_oom(batch);
  // Any scalar of the outputs: the loss's own memory is negligible next to the activations it frees.
  out.square().mean().backward();
  opt.step();  // allocates the optimizer's state (Adam's moments) like the first real update
  opt.zero_grad();
}

DeviceBatch to_device(const data::Batch& b, const c10::Device& device) {
  DeviceBatch d;
  d.in = data::to_model_input(b, device);
  d.y = b.targets.defined() ? b.targets.to(device, /*non_blocking=*/true) : at::Tensor();
  return d;
}

// --- MicroStep -------------------------------------------------------------------------------------

at::Tensor MicroStep::forward(const model::Inputs& in, const at::Tensor& y) const {
  return loss->forward(forward_float32(*net, in, precision, device_type), y);
}

void MicroStep::backward(const at::Tensor& loss, const at::Tensor& weight) const {
  (scaled ? loss * weight : loss / weight).backward();
}

float MicroStep::weight_as_float(double w) {
  return std::abs(w) > static_cast<double>(std::numeric_limits<float>::max())
             ? std::copysign(std::numeric_limits<float>::infinity(), w)
             : static_cast<float>(w);
}

at::Tensor MicroStep::weight_tensor(double weight, const c10::Device& d) const {
  return torch::full({}, weight_as_float(weight), torch::TensorOptions().dtype(torch::kFloat).device(d));
}

double MicroStep::weight_of(int64_t micro_batches, const device::LossScaler& scaler) {
  return scaler.enabled() ? scaler.scale() / static_cast<double>(micro_batches) : static_cast<double>(micro_batches);
}

// --- GradientPolicy --------------------------------------------------------------------------------

GradientPolicy::GradientPolicy(const TrainOptions& t)
    : clip_value_(t.clip_grad_value), agc_(t.agc), clip_norm_(t.clip_grad_norm) {}

UpdateResult GradientPolicy::finish(const std::vector<at::Tensor>& params, const at::Tensor& loss_sum,
                                    optim::Optimizer& opt, device::LossScaler& scaler,
                                    const std::function<void()>& on_grads_ready) const {
  UpdateResult r;
  std::vector<at::Tensor> grads = defined_grads(params);
  bool finite = true, loss_read = false;
  if (scaler.enabled()) {
    r.loss_sum = loss_sum.item<double>();
    finite = std::isfinite(r.loss_sum);
    loss_read = true;
    // fp16: back to true gradients before anyone looks at them. Gradients that overflowed while the
    // loss is finite are the scale's fault (GradScaler: skip, back off). Once the scale is below 1 the
    // scale cannot be the cause: the non-finite check below takes over.
    const bool grads_finite = scaler.unscale_and_check(grads);
    if (finite && !grads_finite && scaler.scale() >= 1.0) {
      scaler.update(false);
      opt.zero_grad();
      r.outcome = UpdateOutcome::scale_overflow;
      return r;
    }
    finite = finite && grads_finite;
  }
  if (on_grads_ready) on_grads_ready();
  if (finite && !grads.empty()) {
    if (clip_value_ > 0)
      for (auto& g : grads) g.clamp_(-clip_value_, clip_value_);
    if (agc_ > 0) {
      adaptive_clip(params, agc_);
      grads = defined_grads(params);
    }
    // Every gradient's norm in multi-tensor kernels (PyTorch's clip_grad_norm_), then one copy to the host.
    const at::Tensor total = torch::stack(at::_foreach_norm(grads)).norm(2);
    const at::Tensor host =
        torch::stack({total.to(torch::kDouble).reshape({}), loss_sum.detach().to(torch::kDouble).reshape({})}).cpu();
    const double total_norm = host.data_ptr<double>()[0];
    r.grad_norm = total_norm;
    if (!loss_read) r.loss_sum = host.data_ptr<double>()[1];
    finite = std::isfinite(total_norm) && std::isfinite(r.loss_sum);
    if (finite && clip_norm_ > 0 && total_norm > clip_norm_) {
      const double coef = clip_norm_ / (total_norm + 1e-6);
      for (auto& g : grads) g.mul_(coef);
    }
  } else if (!loss_read) {
    r.loss_sum = loss_sum.item<double>();  // no gradient to look at
    finite = finite && std::isfinite(r.loss_sum);
  }
  if (!finite) {
    opt.zero_grad();
    scaler.update(false);
    r.outcome = UpdateOutcome::non_finite;
    return r;
  }
  opt.step();
  scaler.update(true);
  return r;
}

// --- LayerFreezer ----------------------------------------------------------------------------------

LayerFreezer::LayerFreezer(model::Network& net, bool train_bn) : net_(net), train_bn_(train_bn) {
  std::unordered_set<const void*> norm;
  for (auto& m : net.modules(/*include_self=*/false))
    if (is_norm_module(m->name()))
      for (auto& t : m->parameters(/*recurse=*/false)) norm.insert(t.unsafeGetTensorImpl());
  for (auto& g : net.layer_groups()) {
    group_params_.emplace_back();
    for (auto& [name, t] : g.params) group_params_.back().push_back(t);
  }
  params_ = net.parameters();
  for (auto& t : params_) norm_param_.push_back(norm.count(t.unsafeGetTensorImpl()) > 0);
}

void LayerFreezer::apply(const Plan& plan, int64_t epoch, optim::Optimizer& opt) {
  const int64_t frozen = plan.frozen_groups(epoch);
  std::unordered_set<const void*> frozen_set;
  for (int64_t g = 0; g < frozen && g < static_cast<int64_t>(group_params_.size()); ++g)
    for (auto& t : group_params_[static_cast<size_t>(g)]) frozen_set.insert(t.unsafeGetTensorImpl());
  for (size_t i = 0; i < params_.size(); ++i) {
    const bool freeze = frozen_set.count(params_[i].unsafeGetTensorImpl()) && !(train_bn_ && norm_param_[i]);
    params_[i].set_requires_grad(!freeze);
  }
  // Layer-group learning-rate multipliers of the plan's phase (fine_tune), by the optimizer group's layer group.
  if (const auto* mults = plan.group_lr_mult(epoch)) {
    const auto names = net_.group_names();
    auto& groups = opt.groups();
    for (size_t j = 0; j < groups.size(); ++j) {
      const std::string lg = groups[j].name.substr(0, groups[j].name.find('/'));
      auto it = std::find(names.begin(), names.end(), lg);
      KG_ASSERT(it != names.end(), "optimizer group ", groups[j].name, " names no layer group");
      opt.set_lr_mult(j, (*mults)[static_cast<size_t>(it - names.begin())]);
    }
  }
}

}  // namespace kg::train
