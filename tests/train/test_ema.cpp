// EMA callback: timm ModelEmaV3's decay (tests/golden/swa.json, made by scripts/golden/gen_swa.py), the
// shadow against the closed-form lerp chain, checkpoint round trip, and the [ema] section.
#include <catch2/catch.hpp>

#include <cmath>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/error.h"
#include "core/fs.h"
#include "train/callbacks/ema.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::train::EmaCallback;
using kg::train::EmaOptions;
using nlohmann::json;

namespace {

// Parameters (weight, bias, BN affine) and buffers, float and integer.
struct TinyImpl : torch::nn::Module {
  TinyImpl() {
    fc = register_module("fc", torch::nn::Linear(3, 2));
    bn = register_module("bn", torch::nn::BatchNorm1d(2));
  }
  torch::nn::Linear fc{nullptr};
  torch::nn::BatchNorm1d bn{nullptr};
};

std::vector<std::string> float_names(const torch::nn::Module& m) {
  std::vector<std::string> out;
  for (auto& p : m.named_parameters(true)) out.push_back(p.key());
  for (auto& b : m.named_buffers(true))
    if (b.value().is_floating_point()) out.push_back(b.key());
  return out;
}

// The model's weights at "optimizer update" k: a distinct value per element, per tensor and per k.
at::Tensor weight_at(const std::string& name, const std::vector<int64_t>& shape, int64_t k) {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  double phase = static_cast<double>(name.size()) * 0.37;
  auto base = torch::sin(torch::arange(n, torch::kDouble) * 0.9 + phase).view(shape);
  return base * (1.0 + 0.1 * static_cast<double>(k)) + 0.05 * static_cast<double>(k * k);
}

void set_weights(torch::nn::Module& m, int64_t k) {
  torch::NoGradGuard ng;
  for (auto& p : m.named_parameters(true)) p.value().copy_(weight_at(p.key(), p.value().sizes().vec(), k));
  for (auto& b : m.named_buffers(true)) {
    if (b.value().is_floating_point())
      b.value().copy_(weight_at(b.key(), b.value().sizes().vec(), k));
    else
      b.value().fill_(k);  // num_batches_tracked
  }
}

at::Tensor live(const torch::nn::Module& m, const std::string& name) {
  for (auto& p : m.named_parameters(true))
    if (p.key() == name) return p.value();
  for (auto& b : m.named_buffers(true))
    if (b.key() == name) return b.value();
  FAIL("no tensor " << name);
  return {};
}

kg::config::Recipe recipe(const std::string& toml) {
  return kg::config::Recipe::validate(kg::config::parse_toml_string(toml, "ema_test.toml"));
}

}  // namespace

TEST_CASE("ema decay matches timm ModelEmaV3.get_decay", "[unit][callbacks]") {
  const json golden = json::parse(kg::read_file(KGTRAIN_SOURCE_DIR "/tests/golden/swa.json")).at("ema_decay");
  REQUIRE(golden.size() >= 3);
  for (const auto& c : golden) {
    EmaOptions o;
    o.decay = c.at("decay").get<double>();
    o.warmup = c.at("warmup").get<bool>();
    o.warmup_gamma = c.at("warmup_gamma").get<double>();
    o.warmup_power = c.at("warmup_power").get<double>();
    const auto& d = c.at("decays");
    for (size_t s = 0; s < d.size(); ++s) {
      INFO("decay " << o.decay << " warmup " << o.warmup << " step " << s);
      CHECK(kg::train::ema_decay(o, static_cast<int64_t>(s)) == Approx(d[s].get<double>()).margin(1e-15));
    }
  }
  // The warm-up formula at steps 0..5 written out here: timm counts from the update before this one.
  EmaOptions o;
  o.decay = 0.9998;
  o.warmup = true;
  for (int64_t step = 0; step <= 5; ++step) {
    const double s = static_cast<double>(step - 1);
    const double want = s <= 0 ? 0.0 : std::min(0.9998, 1.0 - std::pow(1.0 + s, -2.0 / 3.0));
    CHECK(kg::train::ema_decay(o, step) == Approx(want).margin(1e-15));
  }
  CHECK(kg::train::ema_decay(o, 3) == Approx(1.0 - std::pow(3.0, -2.0 / 3.0)));  // 0.519...
  // Without warm-up: the first update copies, every later one uses the decay.
  o.warmup = false;
  CHECK(kg::train::ema_decay(o, 1) == 0.0);
  CHECK(kg::train::ema_decay(o, 2) == 0.9998);
  CHECK(kg::train::ema_decay(o, 1000000) == 0.9998);
}

TEST_CASE("ema shadow equals the closed-form lerp chain over a known weight trajectory", "[unit][callbacks]") {
  auto m = std::make_shared<TinyImpl>();
  const auto names = float_names(*m);
  REQUIRE(names.size() == 6);  // fc.weight, fc.bias, bn.weight, bn.bias, bn.running_mean, bn.running_var

  for (int64_t every : {1, 2}) {
    INFO("every = " << every);
    EmaOptions o;
    o.enabled = true;
    o.decay = 0.9;
    o.every = every;
    EmaCallback ema(o);
    set_weights(*m, 0);
    ema.attach(*m);
    const int64_t K = 7;
    std::vector<int64_t> steps;  // the updates the EMA saw
    for (int64_t k = 1; k <= K; ++k) {
      set_weights(*m, k);  // the optimizer update k happened
      if (k % every == 0) {
        ema.update(k);
        steps.push_back(k);
      }
    }
    CHECK(ema.updates() == static_cast<int64_t>(steps.size()));
    for (const auto& name : names) {
      INFO(name);
      const auto shape = live(*m, name).sizes().vec();
      // Closed form: e = d^U w_0 + sum_j (1 - d_j) prod_{i > j} d_i w_{k_j}, where timm's first update
      // (step 1) has d = 0 and every other one d = 0.9.
      auto want = torch::zeros(shape, torch::kDouble);
      double carry = 1.0;  // product of the decays after the update being added
      for (size_t j = steps.size(); j-- > 0;) {
        const double dj = steps[j] == 1 ? 0.0 : 0.9;
        want += (1 - dj) * carry * weight_at(name, shape, steps[j]);
        carry *= dj;
      }
      want += carry * weight_at(name, shape, 0);
      auto got = ema.shadow().at(name).to(torch::kDouble);
      CHECK(torch::allclose(got, want, 1e-5, 1e-5));
    }
    // Integer buffers are copied, not averaged.
    CHECK(ema.shadow().at("bn.num_batches_tracked").item<int64_t>() == steps.back());
    // The shadow is a copy: it did not alias the model.
    CHECK_FALSE(torch::equal(ema.shadow().at("fc.weight"), live(*m, "fc.weight")));
    // extra_weights() is the shadow, every state_dict entry included.
    REQUIRE(ema.extra_weights());
    CHECK(ema.extra_weights()->size() == names.size() + 1);
  }

  SECTION("with decay warm-up, each update uses timm's decay of its step") {
    EmaOptions o;
    o.decay = 0.99;
    o.warmup = true;
    o.warmup_power = 0.75;
    o.warmup_gamma = 2.0;
    EmaCallback ema(o);
    set_weights(*m, 0);
    ema.attach(*m);
    auto want = weight_at("fc.weight", {2, 3}, 0);
    for (int64_t k = 1; k <= 6; ++k) {
      set_weights(*m, k);
      ema.update(k);
      const double s = static_cast<double>(k - 1);
      const double d = s <= 0 ? 0.0 : std::min(0.99, 1 - std::pow(1 + s / 2.0, -0.75));
      want = d * want + (1 - d) * weight_at("fc.weight", {2, 3}, k);
    }
    CHECK(torch::allclose(ema.shadow().at("fc.weight").to(torch::kDouble), want, 1e-5, 1e-6));
  }
}

TEST_CASE("ema state round-trips through save_state / load_state", "[unit][callbacks]") {
  EmaOptions o;
  o.decay = 0.8;
  auto m = std::make_shared<TinyImpl>();
  set_weights(*m, 0);
  EmaCallback a(o);
  a.attach(*m);
  for (int64_t k = 1; k <= 3; ++k) {
    set_weights(*m, k);
    a.update(k);
  }
  kg::model::TensorMap tensors;
  json state = json::object();
  a.save_state(tensors, state);
  CHECK(state.at("updates") == 3);
  REQUIRE(tensors.size() == a.shadow().size());
  for (auto& [name, t] : a.shadow()) {
    INFO(name);
    REQUIRE(tensors.count("cb.ema." + name));
    CHECK(tensors.at("cb.ema." + name).device().is_cpu());
    CHECK(torch::equal(tensors.at("cb.ema." + name), t));
  }
  // The snapshot does not move with later updates.
  auto saved_w = tensors.at("cb.ema.fc.weight").clone();

  // A resumed run: same model architecture with other weights; the restored average wins.
  auto m2 = std::make_shared<TinyImpl>();
  set_weights(*m2, 3);
  EmaCallback b(o);
  b.load_state(tensors, state);
  CHECK(b.restored());
  b.attach(*m2);
  CHECK(b.updates() == 3);
  for (auto& [name, t] : a.shadow()) CHECK(torch::equal(b.shadow().at(name), t));
  // ...and continues exactly like the uninterrupted one.
  for (int64_t k = 4; k <= 5; ++k) {
    set_weights(*m, k);
    set_weights(*m2, k);
    a.update(k);
    b.update(k);
  }
  for (auto& [name, t] : a.shadow()) CHECK(torch::equal(b.shadow().at(name), t));
  CHECK(torch::equal(tensors.at("cb.ema.fc.weight"), saved_w));

  SECTION("a model that does not match the saved average is a CheckpointError") {
    struct OtherImpl : torch::nn::Module {
      OtherImpl() { fc = register_module("fc", torch::nn::Linear(4, 2)); }
      torch::nn::Linear fc{nullptr};
    };
    auto other = std::make_shared<OtherImpl>();
    EmaCallback c(o);
    c.load_state(tensors, state);
    CHECK_THROWS_AS(c.attach(*other), kg::CheckpointError);
  }
  SECTION("a checkpoint written without EMA starts the average from the model") {
    EmaCallback c(o);
    c.load_state({}, json::object());
    CHECK_FALSE(c.restored());
    c.attach(*m2);
    CHECK(c.updates() == 0);
    CHECK(torch::equal(c.shadow().at("fc.weight"), live(*m2, "fc.weight")));
  }
  SECTION("EMA state without its tensors is a damaged checkpoint") {
    EmaCallback c(o);
    CHECK_THROWS_AS(c.load_state({}, json{{"updates", 3}}), kg::CheckpointError);
  }
}

TEST_CASE("[ema] section: off by default, validated, builds the callback", "[unit][callbacks]") {
  auto& reg = kg::train::callback_registry();
  auto off = recipe("[ema]\ndecay = 0.99\n");
  CHECK(reg.create("ema", off.section("ema"), off) == nullptr);
  auto on = recipe("[ema]\nenabled = true\ndecay = 0.99\nwarmup = true\nevery = 2\n");
  auto cb = reg.create("ema", on.section("ema"), on);
  REQUIRE(cb);
  // The documented example is a valid recipe that turns the callback on.
  const auto* info = reg.find_info("ema");
  REQUIRE(info);
  auto example = recipe(info->example);
  CHECK(reg.create("ema", example.section("ema"), example) != nullptr);
  CHECK(cb->name() == "ema");
  CHECK(cb->order() == 10);
  auto o = on.get<kg::train::EmaOptions>();
  CHECK(o.decay == 0.99);
  CHECK(o.warmup);
  CHECK(o.every == 2);
  CHECK(o.use_for_best);
  CHECK((recipe("")).get<kg::train::EmaOptions>().decay == 0.9998);
  CHECK_THROWS_AS(recipe("[ema]\ndecay = 1.5\n"), kg::ConfigError);
  CHECK_THROWS_AS(recipe("[ema]\nevery = 0\n"), kg::ConfigError);
  CHECK_THROWS_AS(recipe("[ema]\ndecy = 0.9\n"), kg::ConfigError);
}

}  // namespace KG_UNITY_ID
}  // namespace
