// train.adversarial (train/adversarial.h): FGM moves the named parameters by eps * grad / ||grad|| and adds the
// adversarial gradient to the clean one; AWP moves them as the public AWP class does (clamped to +-eps * |w|) and
// replaces the micro-batch's clean gradient, keeping the update's earlier micro-batches'; both put the weights back
// bit for bit. Checked against the same steps done by hand.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include <torch/torch.h>

#include "core/error.h"
#include "model/model.h"
#include "train/adversarial.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

kg::model::NetworkPtr tiny_net() {
  kg::model::ModelContext ctx;
  ctx.in_chans = 1;
  ctx.num_outputs = 3;
  ctx.height = ctx.width = 12;
  ctx.model.name = "resnet9";
  kg::config::Recipe recipe;
  torch::manual_seed(0);
  auto net = kg::model::model_registry().create("resnet9", recipe.section("model"), ctx);
  net->eval();  // BatchNorm's running statistics: every forward the same function of the weights
  return net;
}

struct Rig {
  kg::model::NetworkPtr net = tiny_net();
  at::Tensor x = torch::randn({4, 1, 12, 12}), y = torch::tensor({0, 2, 1, 2}, torch::kLong);
  void backward() { torch::nn::functional::cross_entropy(net->forward(kg::model::Inputs::image(x)), y).backward(); }
  std::map<std::string, at::Tensor> grads() const {
    std::map<std::string, at::Tensor> g;
    for (const auto& p : net->named_parameters(true))
      g[p.key()] = p.value().grad().defined() ? p.value().grad().clone() : torch::zeros_like(p.value());
    return g;
  }
  at::Tensor param(const std::string& name) const { return net->named_parameters(true)[name]; }
  void zero_grad() {
    for (auto& p : net->parameters()) p.mutable_grad() = at::Tensor();
  }
  // The gradients at the named parameter set to `value` (the others as they are), then the weight put back.
  std::map<std::string, at::Tensor> grads_at(const std::string& name, const at::Tensor& value) {
    at::Tensor p = param(name);
    const at::Tensor keep = p.detach().clone();
    {
      torch::NoGradGuard no_grad;
      p.copy_(value);
    }
    zero_grad();
    backward();
    auto g = grads();
    torch::NoGradGuard no_grad;
    p.copy_(keep);
    return g;
  }
};

std::string classifier(const kg::model::Network& net) { return net.classifier() + ".weight"; }

}  // namespace

TEST_CASE("adversarial: FGM adds the gradient at w + eps * g / ||g|| and restores w", "[unit][train]") {
  Rig r;
  const std::string fc = classifier(*r.net);
  kg::train::AdversarialOptions o;
  o.kind = "fgm";
  o.emb_name = fc;
  o.eps = 0.5;
  kg::train::Adversary adv(o, *r.net);
  CHECK(adv.tensors() == 1);
  r.backward();
  const auto clean = r.grads();
  const at::Tensor w0 = r.param(fc).detach().clone();
  const at::Tensor moved = w0 + 0.5 * clean.at(fc) / clean.at(fc).norm();
  const auto expected_adv = r.grads_at(fc, moved);
  r.zero_grad();
  r.backward();  // the clean gradients again, as the step has them
  adv.before_clean_backward(true);
  at::Tensor seen;
  adv.attack([&] {
    seen = r.param(fc).detach().clone();
    r.backward();
  });
  CHECK(torch::allclose(seen, moved, 1e-6, 1e-7));
  CHECK(torch::equal(r.param(fc), w0));  // put back bit for bit
  for (const auto& [name, g] : r.grads()) {
    INFO(name);
    CHECK(torch::allclose(g, clean.at(name) + expected_adv.at(name), 1e-5, 1e-6));
  }
}

TEST_CASE("adversarial: AWP replaces the micro-batch's gradient with the one at the clamped step", "[unit][train]") {
  Rig r;
  const std::string fc = classifier(*r.net);
  kg::train::AdversarialOptions o;
  o.kind = "awp";
  o.param = fc;
  o.lr = 0.5;
  o.eps = 0.1;
  kg::train::Adversary adv(o, *r.net);
  CHECK(adv.eps() == 0.1);
  // An earlier micro-batch of the same update: its gradients stay in the sum.
  const at::Tensor x0 = r.x;
  r.x = torch::randn({4, 1, 12, 12});
  r.backward();
  const auto earlier = r.grads();
  r.x = x0;
  const at::Tensor w0 = r.param(fc).detach().clone();
  adv.before_clean_backward(false);
  r.backward();
  const auto after_clean = r.grads();  // earlier + clean: what the public class reads
  const at::Tensor g = after_clean.at(fc);
  const at::Tensor step = 0.5 * g / (g.norm() + 1e-6) * (w0.norm() + 1e-6);
  const at::Tensor moved = torch::min(torch::max(w0 + step, w0 - 0.1 * w0.abs()), w0 + 0.1 * w0.abs());
  at::Tensor seen;
  adv.attack([&] {
    seen = r.param(fc).detach().clone();
    r.backward();
  });
  CHECK(torch::allclose(seen, moved, 1e-6, 1e-7));
  CHECK(torch::equal(r.param(fc), w0));
  const auto total = r.grads();
  r.zero_grad();
  const auto adv_only = r.grads_at(fc, moved);
  for (const auto& [name, t] : total) {
    INFO(name);
    CHECK(torch::allclose(t, earlier.at(name) + adv_only.at(name), 1e-5, 1e-6));
  }
}

TEST_CASE("adversarial: a name no parameter has is a ConfigError naming the key", "[unit][train]") {
  Rig r;
  kg::train::AdversarialOptions o;
  o.kind = "fgm";
  CHECK_THROWS_WITH(kg::train::Adversary(o, *r.net),
                    Catch::Contains("train.adversarial.emb_name = \"word_embeddings\"") && Catch::Contains("awp"));
  o.kind = "awp";
  o.param = "nothing_like_this";
  CHECK_THROWS_WITH(kg::train::Adversary(o, *r.net), Catch::Contains("train.adversarial.param"));
}

}  // namespace KG_UNITY_ID
}  // namespace
