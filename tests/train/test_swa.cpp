// SWA callback: SWALR's lr trace (tests/golden/swa.json from torch 1.13, scripts/golden/gen_swa.py), the
// running average against the arithmetic mean, checkpoint round trip, the [swa] section, and EMA + SWA
// in the real training loop (BN recalibration itself: test_bn_recalibrate.cpp).
#include <catch2/catch.hpp>

#include <cmath>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/error.h"
#include "core/fs.h"
#include "loss/loss.h"
#include "metric/metric_set.h"
#include "optim/optimizer.h"
#include "data/loader.h"
#include "data/table.h"
#include "data/transform.h"
#include "model/model.h"
#include "support/fixtures.h"
#include "train/callbacks/ema.h"
#include "train/callbacks/swa.h"
#include "train/options.h"
#include "train/plan.h"
#include "train/trainer.h"
#include "train/bn_net_fixture.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::train::SwaCallback;
using kg::train::SwaOptions;
using nlohmann::json;
using namespace kg::test::bn;

namespace {

struct TinyImpl : torch::nn::Module {
  TinyImpl() {
    fc = register_module("fc", torch::nn::Linear(3, 2));
    bn = register_module("bn", torch::nn::BatchNorm1d(2));
  }
  torch::nn::Linear fc{nullptr};
  torch::nn::BatchNorm1d bn{nullptr};
};

at::Tensor weight_at(const std::string& name, const std::vector<int64_t>& shape, int64_t epoch) {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  auto base = torch::cos(torch::arange(n, torch::kDouble) * 1.3 + static_cast<double>(name.size())).view(shape);
  return base * std::pow(-1.5, static_cast<double>(epoch)) + 0.25 * static_cast<double>(epoch);
}

void set_weights(torch::nn::Module& m, int64_t epoch) {
  torch::NoGradGuard ng;
  for (auto& p : m.named_parameters(true)) p.value().copy_(weight_at(p.key(), p.value().sizes().vec(), epoch));
  for (auto& b : m.named_buffers(true))
    if (b.value().is_floating_point()) b.value().copy_(weight_at(b.key(), b.value().sizes().vec(), epoch));
}

kg::config::Recipe recipe(const std::string& toml) {
  return kg::config::Recipe::validate(kg::config::parse_toml_string(toml, "swa_test.toml"));
}

}  // namespace

TEST_CASE("swa lr follows torch 1.13 SWALR stepped once per epoch", "[unit][callbacks]") {
  const json golden = json::parse(kg::read_file(KGTRAIN_SOURCE_DIR "/tests/golden/swa.json")).at("swalr");
  REQUIRE(golden.size() >= 5);
  for (const auto& c : golden) {
    const double lr0 = c.at("lr0").get<double>(), swa_lr = c.at("swa_lr").get<double>();
    const int64_t a = c.at("anneal_epochs").get<int64_t>();
    const auto strategy = c.at("strategy").get<std::string>();
    const auto& lr = c.at("lr");
    for (size_t k = 0; k < lr.size(); ++k) {
      INFO(strategy << " " << lr0 << " -> " << swa_lr << " over " << a << " epochs, SWA epoch " << k);
      CHECK(kg::train::swalr_lr(lr0, swa_lr, a, strategy, static_cast<int64_t>(k)) ==
            Approx(lr[k].get<double>()).epsilon(1e-12));
    }
  }
}

TEST_CASE("swa_epoch_start: a fraction of the epochs or a number of epochs (Lightning)", "[unit][callbacks]") {
  SwaOptions o;
  CHECK(kg::train::swa_start_epoch(o, 10) == 8);  // default 0.8
  o.swa_epoch_start = 0.75;
  CHECK(kg::train::swa_start_epoch(o, 10) == 7);  // int(0.75 * 10)
  CHECK(kg::train::swa_start_epoch(o, 5) == 3);   // floor(3.75)
  o.swa_epoch_start = 0;
  CHECK(kg::train::swa_start_epoch(o, 5) == 0);
  o.swa_epoch_start = 3;
  CHECK(kg::train::swa_start_epoch(o, 5) == 3);
  CHECK(kg::train::swa_start_epoch(o, 50) == 3);
}

TEST_CASE("swa average after n epochs is the arithmetic mean of the epochs' weights", "[unit][callbacks]") {
  auto m = std::make_shared<TinyImpl>();
  SwaCallback swa(SwaOptions{});
  CHECK(swa.extra_weights() == nullptr);
  const int64_t n = 5;
  for (int64_t e = 0; e < n; ++e) {
    set_weights(*m, e);
    swa.accumulate(*m);
  }
  CHECK(swa.averaged() == n);
  // Parameters only: BatchNorm statistics are recomputed for the averaged weights, not averaged.
  CHECK(swa.average().size() == 4);
  CHECK_FALSE(swa.average().count("bn.running_mean"));
  for (auto& p : m->named_parameters(true)) {
    INFO(p.key());
    auto shape = p.value().sizes().vec();
    auto mean = torch::zeros(shape, torch::kDouble);
    for (int64_t e = 0; e < n; ++e) mean += weight_at(p.key(), shape, e);
    mean /= static_cast<double>(n);
    CHECK(torch::allclose(swa.average().at(p.key()).to(torch::kDouble), mean, 1e-5, 1e-6));
  }
  REQUIRE(swa.extra_weights());
  CHECK(swa.extra_weights() == &swa.average());

  // apply_to puts the mean into the parameters and leaves the buffers alone.
  set_weights(*m, 9);
  auto rm = m->bn->running_mean.clone();
  swa.apply_to(*m);
  for (auto& p : m->named_parameters(true)) CHECK(torch::equal(p.value(), swa.average().at(p.key())));
  CHECK(torch::equal(m->bn->running_mean, rm));
}

TEST_CASE("swa state round-trips through save_state / load_state", "[unit][callbacks]") {
  auto m = std::make_shared<TinyImpl>();
  SwaCallback a(SwaOptions{});
  for (int64_t e = 0; e < 3; ++e) {
    set_weights(*m, e);
    a.accumulate(*m);
  }
  kg::model::TensorMap tensors;
  json state = json::object();
  a.save_state(tensors, state);
  CHECK(state.at("n") == 3);
  REQUIRE(tensors.size() == 4);
  for (auto& [name, t] : a.average()) {
    REQUIRE(tensors.count("cb.swa." + name));
    CHECK(torch::equal(tensors.at("cb.swa." + name), t));
  }
  SwaCallback b(SwaOptions{});
  b.load_state(tensors, state);
  CHECK(b.averaged() == 3);
  for (auto& [name, t] : a.average()) CHECK(torch::equal(b.average().at(name), t));
  // Both continue identically.
  set_weights(*m, 3);
  a.accumulate(*m);
  b.accumulate(*m);
  for (auto& [name, t] : a.average()) CHECK(torch::equal(b.average().at(name), t));
  json state2 = json::object();
  kg::model::TensorMap t2;
  b.save_state(t2, state2);
  CHECK(state2.at("n") == 4);
  for (const char* k : {"started", "start", "anneal", "lr0", "lr", "last_epoch"}) CHECK(state2.contains(k));

  SECTION("a checkpoint written without SWA starts fresh") {
    SwaCallback c(SwaOptions{});
    c.load_state({}, json::object());
    CHECK(c.averaged() == 0);
  }
  SECTION("SWA state without its tensors is a damaged checkpoint") {
    SwaCallback c(SwaOptions{});
    CHECK_THROWS_AS(c.load_state({}, state), kg::CheckpointError);
  }
  SECTION("an average that does not match the model is a CheckpointError") {
    struct OtherImpl : torch::nn::Module {
      OtherImpl() { fc = register_module("fc", torch::nn::Linear(4, 2)); }
      torch::nn::Linear fc{nullptr};
    };
    auto other = std::make_shared<OtherImpl>();
    CHECK_THROWS_AS(b.accumulate(*other), kg::CheckpointError);
    CHECK_THROWS_AS(b.apply_to(*other), kg::CheckpointError);
  }
}

TEST_CASE("[swa] section: off by default, validated, builds the callback", "[unit][callbacks]") {
  auto& reg = kg::train::callback_registry();
  auto off = recipe("[swa]\nswa_lr = 0.01\n");
  CHECK(reg.create("swa", off.section("swa"), off) == nullptr);
  auto on = recipe("[swa]\nenabled = true\nswa_lr = 0.01\nswa_epoch_start = 3\nannealing_strategy = \"linear\"\n");
  auto cb = reg.create("swa", on.section("swa"), on);
  REQUIRE(cb);
  // The documented example is a valid recipe that turns the callback on.
  const auto* info = reg.find_info("swa");
  REQUIRE(info);
  auto example = recipe(info->example);
  CHECK(reg.create("swa", example.section("swa"), example) != nullptr);
  CHECK(cb->name() == "swa");
  CHECK(cb->order() == 20);
  auto o = on.get<kg::train::SwaOptions>();
  CHECK(o.swa_epoch_start == 3);
  CHECK(o.annealing_strategy == "linear");
  auto d = (recipe("")).get<kg::train::SwaOptions>();
  CHECK(d.swa_epoch_start == 0.8);
  CHECK(d.annealing_epochs == 10);
  CHECK(d.annealing_strategy == "cos");
  CHECK_FALSE(d.use_for_best);
  CHECK_THROWS_AS(recipe("[swa]\nswa_epoch_start = 2.5\n"), kg::ConfigError);
  CHECK_THROWS_AS(recipe("[swa]\nannealing_strategy = \"cosine\"\n"), kg::ConfigError);
  CHECK_THROWS_AS(recipe("[swa]\nswa_lr = -0.1\n"), kg::ConfigError);
}

// --- both callbacks inside the real training loop ---------------------------------------------------

namespace {

// Runs after EMA (10) and SWA (20): sees the lr SWA set and the weights each epoch ended with.
class Probe final : public kg::train::Callback {
 public:
  std::string name() const override { return "probe"; }
  int order() const override { return 30; }
  void on_step_begin(kg::train::Trainer& t) override { lrs.emplace_back(t.state().epoch, t.optimizer().lr()); }
  void on_epoch_end(kg::train::Trainer& t, kg::train::EpochReport& r) override {
    kg::model::TensorMap w;
    for (auto& p : t.net().named_parameters(true)) w[p.key()] = p.value().detach().clone();
    weights.push_back(w);
    std::vector<std::string> names;
    for (auto& v : r.variants) names.push_back(v.name);
    variants.push_back(names);
  }
  std::vector<std::pair<int64_t, double>> lrs;
  std::vector<kg::model::TensorMap> weights;
  std::vector<std::vector<std::string>> variants;
};

}  // namespace

TEST_CASE("ema and swa in the training loop: lr annealing, averaged final weights, ema variant",
          "[integration][callbacks]") {
  torch::manual_seed(0);
  Data data;
  auto net = make_net();
  // 5 epochs of 5 updates at a constant lr 0.05; SWA from epoch 3 (after 2) anneals linearly to 0.01
  // over min(10, 3 SWA epochs - 1) = 2 epochs.
  auto rec = recipe(
      "[optim]\nname = \"sgd\"\nlr = 0.05\nmomentum = 0.9\nweight_decay = 0.0\n"
      "[schedule]\nname = \"constant\"\n"
      "[train]\nepochs = 5\nbatch_size = 8\n"
      "[ema]\nenabled = true\ndecay = 0.9\n"
      "[swa]\nenabled = true\nswa_epoch_start = 2\nswa_lr = 0.01\nannealing_strategy = \"linear\"\n");
  kg::train::Plan plan(
      rec, 5, [](int64_t, int64_t) { return int64_t{5}; }, net->group_names());
  auto opt = kg::optim::build(rec, *net);
  auto loss = kg::loss::build(rec, {2, kg::Task::multiclass});
  kg::metric::MetricSet metrics(rec, kg::Task::multiclass, 2);
  kg::train::TrainerParts parts;
  parts.net = net.get();
  parts.opt = opt.get();
  parts.loss = loss.get();
  parts.metrics = &metrics;
  auto train_fn = [&](int64_t epoch, int64_t start) {
    auto o = data.lo;
    o.epoch = epoch;
    o.start_batch = start;
    return std::make_unique<kg::data::Loader>(data.table, data.rows, *data.pipeline, o);
  };
  auto valid_fn = [&] {
    auto o = data.lo;
    o.shuffle = false;
    return std::make_unique<kg::data::Loader>(data.table, data.rows, *data.pipeline, o);
  };
  auto ema_owned = std::make_unique<kg::train::EmaCallback>(rec.get<kg::train::EmaOptions>());
  auto swa_owned = std::make_unique<SwaCallback>(rec.get<kg::train::SwaOptions>());
  auto probe_owned = std::make_unique<Probe>();
  auto* ema = ema_owned.get();
  auto* swa = swa_owned.get();
  auto* probe = probe_owned.get();
  std::vector<kg::train::CallbackPtr> cbs;
  cbs.push_back(std::move(probe_owned));
  cbs.push_back(std::move(swa_owned));
  cbs.push_back(std::move(ema_owned));
  kg::test::TempDir run;
  kg::train::TrainerIO io;
  io.dir = run.path().string();
  io.progress.quiet = true;
  std::vector<std::string> log;
  io.log = [&](const std::string& l) { log.push_back(l); };
  kg::train::Trainer trainer(parts, plan, rec.get<kg::train::TrainOptions>(), rec.get<kg::train::CheckpointOptions>(),
                             train_fn, valid_fn, {}, std::move(cbs), io);
  auto out = trainer.fit();
  CHECK(out.status == "completed");

  // The lr each update ran with: the schedule's before SWA, then SWALR's per epoch.
  REQUIRE(probe->lrs.size() == 25);
  const double want[5] = {0.05, 0.05, 0.05, 0.03, 0.01};
  for (auto& [epoch, lr] : probe->lrs) {
    INFO("epoch " << epoch);
    CHECK(lr == Approx(want[epoch]).epsilon(1e-12));
  }
  const auto& history = trainer.state().history;
  REQUIRE(history.size() == 5);
  CHECK(history[3].at("lr").get<double>() == Approx(0.03));
  CHECK(history[4].at("lr").get<double>() == Approx(0.01));

  // The final model is the mean of the weights that epochs 3, 4 and 5 ended with.
  REQUIRE(probe->weights.size() == 5);
  CHECK(swa->averaged() == 3);
  bool moved = false;  // (bn.bias gets no gradient: the head's BatchNorm removes any shift)
  for (auto& p : net->named_parameters(true)) {
    INFO(p.key());
    auto mean = (probe->weights[2].at(p.key()) + probe->weights[3].at(p.key()) + probe->weights[4].at(p.key())) / 3.0;
    CHECK(torch::allclose(p.value(), mean, 1e-5, 1e-6));
    moved = moved || !torch::allclose(p.value(), probe->weights[4].at(p.key()));
  }
  CHECK(moved);
  // BatchNorm statistics come from one pass over the training data (5 batches), not from training (25).
  for (auto& b : net->named_buffers(true))
    if (b.key().find("num_batches_tracked") != std::string::npos) CHECK(b.value().item<int64_t>() == 5);
  REQUIRE(swa->extra_weights());
  CHECK(swa->extra_weights()->count("bn.running_mean"));
  bool logged = false;
  for (auto& l : log) logged = logged || l.find("swa: valid") != std::string::npos;
  CHECK(logged);

  // EMA: updated after each of the 25 updates and evaluated every epoch as the "ema" variant.
  CHECK(ema->updates() == 25);
  for (size_t e = 0; e < 5; ++e) {
    CHECK(probe->variants[e] == std::vector<std::string>{"ema"});
    CHECK(history[e].contains("ema_valid_loss"));
  }
}

}  // namespace KG_UNITY_ID
}  // namespace
