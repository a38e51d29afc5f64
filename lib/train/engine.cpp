#include "train/engine.h"

#include <chrono>

#include <torch/torch.h>

#include "metric/metric.h"

namespace kg::train {

Predictions predict(model::Network& net, data::Loader& loader, const c10::Device& device, const loss::Loss* loss,
                    const std::string& task, device::Precision precision) {
  Predictions p;
  torch::NoGradGuard no_grad;
  net.eval();
  auto t0 = std::chrono::steady_clock::now();
  std::vector<at::Tensor> probs, targets;
  double loss_sum = 0;
  data::Batch b;
  while (loader.next(b)) {
    at::Tensor f = b.features.defined() ? b.features.to(device, /*non_blocking=*/true) : at::Tensor();
    at::Tensor logits;
    {
      device::AutocastScope autocast(precision, device.type());
      logits = net.forward(data::to_model_input(b, device), f);
    }
    logits = logits.to(torch::kFloat);
    if (loss && b.targets.defined()) loss_sum += loss->forward(logits, b.targets.to(device, true)).item<double>() * logits.size(0);
    probs.push_back(metric::activate(logits, task).to(torch::kCPU));
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

ViewOutputs predict_views(model::Network& net, data::Loader& loader, const c10::Device& device, device::Precision precision,
                          const std::vector<InputView>& views) {
  ViewOutputs o;
  torch::NoGradGuard no_grad;
  net.eval();
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::vector<at::Tensor>> raw(views.size());
  std::vector<at::Tensor> targets;
  data::Batch b;
  while (loader.next(b)) {
    at::Tensor f = b.features.defined() ? b.features.to(device, /*non_blocking=*/true) : at::Tensor();
    auto x = data::to_model_input(b, device);
    for (size_t v = 0; v < views.size(); ++v) {
      at::Tensor out;
      {
        device::AutocastScope autocast(precision, device.type());
        out = net.forward(views[v] ? views[v](x) : x, f);
      }
      raw[v].push_back(out.to(torch::kFloat).to(torch::kCPU));
    }
    if (b.targets.defined()) targets.push_back(b.targets);
    o.rows.insert(o.rows.end(), b.rows.begin(), b.rows.end());
    o.images += x.size(0);
  }
  for (auto& r : raw) o.raw.push_back(r.empty() ? torch::empty({0, 0}) : torch::cat(r));
  if (!targets.empty()) o.targets = torch::cat(targets);
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return o;
}

}  // namespace kg::train
