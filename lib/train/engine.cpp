#include "train/engine.h"

#include <chrono>

#include <torch/torch.h>

#include "core/stop.h"

namespace kg::train {

EpochResult train_epoch(model::Network& net, optim::Optimizer& opt, const optim::Schedule& schedule,
                        const loss::Loss& loss, data::Loader& loader, const c10::Device& device, int64_t& step,
                        Progress& progress, const BatchHook& hook) {
  EpochResult r;
  net.train();
  auto t0 = std::chrono::steady_clock::now();
  // Sum losses on the device; reading one back per step would synchronise a GPU every step.
  at::Tensor loss_sum = torch::zeros({}, torch::TensorOptions().device(device));
  int64_t batches = 0;
  data::Batch b;
  while (loader.next(b)) {
    r.lr = schedule.lr_at(step);
    opt.set_lr(r.lr);
    if (auto m = schedule.momentum_at(step)) opt.set_momentum(*m);
    auto x = data::to_model_input(b, device);
    auto y = b.targets.to(device, /*non_blocking=*/true);
    if (hook) hook(x, y, b.index);
    opt.zero_grad();
    at::Tensor f = b.features.defined() ? b.features.to(device, /*non_blocking=*/true) : at::Tensor();
    auto l = loss.forward(net.forward(x, f), y);
    l.backward();
    opt.step();
    ++step;
    ++batches;
    r.images += x.size(0);
    loss_sum += l.detach();
    progress.update(batches, [&] { return loss_sum.item<double>() / static_cast<double>(batches); }, r.lr, r.images);
    if (stop_signal().load()) {
      r.stopped = true;
      break;
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.loss = batches ? loss_sum.item<double>() / static_cast<double>(batches) : 0.0;
  progress.finish(r.loss);
  return r;
}

Predictions predict(model::Network& net, data::Loader& loader, const c10::Device& device, const loss::Loss* loss) {
  Predictions p;
  torch::NoGradGuard no_grad;
  net.eval();
  auto t0 = std::chrono::steady_clock::now();
  std::vector<at::Tensor> probs, targets;
  double loss_sum = 0;
  data::Batch b;
  while (loader.next(b)) {
    at::Tensor f = b.features.defined() ? b.features.to(device, /*non_blocking=*/true) : at::Tensor();
    auto logits = net.forward(data::to_model_input(b, device), f);
    if (loss && b.targets.defined()) loss_sum += loss->forward(logits, b.targets.to(device, true)).item<double>() * logits.size(0);
    probs.push_back(torch::softmax(logits.to(torch::kFloat), 1).to(torch::kCPU));
    if (b.targets.defined()) targets.push_back(b.targets);
    p.rows.insert(p.rows.end(), b.rows.begin(), b.rows.end());
    p.images += logits.size(0);
  }
  p.probs = probs.empty() ? torch::empty({0, 0}) : torch::cat(probs);
  if (!targets.empty()) p.targets = torch::cat(targets);
  p.loss = p.images ? loss_sum / static_cast<double>(p.images) : 0.0;
  p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

}  // namespace kg::train
