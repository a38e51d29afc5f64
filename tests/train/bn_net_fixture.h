// BnNet (BatchNorm2d on the input, then a fastai head with BatchNorm1d) and the tiny PNG dataset as
// double-precision batches: fixtures of the BN recalibration and SWA-in-the-loop tests.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "data/loader.h"
#include "data/table.h"
#include "data/transform.h"
#include "model/model.h"
#include "support/fixtures.h"

namespace kg::test::bn {

using nlohmann::json;

// BatchNorm2d straight on the input (its statistics are the images'), then the fastai head with one
// hidden layer: BatchNorm1d on the pooled features, Linear, ReLU, BatchNorm1d, Linear.
class BnNet final : public kg::model::Network {
 public:
  explicit BnNet(const kg::model::ModelContext& ctx) {
    bn = register_module("bn", torch::nn::BatchNorm2d(ctx.in_chans));
    add_group("stem", {"bn"});
    finish(ctx, *this, "fc");
  }
  at::Tensor forward_features(const at::Tensor& x) override { return bn->forward(x); }
  torch::nn::BatchNorm2d bn{nullptr};
};

inline std::shared_ptr<BnNet> make_net() {
  kg::model::ModelContext ctx;
  ctx.in_chans = 1;
  ctx.num_outputs = 2;
  ctx.height = ctx.width = 12;
  ctx.model.head_hidden = {3};
  ctx.model.head_dropout = 0;  // dropout in train mode would make the head's BN inputs random
  auto net = std::make_shared<BnNet>(ctx);
  torch::NoGradGuard ng;
  net->bn->weight.fill_(1.5);
  net->bn->bias.fill_(0.2);
  return net;
}

inline std::vector<torch::nn::BatchNormOptions*> all_bn_options(kg::model::Network& net,
                                                                std::vector<std::string>* names = nullptr) {
  std::vector<torch::nn::BatchNormOptions*> out;
  for (auto& item : net.named_modules("", false)) {
    const auto& name = item.key();
    const auto& m = item.value();
    if (auto* b1 = dynamic_cast<torch::nn::BatchNorm1dImpl*>(m.get()))
      out.push_back(&b1->options);
    else if (auto* b2 = dynamic_cast<torch::nn::BatchNorm2dImpl*>(m.get()))
      out.push_back(&b2->options);
    else
      continue;
    if (names) names->push_back(name);
  }
  return out;
}

inline at::Tensor buffer(kg::model::Network& net, const std::string& name) {
  for (auto& b : net.named_buffers(true))
    if (b.key() == name) return b.value();
  FAIL("no buffer " << name);
  return {};
}

struct Data : kg::test::TinyTable {
  std::unique_ptr<kg::data::Pipeline> pipeline;
  std::vector<int64_t> rows;
  kg::data::LoaderOptions lo;
  Data() : TinyTable(37) {
    pipeline = std::make_unique<kg::data::Pipeline>(json::array(), kg::data::geometry(opts), true);
    for (int64_t i = 0; i < table.size(); ++i) rows.push_back(i);
    lo.batch_size = 8;  // 37 rows: 4 full batches and one of 5
    lo.shuffle = true;
    lo.seed = 3;
    lo.epoch = 1;
  }
  std::unique_ptr<kg::data::Loader> loader(int64_t max_batches = -1) const {
    auto o = lo;
    o.max_batches = max_batches;
    return std::make_unique<kg::data::Loader>(table, rows, *pipeline, o);
  }
  std::vector<at::Tensor> images() const {
    std::vector<at::Tensor> out;
    auto l = loader();
    kg::data::Batch b;
    while (l->next(b)) out.push_back(kg::data::to_model_input(b, torch::kCPU).pixels.to(torch::kDouble));
    return out;
  }
};

// What one pass with cumulative averaging must give, computed from the batches: BatchNorm2d on the
// images, then BatchNorm1d on the average-pooled output of BatchNorm2d in train mode (batch statistics).
struct Expected {
  double bn2d_mean = 0, bn2d_var = 0;  // mean over batches of batch mean / unbiased batch variance
  double head_mean = 0, head_var = 0;
  double bn2d_mean_m01 = 0, bn2d_var_m01 = 1;  // the same with momentum 0.1 from (0, 1)
};

inline Expected expected_stats(const std::vector<at::Tensor>& batches, size_t n, double eps) {
  Expected e;
  for (size_t i = 0; i < n; ++i) {
    const auto& x = batches[i];  // [B, 1, 12, 12]
    const double m = x.mean().item<double>();
    const double v = x.var(/*unbiased=*/true).item<double>();
    const double vb = x.var(/*unbiased=*/false).item<double>();
    e.bn2d_mean += m / static_cast<double>(n);
    e.bn2d_var += v / static_cast<double>(n);
    e.bn2d_mean_m01 = 0.9 * e.bn2d_mean_m01 + 0.1 * m;
    e.bn2d_var_m01 = 0.9 * e.bn2d_var_m01 + 0.1 * v;
    auto pooled = ((x - m) / std::sqrt(vb + eps) * 1.5 + 0.2).mean({1, 2, 3});  // [B]
    e.head_mean += pooled.mean().item<double>() / static_cast<double>(n);
    e.head_var += pooled.var(true).item<double>() / static_cast<double>(n);
  }
  return e;
}

}  // namespace kg::test::bn
