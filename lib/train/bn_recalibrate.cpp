// update_bn (torch/optim/swa_utils.py): reset the running statistics, momentum None, one pass in train mode.
#include "train/bn_recalibrate.h"

#include <functional>
#include <type_traits>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "data/loader.h"
#include "model/batchnorm.h"
#include "model/model.h"

namespace kg::train {
namespace {

// A BatchNorm layer's statistics and momentum, whatever its dimensionality.
struct BnRef {
  torch::nn::BatchNormOptions* options;
  torch::nn::Module* module;
  std::function<void()> reset;
};

template <class Impl>
bool add_if(torch::nn::Module& m, std::vector<BnRef>& out) {
  auto* bn = dynamic_cast<Impl*>(&m);
  if (!bn) return false;
  if (bn->options.track_running_stats() && bn->running_mean.defined())
    out.push_back({&bn->options, bn, [bn] { bn->reset_running_stats(); }});
  return true;
}

}  // namespace

int64_t recalibrate_bn(model::Network& net, data::Loader& loader, const c10::Device& device, int64_t max_batches) {
  std::vector<BnRef> bns;
  for (auto& m : net.modules(/*include_self=*/false))
    add_if<torch::nn::BatchNorm1dImpl>(*m, bns) || add_if<model::BatchNorm2dImpl>(*m, bns) ||
        add_if<torch::nn::BatchNorm2dImpl>(*m, bns) || add_if<torch::nn::BatchNorm3dImpl>(*m, bns);
  if (bns.empty()) return 0;

  // Pre-order, so restoring in this order gives every module its own mode back (train() recurses).
  std::vector<std::pair<torch::nn::Module*, bool>> modes{{&net, net.is_training()}};
  for (auto& m : net.modules(/*include_self=*/false)) modes.emplace_back(m.get(), m->is_training());
  // c10::optional in LibTorch 1.13, std::optional in 2.x.
  using Momentum = std::decay_t<decltype(std::declval<torch::nn::BatchNormOptions&>().momentum())>;
  std::vector<Momentum> momenta;
  {
    torch::NoGradGuard no_grad;
    for (auto& b : bns) {
      momenta.push_back(b.options->momentum());
      b.reset();  // running_mean 0, running_var 1, num_batches_tracked 0
      b.options->momentum(c10::nullopt);
    }
  }
  auto restore = [&] {
    for (size_t i = 0; i < bns.size(); ++i) bns[i].options->momentum(momenta[i]);
    for (auto& [m, training] : modes) m->train(training);
  };
  try {
    torch::NoGradGuard no_grad;
    net.train(true);
    data::Batch b;
    int64_t n = 0;
    while ((max_batches <= 0 || n < max_batches) && loader.next(b)) {
      net.forward(data::to_model_input(b, device));
      ++n;
    }
  } catch (...) {
    restore();
    throw;
  }
  restore();
  return static_cast<int64_t>(bns.size());
}

}  // namespace kg::train
