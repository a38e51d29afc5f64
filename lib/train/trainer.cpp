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
#include "device/test_hooks.h"
#include "train/adversarial.h"
#include "train/model_snapshot.h"
#include "train/step.h"
#include "train/step_graphs.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kg::train {

// --- Trainer -------------------------------------------------------------------------------------

namespace {
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
      policy_(topt),
      freezer_(*parts.net, topt.train_bn),
      store_((fs::path(io_.dir) / "checkpoints").string(), static_cast<int>(copt.keep_last),
             static_cast<int>(copt.top_k), parts.metrics->higher_is_better()) {
  std::sort(callbacks_.begin(), callbacks_.end(),
            [](const CallbackPtr& a, const CallbackPtr& b) { return a->order() < b->order(); });
  params_ = p_.net->parameters();
  bool has_batch_norm = false;
  for (auto& m : p_.net->modules(/*include_self=*/false))
    if (m->name().find("BatchNorm") != std::string::npos) has_batch_norm = true;
  backoff_ = std::make_unique<OomBackoff>(
      topt_.oom_backoff && (p_.device.is_cuda() || device::test_hooks().fake_oom_above >= 0), has_batch_norm,
      topt_.accum_steps, p_.device.str());
  if (p_.cuda_graphs) {
    std::string why;
    auto capturer =
        device::test_hooks().emulate_graphs ? device::emulated_capturer() : device::graph_capturer(p_.device, &why);
    if (capturer)
      graphs_ = std::make_unique<GraphedSteps>(std::move(capturer), micro_step(), params_, io_.log);
    else
      log("  cuda graphs: off (" + why + "); the step runs eagerly");
  }
  if (topt_.adv_kind != "none") {
    adversary_ = std::make_unique<Adversary>(adversarial_options(topt_), *p_.net);
    log("  adversarial " + topt_.adv_kind + ": " + std::to_string(adversary_->tensors()) + " tensors perturbed, eps " +
        format_significant(adversary_->eps(), 3) +
        (topt_.adv_kind == "awp" ? ", lr " + format_significant(topt_.adv_lr, 3) : "") + ", from epoch " +
        std::to_string(topt_.adv_start_epoch) + " (a second forward and backward per micro-batch" +
        (p_.group ? "; the ranks' gradients summed once, after both backwards; each rank perturbs along its own "
                    "micro-batch's gradient"
                  : "") +
        ")");
  }
  // A graph replays backward without the reducer's hooks, and the adversarial step's second backward must not sum
  // the first's buckets again: with either, the buckets go after backward.
  ranks_ = std::make_unique<RankSync>(p_.group, p_.dist_bucket_bytes, p_.dist_overlap && !graphs_ && !adversary_);
  if (ranks_->active()) {
    s_.world_size = ranks_->world_size();
    ranks_->broadcast_weights(*p_.net);  // every rank starts from rank 0's weights
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
  freezer_.apply(plan_, epoch, *p_.opt);
  ranks_->set_trainable(params_);
}

// One update in progress: its loader batches [first, first + size), those loaded so far (kept for an
// out-of-memory retry), the weights a retry restores, and what its micro-batches add up to. The sums are
// folded into the epoch's totals when the update is done (a retry starts them again from nothing).
struct Trainer::UpdateGroup {
  int64_t first = 0, size = 0, loaded = 0;
  double lr = 0;              // the plan's lr of the update
  std::vector<int64_t> rows;  // rows of each of the group's loader batches
  std::vector<data::Batch> batches;
  ModelSnapshot snapshot;
  at::Tensor loss;         // float sum of the micro-batches' mean losses (the non-finite check)
  at::Tensor loss_double;  // the same in double (the epoch's training loss)
  int64_t count = 0, images = 0;

  // Micro-batches in the group at `micro` images per micro-batch.
  int64_t chunks(int64_t micro) const {
    int64_t c = 0;
    for (int64_t r : rows) c += OomBackoff::chunks_of(r, micro);
    return c;
  }
  void reset_sums() {
    loss.zero_();
    loss_double.zero_();
    count = images = 0;
  }
};

bool Trainer::finish_update(const UpdateGroup& g, bool stop_here) {
  const at::Tensor& group_loss_sum = g.loss;
  dist_stop_ = stop_here;
  at::Tensor loss_sum = group_loss_sum;
  if (p_.group) {  // gradients of the whole group are in place: averaged over the ranks
    std::vector<at::Tensor> grads;
    for (auto& p : params_)
      if (p.grad().defined()) grads.push_back(p.grad());
    const auto u = ranks_->all_reduce_update(grads, group_loss_sum, stop_here);
    loss_sum = u.loss_sum;
    dist_stop_ = u.vote.any;
    dist_signal_ = u.vote.signal;
  }
  const UpdateResult r = policy_.finish(params_, loss_sum, *p_.opt, p_.scaler, [this] {
    for (auto& cb : callbacks_) cb->on_grads_ready(*this);
  });
  if (r.outcome == UpdateOutcome::non_finite) {
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
  }
  ++s_.step;
  last_update_ = {s_.step,     r.loss_sum / static_cast<double>(std::max<int64_t>(1, g.count)),
                  r.grad_norm, g.lr,
                  g.images,    r.applied()};
  if (!r.applied()) return false;
  s_.nan_streak = 0;
  for (auto& cb : callbacks_) cb->on_step_end(*this);
  return true;
}

void Trainer::run_loaded_batch(const data::Batch& b, int64_t epoch, int64_t full_batch, bool last_of_group,
                               UpdateGroup& g) {
  const int64_t micro = OomBackoff::micro_size(full_batch, s_.oom_halvings);
  const int64_t group_chunks = g.chunks(micro);
  const int64_t rows = b.size();
  const int64_t per_full = OomBackoff::chunks_of(full_batch, micro);
  // Each micro-batch's mean loss weighs 1/(the group's real size): the group's gradient is the gradient
  // of its mean loss, also for a short final group (timm; Lightning divides by accum).
  const double weight = MicroStep::weight_of(group_chunks, p_.scaler);
  for (int64_t c = 0, start = 0; start < rows; ++c, start += micro) {
    const int64_t len = std::min(micro, rows - start);
    DeviceBatch d = to_device(len == rows ? b : data::slice_batch(b, start, len), p_.device);
    // Mixing draws from (epoch, batch index): micro-batch c of loader batch i is batch i * per_full + c of
    // a run whose loader made micro-batches from the start.
    if (mix_) mix_(d.in.pixels, d.y, epoch, b.index * per_full + c);
    at::Tensor ld;
    if (graphs_ && graphs_->on()) {
      device::maybe_fake_oom(len);
      ld = graphs_->run(d.in, d.y, weight, group_chunks == 1);
    } else {
      const MicroStep step = micro_step();
      auto l = step.forward(d.in, d.y);
      // The test hook fails where real out-of-memory errors mostly happen: after the forward pass (BatchNorm
      // statistics and dropout's generator already moved), before backward.
      device::maybe_fake_oom(len);
      const bool adv = adversary_ && adversary_->active(epoch);
      if (adv) adversary_->before_clean_backward(g.count == 0);
      if (last_of_group && start + len >= rows) ranks_->arm_last_backward();
      const at::Tensor w = step.weight_tensor(weight, p_.device);
      step.backward(l, w);
      if (adv) adversary_->attack([&] { step.backward(step.forward(d.in, d.y), w); });
      ld = l.detach();
    }
    g.loss += ld;
    g.loss_double += ld.to(torch::kDouble);
    ++g.count;
    g.images += len;
  }
}

void Trainer::begin_update(UpdateGroup& g, const data::Loader& loader, int64_t first) {
  // The group is `accum_steps` loader batches, or what is left of the epoch.
  g.first = first;
  g.size = std::min<int64_t>(topt_.accum_steps, loader.size() - first);
  g.loaded = 0;
  g.rows.clear();
  for (int64_t i = first; i < first + g.size; ++i) g.rows.push_back(loader.rows_in(i));
  g.lr = plan_.lr_at(s_.step);
  p_.opt->set_lr(g.lr);
  if (auto m = plan_.momentum_at(s_.step)) p_.opt->set_momentum(*m);
  for (auto& cb : callbacks_) cb->on_step_begin(*this);
  p_.opt->zero_grad();
  g.reset_sums();
  if (backoff_->on()) {
    g.batches.clear();
    g.snapshot.take(*p_.net);
  }
}

void Trainer::run_in_update(UpdateGroup& g, const data::Batch& b, int64_t epoch, int64_t full) {
  const bool last_of_group = g.loaded + 1 == g.size;
  ++g.loaded;
  if (!backoff_->on()) {
    run_loaded_batch(b, epoch, full, last_of_group, g);
    return;
  }
  g.batches.push_back(b);
  size_t done = g.batches.size() - 1;  // loaded batches of this group already run at the current size
  for (;;) {
    try {
      for (size_t i = done; i < g.batches.size(); ++i)
        run_loaded_batch(g.batches[i], epoch, full, last_of_group && i + 1 == g.batches.size(), g);
      return;
    } catch (const std::exception& e) {
      if (!device::is_out_of_memory(e)) throw;
      std::string what = e.what();
      retry_smaller(g, epoch, full, what.substr(0, what.find('\n')));
      done = 0;
    }
  }
}

void Trainer::retry_smaller(UpdateGroup& g, int64_t epoch, int64_t full, const std::string& what) {
  if (!ranks_->abandon())
    throw DeviceError("out of memory in backward at update " + std::to_string(s_.step + 1) + " (micro-batch " +
                      std::to_string(OomBackoff::micro_size(full, s_.oom_halvings)) +
                      ") after this rank had started summing gradients with the others: the update cannot be "
                      "retried at a smaller micro-batch. Set device.dist_overlap = false (OOM back-off then works "
                      "in multi-process runs) or a smaller train.batch_size: " +
                      what);
  // Everything this update computed is dropped: the group starts again at the smaller size.
  p_.opt->zero_grad();
  g.reset_sums();
  g.snapshot.restore(*p_.net);
  if (!backoff_->can_shrink(s_, full)) {
    save_last();
    throw DeviceError(backoff_->exhausted_message(s_, full, what));
  }
  const std::string line = backoff_->shrink(s_, epoch, full);
  if (graphs_) graphs_->clear();  // their memory pool goes back too
  device::backend_for(p_.device.type()).empty_cache();
  log(line);
}

bool Trainer::run_epoch(int64_t epoch) {
  auto loader = train_loader_(epoch, s_.batch);
  const int64_t n = loader->size();
  const int64_t full = loader->batch_size();
  p_.net->train();
  if (graphs_) graphs_->check_model();
  Progress progress(io_.progress,
                    (io_.label.empty() ? "" : io_.label + " ") + "epoch " + std::to_string(epoch + 1) + "/" +
                        std::to_string(plan_.epochs()),
                    n);
  auto t0 = std::chrono::steady_clock::now();
  const auto dev_opts = torch::TensorOptions().device(p_.device);
  UpdateGroup g;
  g.loss = torch::zeros({}, dev_opts);
  g.loss_double = torch::zeros({}, dev_opts.dtype(torch::kDouble));
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
  data::Batch b;
  while (loader->next(b)) {
    if (b.index % topt_.accum_steps == 0) begin_update(g, *loader, b.index);
    run_in_update(g, b, epoch, full);
    if (g.loaded < g.size) continue;

    epoch_loss += g.loss_double;
    s_.epoch_loss_count += g.count;
    s_.epoch_samples += g.images;
    s_.train_images += g.images;
    finish_update(g, stop_signal().load() != 0 || (stop_requested_ && stop_mid_epoch_));
    s_.batch = b.index + 1;
    progress.update(
        s_.batch,
        [&] { return (s_.epoch_loss_sum + epoch_loss.item<double>()) / std::max<int64_t>(1, s_.epoch_loss_count); },
        g.lr, s_.epoch_samples);
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

std::array<double, 3> Trainer::epoch_sums() {
  return ranks_->sum(
      {s_.epoch_loss_sum, static_cast<double>(s_.epoch_loss_count), static_cast<double>(s_.epoch_samples)});
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
    const StopVote vote = ranks_->vote(stop_requested_, stop_signal().load());
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
