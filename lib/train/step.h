// The training update, defined once and used by everything that trains or times training: fit's Trainer,
// lr-find's sweep, bench's phases, bench-model and auto batch size's trial steps.
//
//   forward_float32   the forward pass under autocast (device.precision), its output in float32
//   MicroStep         one micro-batch: forward, the float32 loss, backward weighed for its update
//   GradientPolicy    after the update's last backward: unscale (fp16), train.clip_grad_value, train.agc,
//                     train.clip_grad_norm, the non-finite check, then the optimizer step or a skip
//   LayerFreezer      an epoch of the plan on a network: frozen layer groups (train.train_bn) and the
//                     phase's layer-group lr multipliers (fine_tune)
#pragma once
#include <limits>
#include <cstdint>
#include <functional>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "data/loader.h"
#include "device/device.h"
#include "device/loss_scaler.h"
#include "device/precision.h"
#include "loss/loss.h"
#include "model/model.h"
#include "optim/optimizer.h"
#include "train/options.h"
#include "train/plan.h"

namespace kg::train {

// net.forward(in) under autocast for `precision` on `device_type`; the output converted to float32
// (losses, metrics and activations always see float32).
at::Tensor forward_float32(model::Network& net, const model::Inputs& in, device::Precision precision,
                           c10::DeviceType device_type);

// One training step at `batch` on zero inputs, taking the memory a real step of that size takes (the optimizer's
// state included); throws what LibTorch throws, out of memory included (auto batch size's search).
void trial_step(model::Network& net, optim::Optimizer& opt, const model::ModelContext& ctx,
                const device::DeviceInfo& dev, int64_t batch);

// A micro-batch on the device: the model's inputs (uint8 pixels normalized there; features undefined without
// tabular columns) and the targets.
struct DeviceBatch {
  model::Inputs in;
  at::Tensor y;
};
DeviceBatch to_device(const data::Batch& b, const c10::Device& device);

struct MicroStep {
  model::Network* net = nullptr;
  const loss::Loss* loss = nullptr;
  device::Precision precision = device::Precision::fp32;
  c10::DeviceType device_type = c10::kCPU;
  bool scaled = false;  // fp16: the loss is multiplied by its weight (loss scale / micro-batches); else divided by it

  // The float32 mean loss of a micro-batch.
  at::Tensor forward(const model::Inputs& in, const at::Tensor& y) const;
  // Backward of `loss` weighed by `weight` (a float scalar tensor on the loss's device).
  void backward(const at::Tensor& loss, const at::Tensor& weight) const;
  // The weight as a tensor for an eager step.
  at::Tensor weight_tensor(double weight, const c10::Device& d) const;
  // The weight as the float32 the loss is multiplied by: a loss scale beyond float32's range is infinity
  // (the update then overflows and is skipped), not a conversion error.
  static float weight_as_float(double weight);
  // The weight of one of `micro_batches` micro-batches of an update: the loss scale / micro_batches with
  // fp16's scaler, else micro_batches (the loss is divided by it: the update's gradient is its mean's).
  static double weight_of(int64_t micro_batches, const device::LossScaler& scaler);
};

enum class UpdateOutcome {
  applied,         // the optimizer stepped
  scale_overflow,  // fp16: the gradients overflowed at a loss scale >= 1; skipped, the scale backs off
  non_finite,      // the loss or a gradient is inf/NaN; skipped (train.nan_policy decides what follows)
};

struct UpdateResult {
  UpdateOutcome outcome = UpdateOutcome::applied;
  double loss_sum = 0;  // the update's micro-batch mean losses, summed (read from the device once)
  double grad_norm = std::numeric_limits<double>::quiet_NaN();  // total gradient norm before clipping, when measured
  bool applied() const { return outcome == UpdateOutcome::applied; }
};

class GradientPolicy {
 public:
  explicit GradientPolicy(const TrainOptions& t);

  // After the last backward of an update whose micro-batch mean losses sum to `loss_sum` (a device
  // scalar): unscales fp16 gradients, calls `on_grads_ready` (callbacks see true gradients), clips
  // (value, AGC, global norm: PyTorch's clip_grad_norm_ with multi-tensor norms), checks that the loss and
  // the total gradient norm are finite, then steps `opt` — or zeroes the gradients and skips. `scaler`
  // learns the outcome. One host sync per update: the norm and the loss are read together.
  UpdateResult finish(const std::vector<at::Tensor>& params, const at::Tensor& loss_sum, optim::Optimizer& opt,
                      device::LossScaler& scaler, const std::function<void()>& on_grads_ready = {}) const;

 private:
  double clip_value_, agc_, clip_norm_;
};

// Freezing and layer-group multipliers of a plan's epoch on a network and its optimizer.
class LayerFreezer {
 public:
  // `train_bn`: parameters of normalization layers stay trainable inside frozen groups (fastai).
  LayerFreezer(model::Network& net, bool train_bn);
  // The first plan.frozen_groups(epoch) layer groups take no gradient; the optimizer's groups get the
  // phase's lr multipliers (plan.group_lr_mult(epoch), when it has some).
  void apply(const Plan& plan, int64_t epoch, optim::Optimizer& opt);

 private:
  model::Network& net_;
  bool train_bn_;
  std::vector<std::vector<at::Tensor>> group_params_;  // per layer group
  std::vector<at::Tensor> params_;
  std::vector<bool> norm_param_;  // parallel to params_: inside a normalization layer
};

}  // namespace kg::train
