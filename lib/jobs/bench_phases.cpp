#include "jobs/bench_phases.h"

#include <torch/torch.h>

#include <algorithm>

#include "core/error.h"
#include "data/loader.h"
#include "data/options.h"
#include "data/resident.h"
#include "device/backend.h"
#include "device/precision.h"
#include "jobs/bench_util.h"
#include "metric/metric.h"
#include "model/model.h"
#include "model/summary.h"
#include "optim/optimizer.h"
#include "session/training.h"
#include "train/callback.h"
#include "train/plan.h"
#include "train/step.h"
#include "train/trainer.h"

using nlohmann::json;

namespace kg::jobs::bench {
namespace {

using Sync = std::function<void()>;

PhaseTiming phase(std::string name, std::string label, int64_t batch, const Windowed& w, std::string note = "") {
  PhaseTiming p;
  p.name = std::move(name);
  p.label = std::move(label);
  p.batch = batch;
  p.ms_per_step = w.seconds_per_step * 1000;
  p.images_per_s = w.images_per_s;
  p.repeats = w.windows;
  p.steps = w.steps_per_window;
  p.note = std::move(note);
  return p;
}

// Ends the Trainer's run after the timed updates: not a std::exception, so no handler in the loop
// (the out-of-memory retry catches std::exception) mistakes it for a failure of the step.
struct EnoughUpdates {};

// Records when each optimizer update is done (device synchronised) and how many images it trained.
// Ordered after EMA (10) and SWA (20), whose per-update work is part of fit's step, and before the
// callbacks that write files at an epoch's end (50 and above): should skipped (non-finite, fp16
// overflow) updates leave the epoch short of the timed count, the run ends there, saving nothing.
class StepClock : public train::Callback {
 public:
  StepClock(int64_t updates, Sync sync) : updates_(updates), sync_(std::move(sync)) {}
  std::string name() const override { return "bench_clock"; }
  int order() const override { return 45; }
  // Before run_epoch builds the loader: the first update pays its start-up (it is warm-up).
  void on_epoch_begin(train::Trainer& t) override {
    sync_();
    last_ = Clock::now();
    images_ = t.state().epoch_samples;
  }
  void on_step_end(train::Trainer& t) override {
    sync_();
    const auto now = Clock::now();
    seconds.push_back(std::chrono::duration<double>(now - last_).count());
    images.push_back(t.state().epoch_samples - images_);
    last_ = now;
    images_ = t.state().epoch_samples;
    if (static_cast<int64_t>(seconds.size()) >= updates_) throw EnoughUpdates{};
  }
  void on_epoch_end(train::Trainer&, train::EpochReport&) override { throw EnoughUpdates{}; }
  std::vector<double> seconds;
  std::vector<int64_t> images;

 private:
  int64_t updates_;
  Sync sync_;
  Clock::time_point last_;
  int64_t images_ = 0;
};

// Decode + augmentation alone on 1 thread and on data.num_workers threads (the loader's work per image).
void time_decode_phases(const session::TrainingContext& s, const std::vector<int64_t>& rows, int64_t batch,
                        const Settings& st, ConfigTiming& r) {
  const auto order = data::epoch_order(rows, s.seed, 0);
  const size_t sample = std::min(order.size(), static_cast<size_t>(std::max<int64_t>(64, batch * st.steps)));
  const auto& pipe = *s.data.train_pipes[data::stage_at(s.data.stages, 0, s.epochs)];
  if (s.data.resident) {
    r.notes.push_back("data.cache = \"device\": the " + std::to_string(s.data.resident->size()) +
                      " images were decoded once before training; the loader phase times the gather + augment on " +
                      s.dev.device.str());
    return;
  }
  const std::string src = s.data.cache ? "from the RAM cache (data.cache = \"ram\"), " : "";
  std::vector<int> threads{1};
  if (s.opt.data.num_workers > 1) threads.push_back(static_cast<int>(s.opt.data.num_workers));
  for (int t : threads) {
    std::vector<double> secs;
    for (int64_t k = 0; k < std::max<int64_t>(1, st.repeats); ++k)
      secs.push_back(time_decode_augment(s.data.table, order, sample, pipe, s.seed, t, s.data.cache.get()));
    PhaseTiming p;
    p.name = t == 1 ? "decode_augment_1_thread" : "decode_augment_workers";
    p.label = "decode + augment (" + std::to_string(t) + (t == 1 ? " thread)" : " threads)");
    p.threads = t;
    p.images_per_s = static_cast<double>(sample) / std::max(1e-12, median(secs));
    p.repeats = static_cast<int64_t>(secs.size());
    p.steps = static_cast<int64_t>(sample);
    p.note = src + std::to_string(sample) + " images per repeat";
    r.phases.push_back(p);
  }
}

// The training loader alone (no model): fit's loader of epoch 1 with its workers, prefetch and cache.
// Returns its first batch for the compute phases.
data::Batch time_loader_phase(const session::TrainingContext& s, const std::vector<int64_t>& rows, const Settings& st,
                              const Sync& sync, ConfigTiming& r) {
  auto loader = s.train_loader(rows, 0, s.epochs);
  const int64_t n = std::min(loader->size(), st.warmup + st.steps * st.repeats);
  std::vector<double> secs;
  std::vector<int64_t> images;
  data::Batch b, first;
  auto last = Clock::now();
  for (int64_t i = 0; i < n && loader->next(b); ++i) {
    if (s.data.resident) sync();  // device batches are ready when the device has made them
    const auto now = Clock::now();
    secs.push_back(std::chrono::duration<double>(now - last).count());
    images.push_back(b.size());
    last = now;
    if (i == 0) first = b;  // holds its buffer: the loader does not reuse it
  }
  const auto w = median_window(secs, images, st.warmup, st.steps, st.repeats);
  r.loader_images_per_s = w.images_per_s;
  if (s.data.resident)
    r.phases.push_back(phase("loader", "loader alone (device)", r.micro_batch, w,
                             "data.cache = \"device\": on " + s.dev.device.str() + ", in the training thread"));
  else
    r.phases.push_back(phase("loader", "loader alone (" + std::to_string(s.opt.data.num_workers) + " workers)",
                             r.micro_batch, w,
                             s.opt.data.num_workers == 0 ? "in the training thread (data.num_workers = 0)" : ""));
  return first;
}

// Host-to-device copy, forward (+ float32 loss), backward and the optimizer step, each synchronised,
// on one real micro-batch with the recipe's optimizer, autocast and loss scale.
void time_compute_phases(const session::TrainingContext& s, model::Network& net, const data::Batch& b,
                         const Settings& st, const Sync& sync, ConfigTiming& r) {
  const auto& dev = s.dev;
  auto opt = optim::build(s.session.recipe, net);
  auto scaler = dev.make_scaler();
  const train::MicroStep micro{&net, s.loss.get(), dev.precision, dev.device.type(), scaler.enabled()};
  const train::GradientPolicy policy(s.session.recipe.get<train::TrainOptions>());
  const auto params = net.parameters();
  const int64_t n = st.warmup + st.steps * st.repeats;
  std::vector<double> copy, fwd, bwd, step;
  net.train();
  for (int64_t i = 0; i < n; ++i) {
    opt->zero_grad();
    sync();
    const auto t0 = Clock::now();
    const train::DeviceBatch in = train::to_device(b, dev.device);
    sync();
    const auto t1 = Clock::now();
    auto l = micro.forward(in.in, in.y);
    sync();
    const auto t2 = Clock::now();
    micro.backward(l, micro.weight_tensor(train::MicroStep::weight_of(1, scaler), dev.device));
    sync();
    const auto t3 = Clock::now();
    // fit's update: fp16 unscaling, clipping, the non-finite check (one host sync), the optimizer step.
    policy.finish(params, l.detach(), *opt, scaler);
    sync();
    const auto t4 = Clock::now();
    auto d = [](auto a, auto c) { return std::chrono::duration<double>(c - a).count(); };
    copy.push_back(d(t0, t1));
    fwd.push_back(d(t1, t2));
    bwd.push_back(d(t2, t3));
    step.push_back(d(t3, t4));
  }
  const int64_t B = b.size();
  const std::vector<int64_t> imgs(static_cast<size_t>(n), B);
  auto win = [&](const std::vector<double>& v) { return median_window(v, imgs, st.warmup, st.steps, st.repeats); };
  const auto wc = win(copy), wf = win(fwd), wb = win(bwd), ws = win(step);
  std::string copy_note = dev.device.is_cpu() ? "cpu: no copy" : (s.data.pin ? "pinned memory" : "pageable memory");
  if (b.inputs.pixels.defined() && b.inputs.pixels.scalar_type() == at::kByte)
    copy_note += ", uint8 batch normalized on the device";
  r.phases.push_back(phase("host_to_device", "host -> device copy", B, wc, copy_note));
  r.phases.push_back(phase("forward", "forward + loss", B, wf, device::precision_name(dev.precision)));
  r.phases.push_back(phase("backward", "backward", B, wb));
  r.phases.push_back(
      phase("optimizer_step", "optimizer step", B, ws, s.session.recipe.get<optim::OptimOptions>().name));
  // One update: accum micro-batches through forward and backward, one step.
  const double update =
      static_cast<double>(r.accum_steps) * (wf.seconds_per_step + wb.seconds_per_step) + ws.seconds_per_step;
  r.compute_images_per_s = update > 0 ? static_cast<double>(B * r.accum_steps) / update : 0.0;
}

// fit's training step: the Trainer on fit's loader, stopped after warm-up + steps x repeats updates.
void time_train_step(const session::TrainingContext& s, model::Network& net, const std::vector<int64_t>& rows,
                     const std::vector<int64_t>& valid, const Settings& st, const Sync& sync, const std::string& dir,
                     ConfigTiming& r) {
  auto opt = optim::build(s.session.recipe, net);
  train::Plan plan(s.session.recipe, s.epochs, s.steps_of(rows), net.group_names());
  r.updates_per_epoch = plan.steps_in_epoch(0);
  KG_CHECK(r.updates_per_epoch > 0, DataError, "bench: epoch 1 has no full batch of ", r.micro_batch, " among its ",
           rows.size(), " training rows (train.batch_size)");
  const int64_t want = st.warmup + st.steps * st.repeats;
  const int64_t updates = std::min(want, r.updates_per_epoch);
  if (updates < want)
    r.notes.push_back("epoch 1 has " + std::to_string(r.updates_per_epoch) + " updates: fewer timed than asked");
  train::TrainerParts parts;
  parts.net = &net;
  parts.opt = opt.get();
  parts.loss = s.loss.get();
  parts.metrics = s.metrics.get();
  parts.device = s.dev.device;
  parts.task = s.data.task;
  parts.precision = s.dev.precision;
  parts.scaler = s.dev.make_scaler();
  parts.cuda_graphs = s.cuda_graphs;
  train::TrainerIO io;
  io.dir = dir;
  io.progress = {/*quiet=*/true, false, 1e9};
  auto cbs = train::build_callbacks(s.session.recipe);
  auto clock = std::make_unique<StepClock>(updates, sync);
  StepClock* c = clock.get();
  cbs.push_back(std::move(clock));
  auto topt = s.opt.train;
  topt.checkpoint_every_steps = 0;  // nothing is saved mid-epoch
  train::Trainer trainer(
      parts, plan, topt, s.opt.checkpoint,
      [&](int64_t epoch, int64_t start) { return s.train_loader(rows, epoch, plan.epochs(), start); },
      [&] { return s.valid_loader(valid); }, s.mix_fn(), std::move(cbs), io);
  try {
    trainer.fit();
  } catch (const EnoughUpdates&) {
  }
  const auto w = median_window(c->seconds, c->images, st.warmup, st.steps, st.repeats);
  r.update_seconds = w.seconds_per_step;
  r.train_images_per_s = w.images_per_s;
  r.train_epoch_seconds = static_cast<double>(r.updates_per_epoch) * w.seconds_per_step;
  r.phases.push_back(phase("train_step", "training step (as fit)", r.micro_batch * r.accum_steps, w,
                           r.accum_steps > 1 ? std::to_string(r.accum_steps) + " micro-batches per update" : ""));
}

// fit's validation step: its evaluation loader, the forward pass under autocast, outputs to the host.
void time_eval_step(const session::TrainingContext& s, model::Network& net, const std::vector<int64_t>& valid,
                    const Settings& st, const Sync& sync, ConfigTiming& r) {
  torch::NoGradGuard no_grad;
  net.eval();
  const int64_t needed = st.warmup + st.steps * st.repeats;
  std::vector<double> secs;
  std::vector<int64_t> images;
  int64_t first_pass = 0;  // batches in one pass over the validation rows
  data::Batch b;
  // A validation set of fewer batches than the timing needs is gone through again: otherwise the
  // windows would hold the first pass's one-off costs (cuDNN autotuning each new batch shape, the
  // short last batch among them) and little else.
  for (int pass = 0; static_cast<int64_t>(secs.size()) < needed; ++pass) {
    auto loader = s.valid_loader(valid, needed - static_cast<int64_t>(secs.size()));
    const size_t before = secs.size();
    auto last = Clock::now();
    while (loader->next(b)) {
      const at::Tensor out =
          train::forward_float32(net, data::to_model_input(b, s.dev.device), s.dev.precision, s.dev.device.type());
      (void)metric::activate(out, s.data.task).to(torch::kCPU);
      sync();
      const auto now = Clock::now();
      secs.push_back(std::chrono::duration<double>(now - last).count());
      images.push_back(b.size());
      last = now;
    }
    if (secs.size() == before) break;  // no validation rows
    if (pass == 0) first_pass = static_cast<int64_t>(secs.size());
  }
  // With more than one pass, the whole first one is warm-up.
  const int64_t warmup = first_pass < needed ? std::max(st.warmup, first_pass) : st.warmup;
  const auto w = median_window(secs, images, warmup, st.steps, st.repeats);  // it keeps one step at least
  r.eval_images_per_s = w.images_per_s;
  r.eval_epoch_seconds = w.images_per_s > 0 ? static_cast<double>(valid.size()) / w.images_per_s : 0.0;
  r.phases.push_back(phase("eval_step", "evaluation step", r.eval_batch, w));
}

}  // namespace

json PhaseTiming::to_json() const {
  return {{"name", name},
          {"batch", batch},
          {"threads", threads > 0 ? json(threads) : json()},
          {"ms_per_step", batch > 0 ? json(ms_per_step) : json()},
          {"images_per_s", images_per_s},
          {"repeats", repeats},
          {"steps", steps},
          {"note", note}};
}

std::string peak_memory_text(const device::PeakMemory& m) {
  std::string s = m.host_rss_bytes >= 0 ? "RSS " + model::bytes_text(m.host_rss_bytes) : "RSS n/a";
  if (!m.host_reset) s += " (process peak)";
  if (m.cuda)
    s += ", CUDA " + model::bytes_text(m.cuda_allocated_bytes) + " allocated / " +
         model::bytes_text(m.cuda_reserved_bytes) + " reserved";
  return s;
}

ConfigTiming config_shape(const session::TrainingContext& s) {
  ConfigTiming r;
  const auto split = s.split_of(s.opt.cv.run_folds.front());
  r.micro_batch = s.batch_at(0, s.epochs);
  r.accum_steps = s.opt.train.accum_steps;
  r.eval_batch = train::eval_batch_size(s.opt.train);
  r.train_rows = static_cast<int64_t>(split.first.size());
  r.valid_rows = static_cast<int64_t>(split.second.size());
  r.num_workers = s.opt.data.num_workers;
  return r;
}

ConfigTiming time_config(const session::TrainingContext& s, const Settings& st, bool phases,
                         const std::string& scratch_dir, const std::function<void(const std::string&)>& log) {
  ConfigTiming r = config_shape(s);
  const auto dev = s.dev;
  const Sync sync = [dev] { device::backend_for(dev.device.type()).synchronize(std::max<int>(0, dev.device.index())); };
  auto [rows, valid] = s.split_of(s.opt.cv.run_folds.front());
  auto net = s.build_net().net;
  if (phases) {
    const auto& g = s.data.train_pipes[data::stage_at(s.data.stages, 0, s.epochs)]->geometry();
    r.macs_per_image =
        model::summarize(*net, g.channels, g.height, g.width, r.micro_batch, s.data.table.feature_dim).macs;
  }
  net->to(dev.device);
  if (dev.channels_last) net->set_channels_last(true);
  if (phases) {
    log("  decode + augment...");
    time_decode_phases(s, rows, r.micro_batch, st, r);
    log("  loader alone...");
    const data::Batch b = time_loader_phase(s, rows, st, sync, r);
    log("  copy, forward, backward, optimizer step...");
    time_compute_phases(s, *net, b, st, sync, r);
  }
  log("  training steps (the Trainer on fit's loader)...");
  time_train_step(s, *net, rows, valid, st, sync, scratch_dir, r);
  log("  evaluation steps...");
  time_eval_step(s, *net, valid, st, sync, r);
  return r;
}

}  // namespace kg::jobs::bench
