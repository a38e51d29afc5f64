#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <unordered_set>

#include <torch/torch.h>

#include "core/error.h"
#include "core/stop.h"
#include "core/strings.h"
#include "device/backend.h"
#include "model/batchnorm.h"
#include "device/oom.h"
#include "train/grad_reducer.h"
#include "train/model_snapshot.h"
#include "train/step_graphs.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kg::train {

// --- Trainer -------------------------------------------------------------------------------------

namespace {
bool is_norm_module(const std::string& type_name) { return type_name.find("Norm") != std::string::npos; }
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Trainer::Trainer(TrainerParts parts, Plan& plan, const TrainOptions& topt, const CheckpointOptions& copt,
                 TrainLoaderFn train_loader, ValidLoaderFn valid_loader, MixFn mix, std::vector<CallbackPtr> callbacks,
                 TrainerIO io)
    : p_(parts),
      plan_(plan),
      topt_(topt),
      copt_(copt),
      train_loader_(std::move(train_loader)),
      valid_loader_(std::move(valid_loader)),
      mix_(std::move(mix)),
      callbacks_(std::move(callbacks)),
      io_(std::move(io)),
      store_((fs::path(io_.dir) / "checkpoints").string(), static_cast<int>(copt.keep_last),
             static_cast<int>(copt.top_k), parts.metrics->higher_is_better()) {
  std::sort(callbacks_.begin(), callbacks_.end(),
            [](const CallbackPtr& a, const CallbackPtr& b) { return a->order() < b->order(); });
  // Parameters inside normalization layers stay trainable in frozen groups (train.train_bn).
  std::unordered_set<const void*> norm;
  for (auto& m : p_.net->modules(/*include_self=*/false))
    if (is_norm_module(m->name()))
      for (auto& t : m->parameters(/*recurse=*/false)) norm.insert(t.unsafeGetTensorImpl());
  for (auto& g : p_.net->layer_groups()) {
    group_params_.emplace_back();
    for (auto& [name, t] : g.params) group_params_.back().push_back(t);
  }
  params_ = p_.net->parameters();
  for (auto& m : p_.net->modules(/*include_self=*/false))
    if (m->name().find("BatchNorm") != std::string::npos) has_batch_norm_ = true;
  for (auto& t : params_) norm_param_.push_back(norm.count(t.unsafeGetTensorImpl()) > 0);
  if (p_.cuda_graphs) {
    std::string why;
    auto capturer = p_.emulate_graphs ? device::emulated_capturer() : device::graph_capturer(p_.device, &why);
    if (capturer)
      graphs_ = std::make_unique<GraphedSteps>(std::move(capturer), micro_step(), params_, io_.log);
    else
      log("  cuda graphs: off (" + why + "); the step runs eagerly");
  }
  if (p_.group) {
    s_.world_size = p_.group->world_size();
    broadcast_model();  // every rank starts from rank 0's weights (DDP's constructor does the same)
    // A graph replays backward without the reducer's hooks: with graphs the buckets go after backward.
    if (p_.dist_overlap && !graphs_) reducer_ = std::make_unique<GradReducer>(p_.group, p_.dist_bucket_bytes);
  }
}

MicroStep Trainer::micro_step() const {
  return MicroStep{p_.net, p_.loss, p_.precision, p_.device.type(), p_.scaler.enabled()};
}

Trainer::~Trainer() = default;

void Trainer::log(const std::string& line) const {
  if (io_.log) io_.log(line);
}

void Trainer::request_stop(const std::string& reason, bool mid_epoch, const std::string& status) {
  if (!stop_requested_) {
    stop_reason_ = reason;
    stop_status_ = status;
  }
  stop_requested_ = true;
  stop_mid_epoch_ = stop_mid_epoch_ || mid_epoch;
}

void Trainer::apply_plan_for_epoch(int64_t epoch) {
  // Freezing: the first `frozen` layer groups take no gradient (norm layers excepted with train_bn).
  const int64_t frozen = plan_.frozen_groups(epoch);
  std::unordered_set<const void*> frozen_set;
  for (int64_t g = 0; g < frozen && g < static_cast<int64_t>(group_params_.size()); ++g)
    for (auto& t : group_params_[static_cast<size_t>(g)]) frozen_set.insert(t.unsafeGetTensorImpl());
  for (size_t i = 0; i < params_.size(); ++i) {
    bool freeze = frozen_set.count(params_[i].unsafeGetTensorImpl()) && !(topt_.train_bn && norm_param_[i]);
    params_[i].set_requires_grad(!freeze);
  }
  reduce_params_of_epoch();
  // Layer-group learning-rate multipliers of the plan's phase (fine_tune), by the optimizer group's layer group.
  if (const auto* mults = plan_.group_lr_mult(epoch)) {
    auto names = p_.net->group_names();
    auto& groups = p_.opt->groups();
    for (size_t j = 0; j < groups.size(); ++j) {
      std::string lg = groups[j].name.substr(0, groups[j].name.find('/'));
      auto it = std::find(names.begin(), names.end(), lg);
      KG_CHECK(it != names.end(), InternalError, "optimizer group ", groups[j].name, " names no layer group");
      p_.opt->set_lr_mult(j, (*mults)[static_cast<size_t>(it - names.begin())]);
    }
  }
}

bool Trainer::finish_update(const at::Tensor& group_loss_sum, bool stop_here) {
  // Gradients of the whole group are in place.
  std::vector<at::Tensor> grads;
  for (auto& p : params_)
    if (p.grad().defined()) grads.push_back(p.grad());
  dist_stop_ = stop_here;
  const at::Tensor loss_sum =
      p_.group ? all_reduce_update(grads, group_loss_sum, stop_here, &dist_stop_, &dist_signal_) : group_loss_sum;
  // The loss is read from the device together with the gradient norm below: one host sync per update
  // (fp16's scaler decides on it first).
  bool finite = true, loss_read = false;
  if (p_.scaler.enabled()) {
    finite = std::isfinite(loss_sum.item<double>());
    loss_read = true;
    // fp16: back to true gradients before anyone looks at them. Gradients that overflowed while the
    // loss is finite are the scale's fault (GradScaler: skip, back off). Once the scale is below 1 the
    // scale cannot be the cause: the non-finite policy below takes over.
    const bool grads_finite = p_.scaler.unscale_and_check(grads);
    if (finite && !grads_finite && p_.scaler.scale() >= 1.0) {
      p_.scaler.update(false);
      p_.opt->zero_grad();
      ++s_.step;
      return false;
    }
    finite = finite && grads_finite;
  }
  for (auto& cb : callbacks_) cb->on_grads_ready(*this);
  if (finite && !grads.empty()) {
    if (topt_.clip_grad_value > 0)
      for (auto& g : grads) g.clamp_(-topt_.clip_grad_value, topt_.clip_grad_value);
    if (topt_.agc > 0) {
      // Adaptive gradient clipping (Brock et al. 2021, timm adaptive_clip_grad): per output unit,
      // ||g|| <= clip * max(||w||, eps).
      torch::NoGradGuard ng;
      for (auto& p : params_) {
        if (!p.grad().defined()) continue;
        std::vector<int64_t> dims;  // every dim but the output unit's
        for (int64_t d = 1; d < p.dim(); ++d) dims.push_back(d);
        auto unit_norm = [&](const at::Tensor& t) {
          return p.dim() <= 1 ? t.norm(2) : t.norm(2, dims, /*keepdim=*/true);
        };
        auto max_norm = unit_norm(p.detach()).clamp_min(1e-3) * topt_.agc;
        auto gnorm = unit_norm(p.grad());
        auto clipped = p.grad() * (max_norm / gnorm.clamp_min(1e-6));
        p.mutable_grad() = torch::where(gnorm < max_norm, p.grad(), clipped);
      }
      grads.clear();
      for (auto& p : params_)
        if (p.grad().defined()) grads.push_back(p.grad());
    }
    // Every gradient's norm in multi-tensor kernels (PyTorch's clip_grad_norm_), then one copy to the host.
    const at::Tensor total = torch::stack(at::_foreach_norm(grads)).norm(2);
    const at::Tensor host =
        torch::stack({total.to(torch::kDouble).reshape({}), loss_sum.detach().to(torch::kDouble).reshape({})}).cpu();
    const double total_norm = host.data_ptr<double>()[0];
    finite = std::isfinite(total_norm) && (loss_read || std::isfinite(host.data_ptr<double>()[1]));
    if (finite && topt_.clip_grad_norm > 0 && total_norm > topt_.clip_grad_norm) {
      double coef = topt_.clip_grad_norm / (total_norm + 1e-6);
      for (auto& g : grads) g.mul_(coef);
    }
  } else if (finite && !loss_read) {
    finite = std::isfinite(loss_sum.item<double>());  // no gradient to look at
  }
  if (!finite) {
    p_.opt->zero_grad();
    p_.scaler.update(false);
    ++s_.skipped_updates;
    ++s_.nan_streak;
    log("  non-finite loss or gradient at update " + std::to_string(s_.step + 1) + " (epoch " +
        std::to_string(s_.epoch + 1) + "): update skipped (" + std::to_string(s_.nan_streak) + " in a row)");
    if (topt_.nan_policy == "abort" && s_.nan_streak >= topt_.nan_max_consecutive) {
      save_last();
      throw DivergedError("training diverged: " + std::to_string(s_.nan_streak) +
                          " consecutive updates had a non-finite loss or gradient (train.nan_policy = \"abort\", "
                          "train.nan_max_consecutive = " +
                          std::to_string(topt_.nan_max_consecutive) + "); the last good weights are in " + io_.dir +
                          "/checkpoints/last. Lower optim.lr, "
                          "set train.clip_grad_norm, or check the inputs");
    }
    ++s_.step;
    return false;
  }
  s_.nan_streak = 0;
  p_.opt->step();
  p_.scaler.update(true);
  ++s_.step;
  for (auto& cb : callbacks_) cb->on_step_end(*this);
  return true;
}

// What one update's micro-batches add up to; folded into the epoch's totals when the update is done
// (an out-of-memory retry starts the group again from nothing).
struct Trainer::GroupSums {
  at::Tensor loss;         // float sum of the micro-batches' mean losses (the non-finite check)
  at::Tensor loss_double;  // the same in double (the epoch's training loss)
  int64_t count = 0, images = 0;
};

namespace {
// Images per micro-batch after `halvings` out-of-memory back-offs of loader batches of `full` images.
int64_t micro_size(int64_t full, int64_t halvings) {
  int64_t m = full;
  for (int64_t i = 0; i < halvings; ++i) m = (m + 1) / 2;
  return std::max<int64_t>(1, m);
}
int64_t chunks_of(int64_t rows, int64_t micro) { return (rows + micro - 1) / micro; }

}  // namespace

bool Trainer::oom_backoff_enabled() const {
  return topt_.oom_backoff && (p_.device.is_cuda() || p_.fake_oom_above >= 0);
}

void Trainer::back_off(int64_t epoch, int64_t full_batch, const std::string& what) {
  const int64_t from = micro_size(full_batch, s_.oom_halvings);
  // BatchNorm cannot normalise a single image in training mode: its networks stop at two.
  const int64_t smallest = has_batch_norm_ ? 2 : 1;
  if (micro_size(full_batch, s_.oom_halvings + 1) < smallest || from <= smallest) {
    save_last();
    throw DeviceError("out of memory at the smallest micro-batch (" + std::to_string(from) + " image" +
                      (from > 1 ? "s" : "") + (has_batch_norm_ ? "; BatchNorm needs two" : "") + ", train.batch_size " +
                      std::to_string(full_batch) + ", halved " + std::to_string(s_.oom_halvings) + " time(s)) on " +
                      p_.device.str() + ": " + what +
                      ". The model does not fit: lower data.image_size, set model.grad_checkpointing = true or "
                      "device.precision = \"auto\", or pick a smaller model; checkpoints/last is saved");
  }
  ++s_.oom_halvings;
  const int64_t to = micro_size(full_batch, s_.oom_halvings);
  const int64_t accum = topt_.accum_steps * chunks_of(full_batch, to);
  s_.oom_events.push_back(
      {{"epoch", epoch + 1}, {"update", s_.step + 1}, {"from", from}, {"to", to}, {"accum_steps", accum}});
  if (graphs_) graphs_->clear();  // their memory pool goes back too
  device::backend_for(p_.device.type()).empty_cache();
  log("  out of memory at update " + std::to_string(s_.step + 1) + " (micro-batch " + std::to_string(from) + "): now " +
      std::to_string(to) + " x " + std::to_string(accum) + " accumulated per update (effective batch " +
      std::to_string(full_batch * topt_.accum_steps) + ", lr and schedule unchanged); retrying the update");
}

void Trainer::run_loaded_batch(const data::Batch& b, int64_t epoch, int64_t full_batch, int64_t group_chunks,
                               bool last_of_group, GroupSums& g) {
  const int64_t micro = micro_size(full_batch, s_.oom_halvings);
  const int64_t rows = b.images.size(0);
  const int64_t per_full = chunks_of(full_batch, micro);
  for (int64_t c = 0, start = 0; start < rows; ++c, start += micro) {
    const int64_t len = std::min(micro, rows - start);
    const data::Batch mb = len == rows ? b : data::slice_batch(b, start, len);
    auto x = data::to_model_input(mb, p_.device);
    auto y = mb.targets.to(p_.device, /*non_blocking=*/true);
    // Mixing draws from (epoch, batch index): micro-batch c of loader batch i is batch i * per_full + c of
    // a run whose loader made micro-batches from the start.
    if (mix_) mix_(x, y, epoch, b.index * per_full + c);
    at::Tensor f = mb.features.defined() ? mb.features.to(p_.device, /*non_blocking=*/true) : at::Tensor();
    // Each micro-batch's mean loss weighs 1/(the group's real size): the group's gradient is the
    // gradient of its mean loss, also for a short final group (timm; Lightning divides by accum).
    // fp16 multiplies by the loss scale / that size instead.
    const double weight =
        p_.scaler.enabled() ? p_.scaler.scale() / static_cast<double>(group_chunks) : static_cast<double>(group_chunks);
    at::Tensor ld;
    if (graphs_ && graphs_->on()) {
      if (p_.fake_oom_above >= 0 && len > p_.fake_oom_above) device::throw_fake_oom(len, p_.fake_oom_above);
      ld = graphs_->run(x, f, y, weight, group_chunks == 1);
    } else {
      const MicroStep step = micro_step();
      auto l = step.forward(x, f, y);
      // The test hook fails where real out-of-memory errors mostly happen: after the forward pass (BatchNorm
      // statistics and dropout's generator already moved), before backward.
      if (p_.fake_oom_above >= 0 && len > p_.fake_oom_above) device::throw_fake_oom(len, p_.fake_oom_above);
      if (reducer_ && last_of_group && start + len >= rows) reducer_->arm();
      step.backward(l, step.weight_tensor(weight, p_.device));
      ld = l.detach();
    }
    g.loss += ld;
    g.loss_double += ld.to(torch::kDouble);
    ++g.count;
    g.images += len;
  }
}

bool Trainer::run_epoch(int64_t epoch) {
  const int64_t accum = topt_.accum_steps;
  auto loader = train_loader_(epoch, s_.batch);
  const int64_t n = loader->size();
  const int64_t full = loader->batch_size();
  const bool backoff = oom_backoff_enabled();
  p_.net->train();
  if (graphs_) graphs_->check_model();
  Progress progress(io_.progress,
                    (io_.label.empty() ? "" : io_.label + " ") + "epoch " + std::to_string(epoch + 1) + "/" +
                        std::to_string(plan_.epochs()),
                    n);
  auto t0 = std::chrono::steady_clock::now();
  const auto dev_opts = torch::TensorOptions().device(p_.device);
  GroupSums g{torch::zeros({}, dev_opts), torch::zeros({}, dev_opts.dtype(torch::kDouble))};
  at::Tensor epoch_loss = torch::zeros({}, dev_opts.dtype(torch::kDouble));
  // Device-side sums are folded into the state only where it is saved or read (no sync per step).
  auto flush = [&] {
    s_.epoch_loss_sum += epoch_loss.item<double>();
    epoch_loss.zero_();
    double dt = seconds_since(t0);
    s_.epoch_seconds += dt;
    s_.train_seconds += dt;
    t0 = std::chrono::steady_clock::now();
  };
  auto mean_loss = [&] { return s_.epoch_loss_sum / static_cast<double>(std::max<int64_t>(1, s_.epoch_loss_count)); };
  int64_t in_group = 0, group_size = 0;
  double lr = 0;
  std::vector<data::Batch> group;  // the update's loaded batches so far, kept for an out-of-memory retry
  ModelSnapshot snapshot;          // what a retried (out-of-memory) attempt restores
  // Micro-batches in the group [first, first + group_size) of loader batches at the current micro-batch size.
  auto group_chunks = [&](int64_t first) {
    const int64_t micro = micro_size(full, s_.oom_halvings);
    int64_t c = 0;
    for (int64_t i = first; i < first + group_size; ++i) c += chunks_of(loader->rows_in(i), micro);
    return c;
  };
  data::Batch b;
  while (loader->next(b)) {
    if (b.index % accum == 0) {
      // A new update: its group is `accum` loader batches, or what is left of the epoch.
      group_size = std::min<int64_t>(accum, n - b.index);
      in_group = 0;
      lr = plan_.lr_at(s_.step);
      p_.opt->set_lr(lr);
      if (auto m = plan_.momentum_at(s_.step)) p_.opt->set_momentum(*m);
      for (auto& cb : callbacks_) cb->on_step_begin(*this);
      p_.opt->zero_grad();
      g.loss.zero_();
      g.loss_double.zero_();
      g.count = g.images = 0;
      if (backoff) {
        group.clear();
        snapshot.take(*p_.net);
      }
    }
    const int64_t first = b.index - in_group;
    const bool last_of_group = in_group + 1 == group_size;
    if (!backoff) {
      run_loaded_batch(b, epoch, full, group_chunks(first), last_of_group, g);
    } else {
      group.push_back(b);
      size_t done = group.size() - 1;  // loaded batches of this group already run at the current size
      for (;;) {
        try {
          for (size_t i = done; i < group.size(); ++i)
            run_loaded_batch(group[i], epoch, full, group_chunks(first), last_of_group && i + 1 == group.size(), g);
          break;
        } catch (const std::exception& e) {
          if (!device::is_out_of_memory(e)) throw;
          std::string what = e.what();
          what = what.substr(0, what.find('\n'));
          if (!abandon_reduction())
            throw DeviceError(
                "out of memory in backward at update " + std::to_string(s_.step + 1) + " (micro-batch " +
                std::to_string(micro_size(full, s_.oom_halvings)) +
                ") after this rank had started summing "
                "gradients with the others: the update cannot be retried at a smaller micro-batch. Set "
                "device.dist_overlap = false (OOM back-off then works in multi-process runs) or a smaller "
                "train.batch_size: " +
                what);
          // Everything this update computed is dropped: the group starts again at the smaller size.
          p_.opt->zero_grad();
          g.loss.zero_();
          g.loss_double.zero_();
          g.count = g.images = 0;
          snapshot.restore(*p_.net);
          back_off(epoch, full, what);
          done = 0;
        }
      }
    }
    ++in_group;
    if (in_group < group_size) continue;

    epoch_loss += g.loss_double;
    s_.epoch_loss_count += g.count;
    s_.epoch_images += g.images;
    s_.train_images += g.images;
    finish_update(g.loss, stop_signal().load() != 0 || (stop_requested_ && stop_mid_epoch_));
    s_.batch = b.index + 1;
    progress.update(
        s_.batch,
        [&] { return (s_.epoch_loss_sum + epoch_loss.item<double>()) / std::max<int64_t>(1, s_.epoch_loss_count); }, lr,
        s_.epoch_images);
    // Data parallel: every rank stops at the same update when any of them was asked to (before it:
    // a stop asked during this update's callbacks counts at the next one).
    const bool stop_now = p_.group ? dist_stop_ : stop_signal().load() != 0 || (stop_requested_ && stop_mid_epoch_);
    const bool periodic = topt_.checkpoint_every_steps > 0 && s_.step % topt_.checkpoint_every_steps == 0;
    if (s_.batch < n && (stop_now || periodic)) {
      flush();
      if (p_.group) job_partials_ = epoch_sums();  // every rank is here at the same update
      save_last();
      job_partials_.reset();
      if (stop_now) {
        progress.finish(mean_loss());
        return false;
      }
    }
    if (stop_now) break;  // the epoch is complete anyway: finish it normally
  }
  flush();
  progress.finish(mean_loss());
  return true;
}

FitOutcome Trainer::fit() {
  last_mark_ = std::chrono::steady_clock::now();
  for (auto& cb : callbacks_) cb->on_fit_start(*this);
  FitOutcome out;
  for (int64_t epoch = s_.epoch; epoch < plan_.epochs(); ++epoch) {
    apply_plan_for_epoch(epoch);
    if (s_.batch == 0)
      for (auto& cb : callbacks_) cb->on_epoch_begin(*this);
    bool complete = run_epoch(epoch);
    if (!complete) {
      // A signal to any rank interrupts every rank (each saved checkpoints/last at the same update).
      if (int sig = stop_signal().load() ? stop_signal().load() : dist_signal_) return {"interrupted", sig};
      out.status = stop_status_.empty() ? "stopped" : stop_status_;
      s_.stop_reason = stop_reason_;
      break;
    }
    end_epoch(epoch);
    // Every rank votes after each epoch: one rank's signal or stop request ends every rank's run alike.
    const StopVote vote = vote_stop(stop_requested_, stop_signal().load());
    if (vote.signal != 0) {
      if (!stop_signal().load()) log("  stopping: another rank received signal " + std::to_string(vote.signal));
      save_last();
      return {"interrupted", vote.signal};
    }
    if (vote.any && !stop_requested_) request_stop("another rank stopped", false, "stopped");
    if (stop_requested_) {
      s_.stop_reason = stop_reason_;
      out.status = stop_status_;
      log("  stopping: " + stop_reason_);
      break;
    }
  }
  // The training loop's collectives end here: SWA's BatchNorm recalibration and prediction run per rank.
  if (p_.group) model::set_batchnorm_sync(nullptr);
  bool replaced = false;
  for (auto& cb : callbacks_) {
    cb->on_fit_end(*this);
    replaced = replaced || cb->replaces_weights_at_fit_end();
  }
  // SWA leaves its averaged, BN-recalibrated weights in the model: they become checkpoints/last.
  if (replaced) save_last();
  if (out.status.empty()) out.status = "completed";
  return out;
}

}  // namespace kg::train
