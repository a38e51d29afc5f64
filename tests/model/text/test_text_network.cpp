// Text models (lib/model/text/text_network.cpp): one model family per text encoder family, the poolings against
// hand-computed values (padding ignored, the first token, attention weights of 0 on padding, the last k layers
// concatenated), numeric features, layer groups and freezing, the recipe's errors, checkpointed gradients, and the
// whole route from a TOML recipe and a Hugging Face folder through model::build.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/error.h"
#include "model/model.h"
#include "model/summary.h"
#include "model/text/text_network.h"
#include "optim/optimizer.h"
#include "support/temp_dir.h"
#include "support/text_models.h"
#include "train/plan.h"
#include "train/step.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::model::Inputs;
using kg::model::TextNetwork;
using kg::model::TextNetworkOptions;

kg::model::ModelContext text_context(int64_t seq_len = 16, int64_t outputs = 3) {
  kg::model::ModelContext ctx;
  ctx.seq_len = seq_len;
  ctx.num_outputs = outputs;
  return ctx;
}

kg::model::text::TextEncoderPtr tiny_encoder(const std::string& model_type) {
  const auto json = kg::test::tiny_text_config(model_type);
  return kg::model::text::build_text_encoder(kg::model::text::HfConfig::parse(json, model_type + "/config.json"));
}

std::shared_ptr<TextNetwork> tiny_net(const std::string& model_type, const std::string& pooling = "mean",
                                      int64_t pool_layers = 1, kg::model::ModelContext ctx = text_context()) {
  TextNetworkOptions o;
  o.pooling = pooling;
  o.pool_layers = pool_layers;
  auto net = std::make_shared<TextNetwork>(tiny_encoder(model_type), o, ctx);
  net->eval();
  return net;
}

Inputs text_inputs(const at::Tensor& ids, const at::Tensor& mask, const at::Tensor& features = {}) {
  Inputs in;
  in.ids = ids;
  in.mask = mask;
  in.features = features;
  return in;
}

// Two samples of 7 and 4 tokens (ids 2..39), the second padded with garbage under mask 0.
struct PaddedBatch {
  at::Tensor ids = torch::randint(2, 40, {2, 7}, torch::kLong);
  at::Tensor mask = torch::ones({2, 7}, torch::kLong);
  PaddedBatch() { mask.index_put_({1, torch::indexing::Slice(4)}, 0); }
  at::Tensor short_ids() const { return ids.index({torch::indexing::Slice(1, 2), torch::indexing::Slice(0, 4)}); }
};

kg::config::Recipe recipe_of(const std::string& toml) {
  return kg::config::Recipe::validate(kg::config::parse_toml_string(toml, "text.toml"));
}

template <class E>
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what() + std::string("\nexit ") + std::to_string(e.exit_code());
  }
  return "no error";
}

TEST_CASE("text models: one model family per text encoder family, under its model_type", "[unit][model]") {
  CHECK(kg::model::text_model_names() == kg::model::text::text_family_names());
  for (const auto& name : kg::model::text_model_names()) {
    INFO(name);
    const auto* info = kg::model::model_registry().find_info(name);
    REQUIRE(info);
    CHECK(info->example.find("pretrained = ") != std::string::npos);
    CHECK(kg::model::is_text_model(name));
  }
  CHECK_FALSE(kg::model::is_text_model("resnet9"));
}

TEST_CASE("text models: mean pooling ignores padding in every family", "[unit][model]") {
  torch::manual_seed(1);
  for (const auto& family : kg::model::text_model_names()) {
    INFO(family);
    auto net = tiny_net(family);
    torch::NoGradGuard no_grad;
    PaddedBatch b;
    at::Tensor padded = net->forward(text_inputs(b.ids, b.mask));
    at::Tensor alone = net->forward(text_inputs(b.short_ids(), torch::ones({1, 4}, torch::kLong)));
    CHECK(torch::allclose(padded[1], alone[0], 1e-5, 1e-5));
    // Other garbage under the mask changes nothing either.
    at::Tensor other = b.ids.clone();
    other.index_put_({1, torch::indexing::Slice(4)}, 3);
    CHECK(torch::allclose(net->forward(text_inputs(other, b.mask))[1], padded[1], 1e-5, 1e-5));
    // The pooled features are the masked mean of the last hidden state.
    auto hidden = net->encoder().forward(b.ids, b.mask);
    at::Tensor want = hidden.back()[1].narrow(0, 0, 4).mean(0);
    CHECK(torch::allclose(net->pool_hidden(hidden, b.mask)[1], want, 1e-5, 1e-6));
  }
}

TEST_CASE("text models: cls pooling is the first token's hidden state", "[unit][model]") {
  auto net = tiny_net("deberta-v2", "cls");
  torch::NoGradGuard no_grad;
  PaddedBatch b;
  auto hidden = net->encoder().forward(b.ids, b.mask);
  CHECK(torch::equal(net->pool_hidden(hidden, b.mask), hidden.back().select(1, 0)));
  CHECK(net->pool() == "cls");
}

TEST_CASE("text models: attention pooling gives padding no weight", "[unit][model]") {
  torch::manual_seed(2);
  auto net = tiny_net("bert", "attention");
  torch::NoGradGuard no_grad;
  PaddedBatch b;
  auto hidden = net->encoder().forward(b.ids, b.mask);
  at::Tensor w = net->attention_pool(0)->weights(hidden.back(), b.mask);
  CHECK(w.sizes() == torch::IntArrayRef({2, 7}));
  CHECK(w[1].narrow(0, 4, 3).abs().sum().item<float>() == 0.0f);
  CHECK(torch::allclose(w.sum(1), torch::ones({2}), 1e-6, 1e-6));
  CHECK(w[1].narrow(0, 0, 4).min().item<float>() > 0.0f);
  at::Tensor want = (w[1].unsqueeze(-1) * hidden.back()[1]).sum(0);
  CHECK(torch::allclose(net->pool_hidden(hidden, b.mask)[1], want, 1e-5, 1e-6));
  at::Tensor alone = net->forward(text_inputs(b.short_ids(), torch::ones({1, 4}, torch::kLong)));
  CHECK(torch::allclose(net->forward(text_inputs(b.ids, b.mask))[1], alone[0], 1e-5, 1e-5));
  // A sample of padding only (and bfloat16 scores) stays finite: padding is float's lowest, not -inf.
  at::Tensor none = torch::zeros({1, 7}, torch::kLong);
  CHECK(torch::isfinite(net->attention_pool(0)->weights(hidden.back().narrow(0, 0, 1), none)).all().item<bool>());
  net->to(torch::kBFloat16);
  auto bf16 = net->encoder().forward(b.ids, b.mask);
  at::Tensor wb = net->attention_pool(0)->weights(bf16.back(), b.mask);
  CHECK(wb[1].narrow(0, 4, 3).abs().sum().item<float>() == 0.0f);
  CHECK(net->forward(text_inputs(b.ids, b.mask)).scalar_type() == torch::kBFloat16);
}

TEST_CASE("text models: pool_layers concatenates the last k layers' pools", "[unit][model]") {
  for (const char* pooling : {"mean", "cls", "attention"}) {
    INFO(pooling);
    auto net = tiny_net("bert", pooling, 2);
    CHECK(net->num_features() == 16 * 2);
    torch::NoGradGuard no_grad;
    PaddedBatch b;
    auto hidden = net->encoder().forward(b.ids, b.mask);
    std::vector<at::Tensor> parts;
    for (size_t i = 0; i < 2; ++i) {
      const at::Tensor& h = hidden[hidden.size() - 1 - i];
      if (std::string(pooling) == "mean")
        parts.push_back(kg::model::masked_mean_pool(h, b.mask));
      else if (std::string(pooling) == "cls")
        parts.push_back(h.select(1, 0));
      else
        parts.push_back(net->attention_pool(i)->forward(h, b.mask));
    }
    at::Tensor pooled = net->pool_hidden(hidden, b.mask);
    CHECK(pooled.sizes() == torch::IntArrayRef({2, 32}));
    CHECK(torch::allclose(pooled, torch::cat(parts, 1), 1e-6, 1e-6));
    if (std::string(pooling) ==
        "mean")  // the second part: the layer before the last (hidden[1] of 3), sample 1's 4 tokens
      CHECK(torch::allclose(pooled[1].narrow(0, 16, 16), hidden[1][1].narrow(0, 0, 4).mean(0), 1e-5, 1e-6));
    CHECK(net->forward(text_inputs(b.ids, b.mask)).sizes() == torch::IntArrayRef({2, 3}));
  }
  CHECK_THAT(error_of<kg::ConfigError>([] { tiny_net("bert", "mean", 3); }),
             Catch::Contains("model.pool_layers = 3") && Catch::Contains("1 to 2") && Catch::Contains("exit 2"));
  CHECK_THAT(error_of<kg::ConfigError>([] { tiny_net("bert", "max"); }), Catch::Contains("model.pooling"));
}

TEST_CASE("text models: numeric features join the pooled text", "[unit][model]") {
  auto ctx = text_context();
  ctx.num_features = 3;
  auto net = tiny_net("distilbert", "mean", 1, ctx);
  torch::NoGradGuard no_grad;
  PaddedBatch b;
  at::Tensor f = torch::randn({2, 3});
  at::Tensor y1 = net->forward(text_inputs(b.ids, b.mask, f));
  at::Tensor y2 = net->forward(text_inputs(b.ids, b.mask, f + 1));
  CHECK(y1.sizes() == torch::IntArrayRef({2, 3}));
  CHECK_FALSE(torch::allclose(y1, y2));
  CHECK(net->named_parameters().contains("feature_bn.weight"));
  CHECK_THROWS_AS(net->forward(text_inputs(b.ids, b.mask)), kg::DataError);  // built with features: they are needed
}

TEST_CASE("text models: layer groups cover every parameter once, the pooling trains with the head", "[unit][model]") {
  auto net = tiny_net("bert", "attention");
  CHECK(net->group_names() == std::vector<std::string>{"embeddings", "layer.0", "layer.1", "head"});
  std::map<std::string, std::string> group_of;
  for (const auto& g : net->layer_groups())
    for (const auto& [name, t] : g.params) {
      CHECK(group_of.count(name) == 0);
      group_of[name] = g.name;
    }
  CHECK(group_of.size() == net->parameters().size());
  CHECK(group_of.at("backbone.embeddings.word_embeddings.weight") == "embeddings");
  CHECK(group_of.at("backbone.encoder.layer.0.attention.self.query.weight") == "layer.0");
  CHECK(group_of.at("backbone.pooler.dense.weight") == "layer.1");  // unused by the network: with the last layer
  CHECK(group_of.at("head.attention_pool.0.dense.weight") == "head");
  CHECK(group_of.at("head.attention_pool.0.score.bias") == "head");
  CHECK(group_of.at("head.fc.weight") == "head");
  CHECK(net->classifier() == "head.fc");
  CHECK(net->is_head_param("head.attention_pool.0.dense.weight"));

  // fastai's fine_tune freezes every group but the head: the new attention weights still train.
  auto recipe = recipe_of("[train]\nmode = \"fine_tune\"\nepochs = 1\n");
  kg::train::Plan plan(
      recipe, 1, [](int64_t, int64_t) { return int64_t{4}; }, net->group_names());
  REQUIRE(plan.frozen_groups(0) == 3);
  auto opt = kg::optim::build(recipe, *net);
  kg::train::LayerFreezer freezer(*net, /*train_bn=*/false);
  freezer.apply(plan, 0, *opt);
  for (const auto& p : net->named_parameters()) {
    INFO(p.key());
    CHECK(p.value().requires_grad() == (group_of.at(p.key()) == "head"));
  }
}

TEST_CASE("text models: the recipe's mistakes are ConfigErrors saying what to set", "[unit][model]") {
  kg::test::TempDir dir;
  const auto folder = kg::test::write_tiny_text_model(dir / "deberta", "deberta-v2");
  auto build = [&](const std::string& toml, kg::model::ModelContext ctx = text_context()) {
    return [=] { kg::model::build(recipe_of(toml), ctx); };
  };
  const std::string pretrained = "\npretrained = \"" + folder + "\"\n";
  CHECK_THAT(error_of<kg::ConfigError>(build("[model]\nname = \"bert\"" + pretrained)),
             Catch::Contains("model.name = \"bert\"") && Catch::Contains(folder + "/config.json") &&
                 Catch::Contains("model_type \"deberta-v2\"") && Catch::Contains("exit 2"));
  CHECK_THAT(error_of<kg::ConfigError>(build("[model]\nname = \"deberta-v2\"\n")),
             Catch::Contains("model.pretrained") && Catch::Contains("Hugging Face folder: config.json + "
                                                                    "model.safetensors or pytorch_model.bin"));
  CHECK_THAT(error_of<kg::ConfigError>(build("[model]\nname = \"deberta-v2\"" + pretrained, text_context(0))),
             Catch::Contains("takes text") && Catch::Contains("data.text_cols"));
  CHECK_THAT(error_of<kg::ConfigError>(
                 build("[model]\nname = \"deberta-v2\"\npretrained = \"" + folder + "/model.safetensors\"\n")),
             Catch::Contains("is not a folder"));
  CHECK_THAT(error_of<kg::ConfigError>(build("[model]\nname = \"deberta-v2\"\nglobal_pool = \"avg\"" + pretrained)),
             Catch::Contains("model.global_pool") && Catch::Contains("model.pooling"));
  // DeBERTa's relative positions have no length limit; BERT's 64 position embeddings do.
  CHECK_NOTHROW(build("[model]\nname = \"deberta-v2\"" + pretrained, text_context(600))());
  const auto bert = kg::test::write_tiny_text_model(dir / "bert", "bert");
  CHECK_THAT(
      error_of<kg::ConfigError>(build("[model]\nname = \"bert\"\npretrained = \"" + bert + "\"\n", text_context(65))),
      Catch::Contains("data.max_length = 65") && Catch::Contains("64 positions"));
  const auto roberta = kg::test::write_tiny_text_model(dir / "roberta", "roberta");  // positions from pad_token_id + 1
  CHECK_THAT(error_of<kg::ConfigError>(
                 build("[model]\nname = \"roberta\"\npretrained = \"" + roberta + "\"\n", text_context(63))),
             Catch::Contains("at most 62"));
  auto net = tiny_net("bert");
  CHECK_THAT(error_of<kg::ConfigError>([&] {
               net->forward(torch::zeros({1, 3, 8, 8}));
             }),
             Catch::Contains("takes text"));
  CHECK_THAT(error_of<kg::ConfigError>([&] {
               net->forward_features(torch::zeros({1, 3, 8, 8}));
             }),
             Catch::Contains("takes text"));
}

TEST_CASE("text models: checkpointed layers give the plain gradients, drop_rate drops", "[unit][model]") {
  for (const char* family : {"deberta-v2", "modernbert"}) {
    INFO(family);
    auto ctx = text_context();
    ctx.model.drop_rate = 0.3;
    auto net = tiny_net(family, "attention", 2, ctx);
    net->train();  // the encoder's dropout and the head's: the recompute replays the masks
    PaddedBatch b;
    at::Tensor probe = torch::randn({2, 3});
    auto grads = [&](bool ckpt) {
      net->set_grad_checkpointing(ckpt);
      net->zero_grad();
      torch::manual_seed(7);
      (net->forward(text_inputs(b.ids, b.mask)) * probe).sum().backward();
      std::vector<at::Tensor> g;
      for (auto& p : net->parameters()) g.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
      return g;
    };
    auto plain = grads(false), ckpt = grads(true);
    CHECK(net->encoder().grad_checkpointing());
    for (size_t i = 0; i < plain.size(); ++i) CHECK(torch::allclose(plain[i], ckpt[i], 1e-5, 1e-6));
    CHECK(plain.front().abs().sum().item<double>() > 0);
    CHECK(net->named_parameters()["head.attention_pool.1.dense.weight"].grad().abs().sum().item<double>() > 0);

    CHECK(net->named_modules().contains("head_drop"));
    torch::NoGradGuard no_grad;
    net->set_grad_checkpointing(false);
    at::Tensor y1 = net->forward(text_inputs(b.ids, b.mask)), y2 = net->forward(text_inputs(b.ids, b.mask));
    CHECK_FALSE(torch::allclose(y1, y2));
    net->eval();
    CHECK(torch::equal(net->forward(text_inputs(b.ids, b.mask)), net->forward(text_inputs(b.ids, b.mask))));
  }
}

TEST_CASE("text models: a TOML recipe and a Hugging Face folder build through model::build", "[unit][model]") {
  kg::test::TempDir dir;
  const auto folder = kg::test::write_tiny_text_model(dir / "deberta-v3-tiny", "deberta-v2");
  auto recipe = recipe_of("[model]\nname = \"deberta-v2\"\npretrained = \"" + folder +
                          "\"\npretrained_strict = true\npooling = \"attention\"\npool_layers = 2\n"
                          "head_hidden = [8]\ngrad_checkpointing = true\n");
  auto ctx = text_context(12, 4);
  auto net = kg::model::build(recipe, ctx);
  CHECK(net->arch() == "deberta-v2");
  REQUIRE(net->pretrained_report());
  CHECK(net->pretrained_report()->clean());
  const auto* enc = kg::model::text_encoder_of(*net);
  REQUIRE(enc);
  CHECK(enc->shape().vocab_size == 40);
  CHECK(net->grad_checkpointing());
  CHECK(net->num_features() == 32);
  CHECK(net->pool() == "attention");
  // The folder's weights, under "backbone.".
  auto file = kg::model::read_safetensors(folder + "/model.safetensors");
  auto params = net->named_parameters();
  CHECK(torch::equal(params["backbone.encoder.rel_embeddings.weight"], file.at("encoder.rel_embeddings.weight")));
  CHECK(torch::equal(params["backbone.encoder.layer.1.output.dense.weight"],
                     file.at("encoder.layer.1.output.dense.weight")));
  net->eval();
  torch::NoGradGuard no_grad;
  auto in = kg::model::dummy_inputs(ctx, 2, torch::kCPU);
  CHECK(net->forward(in).sizes() == torch::IntArrayRef({2, 4}));
  auto s = kg::model::summarize(*net, ctx, 2);
  CHECK(s.total_params == kg::model::count_parameters(*net));
  CHECK(s.macs > 0);

  kg::model::ModelContext image_ctx;
  image_ctx.num_outputs = 2;
  auto image = kg::model::build(recipe_of("[model]\nname = \"resnet9\"\nwidth = 4\n"), image_ctx);
  CHECK(kg::model::text_encoder_of(*image) == nullptr);
}

}  // namespace KG_UNITY_ID
}  // namespace
