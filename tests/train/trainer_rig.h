// A real Trainer over the tiny PNG dataset with a BatchNorm-free two-group network, for tests of the
// loop's mechanics (accumulation, clipping, non-finite policy, freezing, resume).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "data/loader.h"
#include "device/device.h"
#include "device/test_hooks.h"
#include "data/options.h"
#include "data/table.h"
#include "data/transform.h"
#include "loss/loss.h"
#include "metric/metric_set.h"
#include "model/model.h"
#include "optim/optimizer.h"
#include "support/fixtures.h"
#include "train/callback.h"
#include "train/plan.h"
#include "train/trainer.h"

namespace kg::test {

// conv (stem) -> ReLU -> pooled -> fc (head): no BatchNorm, so micro-batch size cannot change the maths.
class TinyNet : public model::Network {
 public:
  explicit TinyNet(const model::ModelContext& ctx)
      : conv(register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(ctx.in_chans, 4, 3).padding(1)))) {
    add_group("stem", {"conv"});
    finish(ctx, *this, "fc");
  }
  at::Tensor forward_features(const at::Tensor& x) override { return torch::relu(conv->forward(x)); }
  torch::nn::Conv2d conv;
};

struct Rig {
  config::Recipe recipe;
  data::DataOptions dopt;
  data::ClassList classes;
  data::Table table;
  std::unique_ptr<data::Pipeline> train_pipe, eval_pipe;
  std::shared_ptr<TinyNet> net;
  optim::OptimizerPtr opt;
  loss::LossPtr loss;
  std::unique_ptr<metric::MetricSet> metrics;
  std::unique_ptr<train::Plan> plan;
  std::unique_ptr<train::Trainer> trainer;
  std::unique_ptr<device::ScopedTestHooks> hooks;  // the rig's fake OOM limit and graph emulation, while it lives
  std::vector<int64_t> train_rows, valid_rows;

  // `n_train` rows train (from the front), the rest validate.
  Rig(const std::string& dataset_root, const std::string& dir, const std::vector<std::string>& overrides,
      int64_t n_train, std::vector<train::CallbackPtr> extra = {}, train::MixFn mix = {},
      device::LossScaler scaler = {}, int64_t fake_oom_above = -1) {
    std::string file = dir + "/rig.toml";
    write_file(file, tiny_recipe(dataset_root));
    std::vector<std::string> args{"schedule.name=constant", "optim.name=sgd", "plots.enabled=false"};
    args.insert(args.end(), overrides.begin(), overrides.end());
    recipe = resolve_recipe({file}, args);
    dopt = recipe.get<data::DataOptions>();
    classes = data::infer_classes(dopt);
    table = data::load_split(dopt, data::Split::train, classes, false, 1);
    for (int64_t i = 0; i < table.size(); ++i) (i < n_train ? train_rows : valid_rows).push_back(i);
    auto geom = data::geometry(dopt);
    train_pipe = std::make_unique<data::Pipeline>(dopt.augment, geom, true, false);
    eval_pipe = std::make_unique<data::Pipeline>(dopt.augment, geom, false, false);
    model::ModelContext ctx;
    ctx.in_chans = geom.channels;
    ctx.num_outputs = classes.outputs();
    ctx.height = geom.height;
    ctx.width = geom.width;
    torch::manual_seed(7);
    net = std::make_shared<TinyNet>(ctx);
    opt = optim::build(recipe, *net);
    loss = loss::build(recipe, {classes.outputs(), kg::Task::multiclass});
    metrics = std::make_unique<metric::MetricSet>(recipe, kg::Task::multiclass, classes.outputs());
    auto topt = recipe.get<train::TrainOptions>();
    const int64_t nt = static_cast<int64_t>(train_rows.size());
    plan = std::make_unique<train::Plan>(
        recipe, topt.epochs,
        [topt, nt](int64_t, int64_t) {
          return (data::num_batches(nt, topt.batch_size, true) + topt.accum_steps - 1) / topt.accum_steps;
        },
        net->group_names());
    auto train_loader = [this, topt](int64_t epoch, int64_t start) {
      data::LoaderOptions lo{topt.batch_size, true, true, 0, 2, 3, epoch};
      lo.start_batch = start;
      return std::make_unique<data::Loader>(table, train_rows, *train_pipe, lo);
    };
    auto valid_loader = [this]() {
      data::LoaderOptions vo{16, false, false, 0, 2, 3, 0};
      return std::make_unique<data::Loader>(table, valid_rows, *eval_pipe, vo);
    };
    auto cbs = train::build_callbacks(recipe);
    for (auto& e : extra) cbs.push_back(std::move(e));
    train::TrainerIO io;
    io.dir = dir;
    io.progress = {true, false, 10};
    train::TrainerParts parts{net.get(),
                              opt.get(),
                              loss.get(),
                              metrics.get(),
                              c10::Device(c10::kCPU),
                              kg::Task::multiclass,
                              device::parse_precision(recipe.get<device::DeviceOptions>().precision),
                              scaler,
                              nullptr,
                              int64_t{25} << 20};
    // device.cuda_graphs = true: emulated (a CPU has no CUDA graphs).
    parts.cuda_graphs = recipe.get<device::DeviceOptions>().cuda_graphs;
    hooks = std::make_unique<device::ScopedTestHooks>(device::TestHooks{fake_oom_above, parts.cuda_graphs});
    trainer = std::make_unique<train::Trainer>(parts, *plan, topt, recipe.get<train::CheckpointOptions>(), train_loader,
                                               valid_loader, std::move(mix), std::move(cbs), io);
  }

  static void write_file(const std::string& path, const std::string& text);
  // Every parameter by name, cloned.
  std::map<std::string, at::Tensor> params() const {
    std::map<std::string, at::Tensor> out;
    for (auto& p : net->named_parameters()) out[p.key()] = p.value().detach().clone();
    return out;
  }
};

inline void Rig::write_file(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "w");
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
}

inline double max_diff(const std::map<std::string, at::Tensor>& a, const std::map<std::string, at::Tensor>& b) {
  double m = 0;
  for (auto& [k, v] : a) m = std::max(m, (v - b.at(k)).abs().max().item<double>());
  return m;
}

}  // namespace kg::test
