// The one training update (train/step.h): lr-find's sweep and fit's Trainer take identical updates on the
// same batches, a skipped non-finite update included; the gradient policy's clipping and checks.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "config/resolve.h"
#include "config/validate.h"
#include "support/fixtures.h"
#include "train/lr_finder.h"
#include "train/step.h"
#include "train/trainer_rig.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::test::Rig;

namespace {

using Weights = std::map<std::string, at::Tensor>;

// The weights at the start of every update (skipped ones included), and the lr each update ran at.
struct UpdateRecorder : kg::train::Callback {
  std::vector<Weights> before;
  std::vector<double> lrs;
  std::string name() const override { return "test_update_recorder"; }
  int order() const override { return 5; }
  void on_step_begin(kg::train::Trainer& t) override {
    Weights w;
    for (auto& p : t.net().named_parameters()) w[p.key()] = p.value().detach().clone();
    before.push_back(std::move(w));
    lrs.push_back(t.optimizer().lr());
  }
};

// Makes the head's weight gradient infinite at the `bad`-th backward pass (1-based) while the loss stays
// finite: the case where the trainer skips the update and lr-find once applied it.
void poison_backward(kg::model::Network& net, int bad, std::shared_ptr<int> calls) {
  for (auto& p : net.named_parameters())
    if (p.key() == "fc.weight")
      p.value().register_hook([bad, calls](const at::Tensor& g) {
        return ++*calls == bad ? g * std::numeric_limits<float>::infinity() : g;
      });
}

Weights params_of(const kg::model::Network& net) {
  Weights w;
  for (auto& p : net.named_parameters()) w[p.key()] = p.value().detach().clone();
  return w;
}

bool same(const Weights& a, const Weights& b) {
  if (a.size() != b.size()) return false;
  for (auto& [k, v] : a)
    if (!b.count(k) || !torch::equal(v, b.at(k))) return false;
  return true;
}

}  // namespace

TEST_CASE("lr-find and fit take identical updates on the same batches, a skipped non-finite one included",
          "[integration][train][lr_find]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 40, 4);
  // 32 training rows, batches of 4, 2 per update: 4 updates. The stem is frozen (fit's first epoch),
  // clipping is on, and the 3rd backward pass (update 2) has an infinite gradient with a finite loss.
  const std::vector<std::string> recipe{"train.epochs=1",        "train.batch_size=4", "train.accum_steps=2",
                                        "optim.lr=0.05",         "optim.momentum=0.9", "train.clip_grad_norm=0.5",
                                        "train.nan_policy=skip", "train.freeze=1"};
  std::filesystem::create_directories(dir / "fit");
  auto rec = std::make_unique<UpdateRecorder>();
  auto* recp = rec.get();
  std::vector<kg::train::CallbackPtr> extra;
  extra.push_back(std::move(rec));
  Rig fit(ds.root, dir / "fit", recipe, 32, std::move(extra));
  poison_backward(*fit.net, 3, std::make_shared<int>(0));
  fit.trainer->fit();
  REQUIRE(fit.trainer->state().step == 4);
  CHECK(fit.trainer->state().skipped_updates == 1);
  REQUIRE(recp->before.size() == 4);
  for (double lr : recp->lrs) CHECK(lr == Approx(0.05));

  std::filesystem::create_directories(dir / "find");
  Rig find(ds.root, dir / "find", recipe, 32);  // the same initial weights (the rig seeds them)
  poison_backward(*find.net, 3, std::make_shared<int>(0));
  kg::train::FinderParts parts;
  parts.net = find.net.get();
  parts.recipe = &find.recipe;
  parts.loss = find.loss.get();
  parts.batches = [&find](int64_t epoch) {
    kg::data::LoaderOptions lo{4, true, true, 0, 2, 3, epoch};  // the rig's training loader
    return kg::train::loader_source(
        std::make_unique<kg::data::Loader>(find.table, find.train_rows, *find.train_pipe, lo));
  };
  kg::train::SweepStep sweep(parts);
  std::vector<int> outcomes;  // UpdateOutcome as numbers (Catch prints them)
  for (int i = 0; i < 4; ++i) {
    INFO("update " << i + 1);
    CHECK(same(params_of(*find.net), recp->before[static_cast<size_t>(i)]));
    const double loss = sweep.update(recp->lrs[static_cast<size_t>(i)]);
    CHECK(std::isfinite(loss));
    outcomes.push_back(static_cast<int>(sweep.last().outcome));
  }
  CHECK(same(params_of(*find.net), fit.params()));
  using kg::train::UpdateOutcome;
  CHECK(outcomes ==
        std::vector<int>{static_cast<int>(UpdateOutcome::applied), static_cast<int>(UpdateOutcome::non_finite),
                         static_cast<int>(UpdateOutcome::applied), static_cast<int>(UpdateOutcome::applied)});
  // The frozen stem did not move in either.
  CHECK(torch::equal(fit.params().at("conv.weight"), recp->before[0].at("conv.weight")));
}

namespace {
struct PolicyRig {
  torch::nn::Linear lin{torch::nn::LinearOptions(3, 2)};
  kg::optim::OptimizerPtr opt;
  std::vector<at::Tensor> params;
  explicit PolicyRig(double lr = 0.1) {
    torch::manual_seed(3);
    lin = torch::nn::Linear(torch::nn::LinearOptions(3, 2));
    params = lin->parameters();
    auto recipe = kg::config::Recipe::validate(kg::config::parse_toml_string(
        "[optim]\nname = \"sgd\"\nmomentum = 0.0\nweight_decay = 0.0\nlr = " + std::to_string(lr) + "\n", "test.toml"));
    opt = kg::optim::build(recipe, std::vector<kg::optim::ParamGroup>{{"g", params, {"w", "b"}, 1.0, 0.0}});
  }
  at::Tensor backward(double scale = 1) {
    auto x = torch::ones({4, 3});
    auto l = lin->forward(x).pow(2).mean();
    (l * scale).backward();
    return l.detach();
  }
};
}  // namespace

TEST_CASE("gradient policy: value, then norm clipping, non-finite gradients skip the update", "[unit][train]") {
  kg::train::TrainOptions t;
  kg::device::LossScaler off;
  SECTION("clip_grad_norm scales the gradients to the norm before the step") {
    t.clip_grad_norm = 0.1;
    PolicyRig r;
    auto w0 = r.params[0].detach().clone();
    auto l = r.backward();
    std::vector<at::Tensor> g0;
    for (auto& p : r.params) g0.push_back(p.grad().clone());
    double norm = 0;
    for (auto& g : g0) norm += g.pow(2).sum().item<double>();
    norm = std::sqrt(norm);
    REQUIRE(norm > 0.1);
    auto res = kg::train::GradientPolicy(t).finish(r.params, l, *r.opt, off);
    CHECK(res.applied());
    CHECK(res.loss_sum == Approx(l.item<double>()));
    auto expected = w0 - 0.1 * g0[0] * (0.1 / (norm + 1e-6));
    CHECK(torch::allclose(r.params[0].detach(), expected, 1e-6, 1e-7));
  }
  SECTION("a non-finite gradient: no step, gradients dropped") {
    PolicyRig r;
    auto w0 = r.params[0].detach().clone();
    auto l = r.backward();
    r.params[1].mutable_grad()[0] = std::numeric_limits<float>::quiet_NaN();
    auto res = kg::train::GradientPolicy(t).finish(r.params, l, *r.opt, off);
    CHECK(res.outcome == kg::train::UpdateOutcome::non_finite);
    CHECK(std::isfinite(res.loss_sum));
    CHECK(torch::equal(r.params[0].detach(), w0));
  }
  SECTION("fp16: an overflow at a scale >= 1 is the scale's fault: skipped, the scale backs off") {
    kg::device::LossScaler scaler(kg::device::LossScalerOptions{}, true);
    const double s0 = scaler.scale();
    PolicyRig r;
    auto w0 = r.params[0].detach().clone();
    auto l = r.backward(s0);
    r.params[0].mutable_grad()[0][0] = std::numeric_limits<float>::infinity();
    auto res = kg::train::GradientPolicy(t).finish(r.params, l, *r.opt, scaler);
    CHECK(res.outcome == kg::train::UpdateOutcome::scale_overflow);
    CHECK(scaler.scale() < s0);
    CHECK(torch::equal(r.params[0].detach(), w0));
  }
}

TEST_CASE("forward_float32: the output is float32 under bf16 autocast", "[unit][train]") {
  kg::test::TempDir dir;
  torch::manual_seed(1);
  kg::model::ModelContext ctx;
  ctx.in_chans = 1;
  ctx.num_outputs = 3;
  ctx.height = ctx.width = 8;
  kg::test::TinyNet net(ctx);
  auto out = kg::train::forward_float32(net, kg::model::Inputs::image(torch::rand({2, 1, 8, 8})),
                                        kg::device::Precision::bf16, c10::kCPU);
  CHECK(out.scalar_type() == torch::kFloat);
  CHECK(out.sizes() == at::IntArrayRef({2, 3}));
}

}  // namespace KG_UNITY_ID
}  // namespace
