#include "train/engine.h"

#include <atomic>
#include <csignal>
#include <chrono>
#include <cmath>

#include <torch/torch.h>

#include "core/error.h"
#include "core/stop.h"
#include "device/distributed.h"
#include "metric/metric.h"
#include "train/step.h"
#include "train/window_pool.h"

namespace kg::train {

namespace {

std::atomic<bool> g_predictions_stop{false};

void stop_if_signalled() {
  if (!g_predictions_stop.load()) return;
  if (const int sig = stop_signal().load())
    throw Interrupted(sig == SIGTERM ? kExitSigterm : kExitSigint,
                      "stopped by signal " + std::to_string(sig) +
                          " while predicting; no prediction file was written (kgtrain fit --resume redoes a fit's "
                          "out-of-fold predictions; other commands start again)");
}

// A batch's samples that start a row (window 0): its rows and targets are the pooled predictions'.
std::vector<int64_t> first_windows(const data::Batch& b) {
  std::vector<int64_t> at;
  for (size_t i = 0; i < b.windows.size(); ++i)
    if (b.windows[i] == 0) at.push_back(static_cast<int64_t>(i));
  return at;
}

void keep_first_windows(const data::Batch& b, std::vector<int64_t>& rows, std::vector<at::Tensor>& targets) {
  const auto at = first_windows(b);
  for (int64_t i : at) rows.push_back(b.rows[static_cast<size_t>(i)]);
  if (b.targets.defined()) targets.push_back(b.targets.index_select(0, torch::tensor(at, torch::kLong)));
}

}  // namespace

void set_predictions_stop_on_signal(bool on) { g_predictions_stop.store(on); }

Predictions predict(model::Network& net, data::Loader& loader, const c10::Device& device, const loss::Loss* loss,
                    Task task, device::Precision precision) {
  Predictions p;
  torch::NoGradGuard no_grad;
  net.eval();
  auto t0 = std::chrono::steady_clock::now();
  std::vector<at::Tensor> probs, targets;
  double loss_sum = 0;
  int64_t hits = 0;  // masked-language-model batches: the predicted tokens' top-1 hits
  bool masked = false;
  // Windows (text's data.stride): raw outputs kept, pooled per row at the end, then the loss and activation.
  const std::string pool = loader.window_pool();
  std::vector<at::Tensor> raw;
  std::vector<int64_t> windows;
  data::Batch b;
  while (loader.next(b)) {
    stop_if_signalled();
    const at::Tensor logits = forward_float32(net, data::to_model_input(b, device), precision, device.type());
    if (b.inputs.predict.defined()) {  // masked tokens: their loss and top-1 hits, not [tokens, vocab] outputs
      const at::Tensor y = b.targets.to(device, true);
      if (loss) loss_sum += loss->forward(logits, y).item<double>() * logits.size(0);
      hits += logits.argmax(1).eq(y.masked_select(y.ge(0))).sum().item<int64_t>();
      p.images += logits.size(0);
      masked = true;
      continue;
    }
    if (!pool.empty()) {
      raw.push_back(logits.to(torch::kCPU));
      windows.insert(windows.end(), b.windows.begin(), b.windows.end());
      keep_first_windows(b, p.rows, targets);
      continue;
    }
    if (loss && b.targets.defined())
      loss_sum += loss->forward(logits, b.targets.to(device, true)).item<double>() * logits.size(0);
    probs.push_back(metric::activate(logits, task).to(torch::kCPU));
    if (b.targets.defined()) targets.push_back(b.targets);
    p.rows.insert(p.rows.end(), b.rows.begin(), b.rows.end());
    p.images += logits.size(0);
  }
  if (!pool.empty() && !raw.empty()) {
    const at::Tensor pooled = pool_windows(torch::cat(raw), window_starts(windows), pool);
    if (!targets.empty() && loss)
      loss_sum = loss->forward(pooled.to(device), torch::cat(targets).to(device)).item<double>() *
                 static_cast<double>(pooled.size(0));
    probs.push_back(metric::activate(pooled, task));
    p.images = pooled.size(0);
  }
  p.probs = probs.empty() ? torch::empty({0, 0}) : torch::cat(probs);
  if (!targets.empty()) p.targets = torch::cat(targets);
  p.loss = p.images ? loss_sum / static_cast<double>(p.images) : 0.0;
  if (masked && p.images > 0)
    p.extra = {{"masked_accuracy", static_cast<double>(hits) / static_cast<double>(p.images)},
               {"perplexity", std::exp(p.loss)}};
  p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

void gather_predictions(Predictions& p, device::ProcessGroup& group) {
  const int w = group.world_size(), r = group.rank();
  KG_ASSERT(p.images > 0 && p.probs.dim() == 2, "rank ", r, " has no validation rows to gather");
  at::Tensor counts = torch::zeros({w}, torch::kLong);
  counts[r] = p.images;
  std::vector<at::Tensor> c{counts};
  group.all_reduce_sum(c);
  const int64_t n = counts.sum().item<int64_t>();
  // Rank r's j-th row sits at r + j * w (shard_rows); a sum of zero-padded copies puts every share in place.
  at::Tensor pos = torch::arange(r, n, w, torch::kLong);
  KG_ASSERT(pos.size(0) == p.images, "rank ", r, " predicted ", p.images, " rows, its share is ", pos.size(0));
  auto placed = [&](const at::Tensor& t) {
    auto sizes = t.sizes().vec();
    sizes[0] = n;
    return torch::zeros(sizes, t.options()).index_copy_(0, pos, t);
  };
  std::vector<at::Tensor> t{placed(p.probs), placed(torch::tensor(p.rows, torch::kLong)),
                            torch::full({1}, p.loss * static_cast<double>(p.images), torch::kDouble)};
  if (p.targets.defined()) t.push_back(placed(p.targets));
  group.all_reduce_sum(t);
  p.probs = t[0];
  p.rows.assign(t[1].data_ptr<int64_t>(), t[1].data_ptr<int64_t>() + n);
  p.loss = t[2].item<double>() / static_cast<double>(n);
  if (p.targets.defined()) p.targets = t[3];
  p.images = n;
}

ViewOutputs predict_views(model::Network& net, data::Loader& loader, const c10::Device& device,
                          device::Precision precision, const std::vector<InputView>& views) {
  ViewOutputs o;
  torch::NoGradGuard no_grad;
  net.eval();
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::vector<at::Tensor>> raw(views.size());
  std::vector<at::Tensor> targets;
  const std::string pool = loader.window_pool();  // windows: pooled per row below (train/window_pool.h)
  std::vector<int64_t> windows;
  data::Batch b;
  while (loader.next(b)) {
    stop_if_signalled();
    const model::Inputs in = data::to_model_input(b, device);
    for (size_t v = 0; v < views.size(); ++v) {
      model::Inputs view = in;
      if (views[v]) view.pixels = views[v](in.pixels);
      raw[v].push_back(forward_float32(net, view, precision, device.type()).to(torch::kCPU));
    }
    o.images += in.size();
    if (!pool.empty()) {
      windows.insert(windows.end(), b.windows.begin(), b.windows.end());
      keep_first_windows(b, o.rows, targets);
      continue;
    }
    if (b.targets.defined()) targets.push_back(b.targets);
    o.rows.insert(o.rows.end(), b.rows.begin(), b.rows.end());
  }
  for (auto& r : raw) {
    o.raw.push_back(r.empty() ? torch::empty({0, 0}) : torch::cat(r));
    if (!pool.empty() && !r.empty()) o.raw.back() = pool_windows(o.raw.back(), window_starts(windows), pool);
  }
  if (!targets.empty()) o.targets = torch::cat(targets);
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return o;
}

}  // namespace kg::train
