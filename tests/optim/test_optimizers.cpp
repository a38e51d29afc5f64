// Optimizers against torch 1.13 and independent references (tests/golden/optimizers.json, made by
// scripts/golden/gen_optimizers.py), plus the properties training relies on: no decay where there
// should be none, frozen parameters untouched, and checkpointed state that resumes bit-identically.
#include <catch2/catch.hpp>

#include <set>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/error.h"
#include "core/fs.h"
#include "device/compat.h"
#include "model/model.h"
#include "model/weights/safetensors.h"
#include "optim/optimizer.h"
#include "support/gpu.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::optim::ParamGroup;
using nlohmann::json;

namespace {

const json& golden() {
  static const json j = json::parse(kg::read_file(KGTRAIN_SOURCE_DIR "/tests/golden/optimizers.json"));
  return j;
}

kg::config::Recipe recipe(const std::string& optim_keys) {
  return kg::config::Recipe::validate(kg::config::parse_toml_string("[optim]\n" + optim_keys + "\n", "test.toml"));
}

at::Tensor tensor_of(const json& values, const json& shape, torch::Dtype dtype = torch::kDouble) {
  std::vector<int64_t> s = shape.get<std::vector<int64_t>>();
  return torch::tensor(values.get<std::vector<double>>(), torch::kDouble).reshape(s).to(dtype);
}

// Largest |a - e| / max(|e|, 1e-3): relative for ordinary values, absolute near zero.
double max_rel_err(const at::Tensor& actual, const at::Tensor& expected) {
  auto a = actual.detach().to(torch::kDouble), e = expected.to(torch::kDouble);
  return ((a - e).abs() / e.abs().clamp_min(1e-3)).max().item<double>();
}

// Two parameters like the golden ones: w [3, 4] (decayed) and b [3].
struct Params {
  at::Tensor w, b;
  std::vector<ParamGroup> groups(double wd) const { return {{"all", {w, b}, {"w", "b"}, 1.0, wd}}; }
};

Params golden_params(torch::Dtype dtype = torch::kDouble) {
  const auto& g = golden();
  return {tensor_of(g["init"]["w"], g["shapes"]["w"], dtype).requires_grad_(true),
          tensor_of(g["init"]["b"], g["shapes"]["b"], dtype).requires_grad_(true)};
}

void run_golden_case(const json& c, torch::Dtype dtype, double tol) {
  const auto& g = golden();
  INFO("case " << c["name"].get<std::string>() << " (" << (dtype == torch::kDouble ? "float64" : "float32") << ")\n"
               << c["recipe"].get<std::string>());
  Params p = golden_params(dtype);
  auto opt = kg::optim::build(recipe(c["recipe"].get<std::string>()), p.groups(c["weight_decay"].get<double>()));
  const std::string cycled = c["cycled"].get<std::string>();
  for (size_t t = 0; t < c["steps"].size(); ++t) {
    INFO("step " << t + 1);
    opt->set_lr(cycled.empty() ? c["lr"].get<double>() : g["lrs"][t].get<double>());
    if (!cycled.empty()) opt->set_momentum(g["moms"][t].get<double>());
    p.w.mutable_grad() = tensor_of(g["grads"][t]["w"], g["shapes"]["w"], dtype);
    p.b.mutable_grad() = tensor_of(g["grads"][t]["b"], g["shapes"]["b"], dtype);
    opt->step();
    CHECK(max_rel_err(p.w, tensor_of(c["steps"][t]["w"], g["shapes"]["w"])) < tol);
    CHECK(max_rel_err(p.b, tensor_of(c["steps"][t]["b"], g["shapes"]["b"])) < tol);
  }
}

// A recipe for every registered optimizer, with a short lookahead period so resumes cross a slow update.
std::string recipe_for(const std::string& name) {
  std::string r = "name = \"" + name + "\"\n";
  if (name == "lookahead" || name == "ranger") r += "k = 3\n";
  if (name == "sgd" || name == "rmsprop") r += "momentum = 0.9\n";
  return r;
}

std::vector<std::string> optimizer_names() { return kg::optim::optimizer_registry().names(); }

at::Tensor grad_at(int64_t step, at::IntArrayRef shape) {
  torch::manual_seed(static_cast<uint64_t>(1000 + step));
  return torch::randn(shape, torch::kFloat);
}

}  // namespace

TEST_CASE("optimizers match torch 1.13 (SGD, Adam, AdamW, RAdam, RMSprop) and references (LAMB, Lookahead)",
          "[unit][optim]") {
  const auto& cases = golden()["cases"];
  REQUIRE(cases.size() >= 20);
  std::set<std::string> covered;
  for (auto& c : cases) {
    run_golden_case(c, torch::kDouble, 1e-6);
    covered.insert(recipe(c["recipe"].get<std::string>()).tree().at("optim.name").value.get<std::string>());
  }
  // Every registered optimizer except ranger (checked against lookahead + radam below) has a golden case.
  for (auto& n : optimizer_names())
    if (n != "ranger") CHECK(covered.count(n) == 1);
}

TEST_CASE("float32 parameters follow the float64 reference closely", "[unit][optim]") {
  for (auto& c : golden()["cases"])
    if (c["name"] == "adamw" || c["name"] == "sgd_nesterov_wd" || c["name"] == "lamb" || c["name"] == "radam_decoupled")
      run_golden_case(c, torch::kFloat, 1e-4);
}

TEST_CASE("ranger is lookahead over radam with the same settings", "[unit][optim]") {
  Params a = golden_params(torch::kFloat), b = golden_params(torch::kFloat);
  auto ranger = kg::optim::build(recipe("name = \"ranger\"\nk = 3\nalpha = 0.6\nbetas = [0.9, 0.99]\neps = 1e-7"),
                                 a.groups(0.05));
  auto la = kg::optim::build(recipe("name = \"lookahead\"\nk = 3\nalpha = 0.6\n[optim.inner]\nname = \"radam\"\n"
                                    "betas = [0.9, 0.99]\neps = 1e-7"),
                             b.groups(0.05));
  for (int64_t t = 0; t < 10; ++t) {
    for (auto* p : {&a, &b}) {
      p->w.mutable_grad() = grad_at(t, {3, 4});
      p->b.mutable_grad() = grad_at(t + 100, {3});
    }
    ranger->set_lr(0.01);
    la->set_lr(0.01);
    ranger->step();
    la->step();
  }
  CHECK(torch::equal(a.w, b.w));
  CHECK(torch::equal(a.b, b.b));
  CHECK(ranger->momentum() == Approx(0.9));
  CHECK(ranger->describe().find("ranger (k 3, alpha 0.6) over radam") == 0);
}

TEST_CASE("lookahead's sync pulls the slow weights and is idempotent", "[unit][optim]") {
  Params p = golden_params();
  auto opt = kg::optim::build(
      recipe("name = \"lookahead\"\nk = 5\nalpha = 0.5\n[optim.inner]\nname = \"sgd\"\nmomentum = 0.0"), p.groups(0.0));
  auto w0 = p.w.detach().clone();
  p.w.mutable_grad() = torch::ones_like(p.w);
  p.b.mutable_grad() = torch::ones_like(p.b);
  opt->set_lr(0.1);
  opt->step();  // fast = w0 - 0.1
  opt->sync();  // slow = w0 + 0.5 * (fast - w0) = w0 - 0.05; fast = slow
  CHECK(max_rel_err(p.w, w0 - 0.05) < 1e-12);
  auto synced = p.w.detach().clone();
  opt->sync();
  CHECK(torch::equal(p.w, synced));
}

TEST_CASE("each group steps with the schedule's lr times its multiplier", "[unit][optim]") {
  auto a = torch::zeros({2}, torch::kDouble).requires_grad_(true),
       b = torch::zeros({2}, torch::kDouble).requires_grad_(true);
  std::vector<ParamGroup> groups{{"stem", {a}, {"a"}, 0.25, 0.0}, {"head", {b}, {"b"}, 1.0, 0.0}};
  auto opt = kg::optim::build(recipe("name = \"sgd\"\nmomentum = 0.0\nlr = 0.4"), groups);
  CHECK(opt->lr() == Approx(0.4));  // the peak until the schedule sets it
  CHECK_FALSE(opt->momentum());     // momentum 0: nothing for one_cycle to cycle
  opt->set_momentum(0.9);
  CHECK_FALSE(opt->momentum());
  opt->set_lr(2.0);
  a.mutable_grad() = torch::ones({2}, torch::kDouble);
  b.mutable_grad() = torch::ones({2}, torch::kDouble);
  opt->step();
  CHECK(a[0].item<double>() == Approx(-0.5));
  CHECK(b[0].item<double>() == Approx(-2.0));
  opt->zero_grad();
  CHECK_FALSE(a.grad().defined());
}

TEST_CASE("biases and norm weights get no weight decay, conv weights do", "[unit][optim]") {
  auto net = kg::model::build(
      kg::config::Recipe::validate(kg::config::parse_toml_string("[model]\nname = \"resnet9\"\nwidth = 2\n", "m")),
      {1, 3});
  auto r = recipe("name = \"adamw\"\nweight_decay = 0.1");
  auto opt = kg::optim::build(r, *net);
  at::Tensor conv, bias;
  std::string conv_name, bias_name;
  for (auto& p : net->named_parameters()) {
    if (!conv.defined() && p.value().dim() == 4) conv = p.value(), conv_name = p.key();
    if (!bias.defined() && p.value().dim() == 1) bias = p.value(), bias_name = p.key();
  }
  REQUIRE(conv.defined());
  REQUIRE(bias.defined());
  INFO(conv_name << ", " << bias_name);
  auto conv0 = conv.detach().clone(), bias0 = bias.detach().clone();
  for (auto& p : net->parameters())
    p.mutable_grad() = torch::zeros_like(p);  // zero gradients: only decay moves weights
  opt->set_lr(0.1);
  opt->step();
  CHECK(torch::equal(bias, bias0));
  CHECK(max_rel_err(conv, conv0 * (1 - 0.1 * 0.1)) < 1e-6);
  CHECK_FALSE(torch::equal(conv, conv0));
  CHECK(opt->describe().find("adamw lr 0.1, wd 0.1 (no decay on ") == 0);
}

TEST_CASE("a frozen parameter stays bit-identical and keeps no state under every optimizer", "[unit][optim]") {
  for (auto& name : optimizer_names()) {
    INFO(name);
    auto w = torch::randn({4, 3}).requires_grad_(true);
    auto frozen = torch::randn({4, 3}).requires_grad_(false);
    auto unused = torch::randn({3});  // trainable, but no gradient reaches it
    unused.requires_grad_(true);
    auto frozen0 = frozen.clone(), unused0 = unused.detach().clone();
    std::vector<ParamGroup> groups{{"body", {frozen, w}, {"frozen", "w"}, 1.0, 0.1},
                                   {"head", {unused}, {"unused"}, 1.0, 0.1}};
    auto opt = kg::optim::build(recipe(recipe_for(name)), groups);
    for (int64_t t = 0; t < 7; ++t) {
      opt->set_lr(0.05);
      opt->set_momentum(0.9);
      w.mutable_grad() = grad_at(t, {4, 3});
      opt->step();
      if (t == 4) opt->sync();
    }
    CHECK(torch::equal(frozen, frozen0));
    CHECK(torch::equal(unused, unused0));
    CHECK(opt->state_of("frozen") == nullptr);
    CHECK(opt->state_of("unused") == nullptr);
    CHECK(opt->state_of("w") != nullptr);
    kg::model::TensorMap tensors;
    json meta;
    opt->save_state(tensors, meta);
    for (auto& [k, v] : tensors) {
      CHECK(k.find("frozen") == std::string::npos);
      CHECK(k.find("unused") == std::string::npos);
    }
    CHECK_FALSE(tensors.empty());
  }
}

TEST_CASE("save_state then load_state resumes bit-identically for every optimizer", "[unit][optim]") {
  for (auto& name : optimizer_names()) {
    INFO(name);
    torch::manual_seed(7);
    auto w = torch::randn({5, 4}).requires_grad_(true), b = torch::randn({5}).requires_grad_(true);
    auto late = torch::randn({2, 2}).requires_grad_(true);  // gets gradients only after the resume
    auto make_groups = [](at::Tensor w_, at::Tensor b_, at::Tensor late_) {
      return std::vector<ParamGroup>{{"body", {w_}, {"w"}, 0.5, 0.01},
                                     {"body/no_decay", {b_}, {"b"}, 0.5, 0.0},
                                     {"head", {late_}, {"late"}, 1.0, 0.01}};
    };
    auto r = recipe(recipe_for(name));
    auto uninterrupted = kg::optim::build(r, make_groups(w, b, late));
    auto step = [&](kg::optim::Optimizer& opt, int64_t t, at::Tensor& w_, at::Tensor& b_, at::Tensor& late_) {
      opt.set_lr(0.01 * (1.0 + 0.1 * static_cast<double>(t)));
      opt.set_momentum(0.95 - 0.01 * static_cast<double>(t));
      w_.mutable_grad() = grad_at(t, {5, 4});
      b_.mutable_grad() = grad_at(t + 50, {5});
      late_.mutable_grad() = t >= 4 ? grad_at(t + 90, {2, 2}) : at::Tensor();
      opt.step();
    };
    for (int64_t t = 0; t < 4; ++t) step(*uninterrupted, t, w, b, late);
    uninterrupted->sync();

    // Checkpoint through the real file formats: safetensors bytes and JSON text.
    kg::model::TensorMap tensors;
    json meta = json::object();
    uninterrupted->save_state(tensors, meta);
    auto tensors2 = kg::model::decode_safetensors(kg::model::encode_safetensors(tensors), "state");
    auto meta2 = json::parse(meta.dump());
    auto w2 = w.detach().clone().requires_grad_(true), b2 = b.detach().clone().requires_grad_(true),
         late2 = late.detach().clone().requires_grad_(true);
    auto resumed = kg::optim::build(r, make_groups(w2, b2, late2));
    resumed->load_state(tensors2, meta2);
    CHECK(resumed->lr() == uninterrupted->lr());
    CHECK(resumed->momentum() == uninterrupted->momentum());

    for (int64_t t = 4; t < 11; ++t) {
      step(*uninterrupted, t, w, b, late);
      step(*resumed, t, w2, b2, late2);
    }
    CHECK(torch::equal(w, w2));
    CHECK(torch::equal(b, b2));
    CHECK(torch::equal(late, late2));
  }
}

TEST_CASE("load_state refuses state that does not fit", "[unit][optim]") {
  auto w = torch::randn({3, 2}).requires_grad_(true);
  auto opt = kg::optim::build(recipe("name = \"adamw\""), {{"g", {w}, {"w"}, 1.0, 0.0}});
  w.mutable_grad() = torch::ones_like(w);
  opt->step();
  kg::model::TensorMap tensors;
  json meta;
  opt->save_state(tensors, meta);
  CHECK(tensors.count("optim.w.exp_avg") == 1);
  CHECK(meta["optim"]["params"]["w"]["step"] == 1);

  auto other_shape = torch::randn({2, 3}).requires_grad_(true);
  auto opt2 = kg::optim::build(recipe("name = \"adamw\""), {{"g", {other_shape}, {"w"}, 1.0, 0.0}});
  CHECK_THROWS_AS(opt2->load_state(tensors, meta), kg::CheckpointError);
  auto opt3 = kg::optim::build(recipe("name = \"adamw\""), {{"g", {w}, {"v"}, 1.0, 0.0}});
  CHECK_THROWS_WITH(opt3->load_state(tensors, meta), Catch::Contains("parameter w"));
  auto opt4 = kg::optim::build(recipe("name = \"sgd\""), {{"g", {w}, {"w"}, 1.0, 0.0}});
  CHECK_THROWS_WITH(opt4->load_state(tensors, meta), Catch::Contains("adamw"));
  tensors.erase("optim.w.exp_avg");
  CHECK_THROWS_WITH(opt->load_state(tensors, meta), Catch::Contains("optim.w.exp_avg"));
  CHECK_THROWS_AS(opt->load_state(tensors, json::object()), kg::CheckpointError);
}

TEST_CASE("optim.lr = \"find\" validates but is not buildable", "[unit][optim]") {
  auto w = torch::randn({2}).requires_grad_(true);
  auto r = recipe("lr = \"find\"");
  CHECK_THROWS_WITH(kg::optim::build(r, {{"g", {w}, {"w"}, 1.0, 0.0}}), Catch::Contains("resolved by fit/lr-find"));
  CHECK_THROWS_AS(kg::optim::peak_lr(r.get<kg::optim::OptimOptions>()), kg::ConfigError);
}

TEST_CASE("lookahead cannot wrap a lookahead", "[unit][optim]") {
  auto w = torch::randn({2}).requires_grad_(true);
  const kg::config::Recipe r = recipe("name = \"lookahead\"").with({{"optim.inner.name", "ranger"}}, {});
  CHECK_THROWS_WITH(kg::optim::build(r, {{"g", {w}, {"w"}, 1.0, 0.0}}),
                    Catch::Contains("cannot wrap another lookahead"));
}

TEST_CASE("every optimizer builds from its registry example and trains a model", "[unit][optim]") {
  for (auto* c : kg::optim::optimizer_registry().components()) {
    INFO(c->name << " example:\n" << c->example);
    auto r = kg::config::Recipe::validate(kg::config::parse_toml_string(c->example, c->name + " example"));
    CHECK(r.tree().at("optim.name").value == c->name);
    torch::manual_seed(0);
    auto net = kg::model::build(
        kg::config::Recipe::validate(kg::config::parse_toml_string("[model]\nwidth = 2\n", "m")), {1, 2});
    auto opt = kg::optim::build(r, *net);
    CHECK(opt->name() == c->name);
    CHECK_FALSE(opt->describe().empty());
    auto x = torch::randn({4, 1, 16, 16});
    auto y = torch::tensor({0, 1, 0, 1});
    auto loss = [&] { return torch::cross_entropy_loss(net->forward(x), y); };
    const double before = loss().item<double>();
    for (int i = 0; i < 5; ++i) {
      opt->zero_grad();
      loss().backward();
      opt->step();
    }
    opt->sync();
    CHECK(loss().item<double>() < before);
  }
}

TEST_CASE("set_lr_mult changes a group's multiplier, also through lookahead", "[unit][optim]") {
  for (std::string name : {"sgd", "lookahead"}) {
    INFO(name);
    auto a = torch::zeros({2}, torch::kDouble).requires_grad_(true);
    auto opt = kg::optim::build(
        recipe(name == "sgd" ? "name = \"sgd\"\nmomentum = 0.0"
                             : "name = \"lookahead\"\nk = 100\n[optim.inner]\nname = \"sgd\"\nmomentum = 0.0"),
        {{"stem", {a}, {"a"}, 1.0, 0.0}});
    opt->set_lr(1.0);
    opt->set_lr_mult(0, 0.5);
    CHECK(opt->groups()[0].lr_mult == 0.5);
    a.mutable_grad() = torch::ones({2}, torch::kDouble);
    opt->step();
    CHECK(a[0].item<double>() == Approx(-0.5));
  }
}

TEST_CASE("adam/adamw/sgd/radam/rmsprop's multi-tensor group update is bit-identical to the per-parameter one",
          "[unit][optim]") {
  const std::vector<std::pair<std::string, std::string>> cases{{"adam", ""},
                                                               {"adamw", ""},
                                                               {"sgd", ""},
                                                               {"sgd", "nesterov = true\nmomentum = 0.8\n"},
                                                               {"sgd", "momentum = 0.0\n"},
                                                               {"radam", ""},
                                                               {"radam", "decoupled_weight_decay = false\n"},
                                                               {"rmsprop", ""},
                                                               {"rmsprop", "momentum = 0.9\n"},
                                                               {"rmsprop", "centered = true\nmomentum = 0.5\n"},
                                                               {"rmsprop", "centered = true\n"}};
  for (const auto& [name, extra] : cases) {
    INFO(name << " " << extra);
    torch::manual_seed(3);
    std::vector<at::Tensor> a, b;
    std::vector<std::string> names;
    // {1100, 1000} is more than a CPU bucket holds (kCpuBucketNumel): the buckets split around it.
    for (auto shape : std::vector<std::vector<int64_t>>{{8, 3, 3, 3}, {8}, {1100, 1000}, {16, 8}, {16}, {5}}) {
      a.push_back(torch::randn(shape).requires_grad_(true));
      b.push_back(a.back().detach().clone().requires_grad_(true));
      names.push_back("p" + std::to_string(names.size()));
    }
    // a: one group of six (multi-tensor kernels); b: a group per parameter (update() one by one).
    std::vector<ParamGroup> one{{"all", a, names, 1.0, 0.01}}, each;
    for (size_t i = 0; i < b.size(); ++i)
      each.push_back({"g" + std::to_string(i), {b[i]}, {"p" + std::to_string(i)}, 1.0, 0.01});
    auto r = recipe("name = \"" + name + "\"\nlr = 0.01\n" + extra);
    auto oa = kg::optim::build(r, one), ob = kg::optim::build(r, each);
    for (int64_t t = 0; t < 6; ++t) {
      for (size_t i = 0; i < a.size(); ++i) {
        // p5 gets no gradient on steps 2 and 3: its step count falls behind (a bucket of its own).
        const bool skip = i == 5 && (t == 2 || t == 3);
        at::Tensor g = grad_at(t * 10 + static_cast<int64_t>(i), a[i].sizes());
        a[i].mutable_grad() = skip ? at::Tensor() : g;
        b[i].mutable_grad() = skip ? at::Tensor() : g.clone();
      }
      oa->step();
      ob->step();
      for (size_t i = 0; i < a.size(); ++i) {
        INFO("step " << t + 1 << ", parameter " << i);
        CHECK(torch::equal(a[i], b[i]));
      }
    }
    CHECK(oa->state_of("p5")->step == 4);
    if (name == "sgd" && extra.find("momentum = 0.0") == std::string::npos)
      CHECK(oa->state_of("p5")->slots.count("momentum_buffer") == 1);
  }
}

// PyTorch's fused Adam(W) kernel against kgtrain's multi-tensor update on `device`: four parameters, one of which
// skips a step (a bucket of its own); the same values to float32 rounding.
void check_fused_update(const torch::Device& device) {
  for (std::string extra : {"name = \"adamw\"", "name = \"adam\"", "name = \"adamw\"\namsgrad = true"}) {
    INFO(extra);
    torch::manual_seed(5);
    std::vector<at::Tensor> a, b, init;
    for (auto shape : std::vector<std::vector<int64_t>>{{8, 3, 3, 3}, {8}, {16, 8}, {5}}) {
      a.push_back(torch::randn(shape, device).requires_grad_(true));
      b.push_back(a.back().detach().clone().requires_grad_(true));
      init.push_back(a.back().detach().clone());
    }
    const std::vector<std::string> names{"p0", "p1", "p2", "p3"};
    auto fused = kg::optim::build(recipe(extra + "\nlr = 0.01\nfused = true"), {{"g", a, names, 1.0, 0.05}});
    auto plain = kg::optim::build(recipe(extra + "\nlr = 0.01"), {{"g", b, names, 1.0, 0.05}});
    CHECK_THAT(fused->describe(), Catch::Contains("fused kernel"));
    for (int64_t t = 0; t < 6; ++t) {
      for (size_t i = 0; i < a.size(); ++i) {
        const bool skip = i == 3 && t == 2;  // p3's update count falls behind: a bucket of its own
        at::Tensor g = grad_at(t * 10 + static_cast<int64_t>(i), a[i].sizes()).to(device);
        a[i].mutable_grad() = skip ? at::Tensor() : g;
        b[i].mutable_grad() = skip ? at::Tensor() : g.clone();
      }
      fused->step();
      plain->step();
    }
    for (size_t i = 0; i < a.size(); ++i) {
      INFO("parameter " << i);
      CHECK(torch::allclose(a[i], b[i], 1e-5, 1e-6));
      CHECK((a[i] - init[i]).abs().max().item<double>() > 1e-3);  // trained, not left alone
    }
    CHECK(fused->state_of("p3")->step == 5);
    CHECK(torch::allclose(fused->state_of("p2")->slots.at("exp_avg_sq"), plain->state_of("p2")->slots.at("exp_avg_sq"),
                          1e-5, 1e-9));
  }
}

TEST_CASE("optim.fused on the CPU: PyTorch's fused kernel (LibTorch 2.4) gives the multi-tensor update; refused by 1.x",
          "[unit][optim]") {
#if KG_TORCH_VERSION_AT_LEAST(2, 4)
  check_fused_update(torch::kCPU);
#elif KG_TORCH_VERSION_AT_LEAST(2, 0)
  torch::manual_seed(4);
  auto a = torch::randn({6, 3}).requires_grad_(true), b = a.detach().clone().requires_grad_(true);
  auto fused = kg::optim::build(recipe("name = \"adamw\"\nlr = 0.01\nfused = true\n"), {{"g", {a}, {"w"}, 1.0, 0.01}});
  auto plain = kg::optim::build(recipe("name = \"adamw\"\nlr = 0.01\n"), {{"g", {b}, {"w"}, 1.0, 0.01}});
  CHECK_THAT(fused->describe(), Catch::Contains("fused kernel on CUDA"));
  for (int64_t t = 0; t < 3; ++t) {
    a.mutable_grad() = grad_at(t, a.sizes());
    b.mutable_grad() = grad_at(t, b.sizes());
    fused->step();
    plain->step();
  }
  CHECK(torch::equal(a, b));  // no CPU kernel before 2.4: CPU parameters take the multi-tensor path
#else
  for (std::string name : {"adam", "adamw"}) {
    INFO(name);
    auto a = torch::randn({6, 3}).requires_grad_(true);
    auto r = recipe("name = \"" + name + "\"\nlr = 0.01\nfused = true\n");
    CHECK_THROWS_AS(kg::optim::build(r, {{"g", {a}, {"w"}, 1.0, 0.01}}), kg::ConfigError);
    CHECK_THROWS_WITH(kg::optim::build(r, {{"g", {a}, {"w"}, 1.0, 0.01}}),
                      Catch::Contains("optim.fused = true needs PyTorch's fused Adam kernels (LibTorch 2.0 or newer); "
                                      "this kgtrain is built with LibTorch 1.13") &&
                          Catch::Contains("set optim.fused = false"));
  }
#endif
}

TEST_CASE("optim.fused on CUDA: PyTorch's fused kernel gives the multi-tensor update", "[unit][gpu][optim]") {
  KG_REQUIRE_GPU();
  check_fused_update(torch::kCUDA);
}

}  // namespace KG_UNITY_ID
}  // namespace
