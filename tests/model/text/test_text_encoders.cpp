// lib/model/text without Python: config.json errors, the family registry, DeBERTa's log-bucketed relative positions
// against transformers' values, Hugging Face parameter names, the loader's prefixes and shape errors, layer groups,
// and checkpointed layers' gradients against plain ones. (Parity with transformers itself:
// scripts/check_text_encoders.py.)
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "core/error.h"
#include "model/weights/safetensors.h"
#include "model/text/deberta_v2.h"
#include "model/text/encoder.h"
#include "model/text/hf_config.h"
#include "model/text/text_layers.h"
#include "support/temp_dir.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::model::text::HfConfig;

const char* kDebertaV3 = R"({"model_type": "deberta-v2", "vocab_size": 50, "hidden_size": 16,
  "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 512,
  "relative_attention": true, "position_buckets": 256, "norm_rel_ebd": "layer_norm", "share_att_key": true,
  "pos_att_type": ["p2c", "c2p"], "max_relative_positions": -1, "position_biased_input": false,
  "type_vocab_size": 0, "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1})";

const char* kBert = R"({"model_type": "bert", "vocab_size": 40, "hidden_size": 16, "num_hidden_layers": 2,
  "num_attention_heads": 4, "intermediate_size": 32, "max_position_embeddings": 64, "type_vocab_size": 2,
  "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1})";

const char* kDistil = R"({"model_type": "distilbert", "vocab_size": 40, "dim": 16, "n_layers": 2, "n_heads": 2,
  "hidden_dim": 32, "max_position_embeddings": 64})";

const char* kModern = R"({"model_type": "modernbert", "vocab_size": 40, "hidden_size": 16, "num_hidden_layers": 3,
  "num_attention_heads": 2, "intermediate_size": 24, "pad_token_id": 0, "local_attention": 4,
  "global_attn_every_n_layers": 3, "global_rope_theta": 160000.0, "local_rope_theta": 10000.0})";

const char* kElectra = R"({"model_type": "electra", "vocab_size": 40, "embedding_size": 8, "hidden_size": 16,
  "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 64})";

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

kg::model::text::TextEncoderPtr build(const std::string& json) {
  return kg::model::text::build_text_encoder(HfConfig::parse(json, "enc/config.json"));
}

TEST_CASE("text encoders: every family registers under its model_type", "[unit][model]") {
  auto names = kg::model::text::text_family_names();
  for (const char* want : {"bert", "deberta-v2", "distilbert", "electra", "modernbert", "roberta", "xlm-roberta"})
    CHECK(std::find(names.begin(), names.end(), want) != names.end());
}

TEST_CASE("text encoders: an unknown model_type or value is a ConfigError naming file and key", "[unit][model]") {
  try {
    build(R"({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]})");
    FAIL("no error");
  } catch (const kg::ConfigError& e) {
    std::string m = e.what();
    CHECK(m.find("enc/config.json") != std::string::npos);
    CHECK(m.find("\"gpt2\"") != std::string::npos);
    CHECK(m.find("deberta-v2") != std::string::npos);  // the known ones are listed
    CHECK(e.exit_code() == 2);
  }
  CHECK_THROWS_WITH(build(replaced(kBert, "\"gelu\"", "\"gelu_10\"")),
                    Catch::Contains("enc/config.json: hidden_act \"gelu_10\" is not implemented"));
  CHECK_THROWS_WITH(build(replaced(kDebertaV3, "\"layer_norm\"", "\"batch_norm\"")), Catch::Contains("norm_rel_ebd"));
  CHECK_THROWS_WITH(build(replaced(kDebertaV3, "[\"p2c\", \"c2p\"]", "[\"p2p\"]")), Catch::Contains("pos_att_type"));
  CHECK_THROWS_WITH(build(replaced(kBert, "\"num_attention_heads\": 4", "\"num_attention_heads\": 3")),
                    Catch::Contains("num_attention_heads 3 does not divide hidden_size 16"));
  CHECK_THROWS_WITH(build(replaced(kBert, "\"hidden_size\": 16", "\"hidden_size\": \"16\"")),
                    Catch::Contains("hidden_size expected an integer"));
  CHECK_THROWS_AS(HfConfig::parse("{\"vocab_size\": 3}", "x/config.json"), kg::ConfigError);
  CHECK_THROWS_AS(HfConfig::parse("not json", "x/config.json"), kg::ConfigError);
}

TEST_CASE("text encoders: ids outside the vocabulary and bad shapes are errors", "[unit][model]") {
  auto bert = build(kBert);
  CHECK_THROWS_WITH(bert->forward(torch::full({1, 4}, 40, torch::kLong)),
                    Catch::Contains("token id 40 is outside its vocabulary of 40"));
  CHECK_THROWS_WITH(bert->forward(torch::zeros({1, 65}, torch::kLong)), Catch::Contains("exceed its 64 positions"));
  CHECK_THROWS_AS(bert->forward(torch::zeros({2, 4}, torch::kLong), torch::ones({2, 5})), kg::DataError);
  CHECK_NOTHROW(kg::model::text::check_vocabulary(*bert, 40, "tokenizer.json"));
  CHECK_THROWS_WITH(kg::model::text::check_vocabulary(*bert, 41, "tokenizer.json"),
                    Catch::Contains("tokenizer.json: the tokenizer has 41 tokens but the bert encoder's embeddings "
                                    "have 40 rows"));
  auto hidden = bert->forward(torch::ones({2, 7}, torch::kLong));
  REQUIRE(hidden.size() == 3);
  CHECK(hidden.back().sizes() == std::vector<int64_t>{2, 7, 16});
}

TEST_CASE("text encoders: DeBERTa's log-bucketed relative positions match transformers'", "[unit][model]") {
  // transformers 5.25 build_relative_position(300 x 300, bucket_size=256, max_position=512).
  at::Tensor r = kg::model::text::deberta_relative_positions(300, 300, 256, 512, at::kCPU)[0];
  const std::vector<std::pair<int64_t, int64_t>> down{{0, 0},     {1, 1},     {127, 127}, {128, 128}, {129, 129},
                                                      {130, 130}, {140, 137}, {200, 169}, {255, 192}, {299, 206}};
  for (auto [i, want] : down) CHECK(r[i][0].item<int64_t>() == want);
  const std::vector<std::pair<int64_t, int64_t>> right{{1, -1},     {127, -127}, {128, -128}, {129, -129},
                                                       {130, -130}, {200, -169}, {299, -206}};
  for (auto [j, want] : right) CHECK(r[0][j].item<int64_t>() == want);
  at::Tensor big = kg::model::text::deberta_relative_positions(600, 600, 256, 512, at::kCPU)[0];
  CHECK(big[599][0].item<int64_t>() == 270);
  CHECK(big[511][0].item<int64_t>() == 255);
  at::Tensor plain = kg::model::text::deberta_relative_positions(10, 10, -1, 512, at::kCPU)[0];
  CHECK(plain[3][0].item<int64_t>() == 3);
  CHECK(plain[3][9].item<int64_t>() == -6);
}

TEST_CASE("text encoders: parameters carry transformers' names", "[unit][model]") {
  auto v3 = build(kDebertaV3);
  auto names = v3->named_parameters(true).keys();
  std::set<std::string> have(names.begin(), names.end());
  for (const char* want :
       {"embeddings.word_embeddings.weight", "embeddings.LayerNorm.weight", "encoder.rel_embeddings.weight",
        "encoder.LayerNorm.bias", "encoder.layer.0.attention.self.query_proj.weight",
        "encoder.layer.1.attention.output.LayerNorm.weight", "encoder.layer.1.intermediate.dense.bias",
        "encoder.layer.1.output.dense.weight"})
    CHECK(have.count(want));
  CHECK_FALSE(have.count("embeddings.position_embeddings.weight"));               // v3: no absolute positions
  CHECK_FALSE(have.count("encoder.layer.0.attention.self.pos_key_proj.weight"));  // shared keys
  CHECK(v3->named_parameters()["encoder.rel_embeddings.weight"].size(0) == 512);  // 2 * position_buckets
  auto bert = build(kBert);
  CHECK(bert->named_parameters(true).contains("encoder.layer.1.attention.self.query.weight"));
  CHECK(bert->named_parameters(true).contains("pooler.dense.weight"));
  CHECK(bert->group_names() == std::vector<std::string>{"embeddings", "layer.0", "layer.1", "pooler"});
  CHECK(v3->group_names() == std::vector<std::string>{"embeddings", "layer.0", "layer.1"});
  size_t grouped = 0;
  for (const auto& g : v3->layer_groups()) grouped += g.params.size();
  CHECK(grouped == v3->parameters().size());
}

TEST_CASE("text encoders: the loader takes bare or prefixed names and refuses other shapes", "[unit][model]") {
  auto src = build(kDebertaV3);
  kg::model::TensorMap prefixed;
  for (const auto& [name, t] : kg::model::state_dict(*src)) prefixed["deberta." + name] = t;
  prefixed["classifier.weight"] = torch::zeros({3, 16});
  prefixed["deberta.embeddings.position_ids"] = torch::arange(512).unsqueeze(0);
  auto dst = build(kDebertaV3);
  auto report = kg::model::text::load_hf_state_dict(*dst, prefixed, "w.bin", false);
  CHECK(report.missing.empty());
  CHECK(report.unexpected == std::vector<std::string>{"classifier.weight"});
  CHECK(report.loaded == static_cast<int64_t>(src->parameters().size()));
  CHECK(torch::equal(dst->named_parameters()["encoder.rel_embeddings.weight"],
                     src->named_parameters()["encoder.rel_embeddings.weight"]));
  CHECK_THROWS_AS(kg::model::text::load_hf_state_dict(*dst, prefixed, "w.bin", true), kg::CheckpointError);

  auto tensors = kg::model::state_dict(*src);
  tensors["embeddings.word_embeddings.weight"] = torch::zeros({60, 16});
  CHECK_THROWS_WITH(kg::model::text::load_hf_state_dict(*dst, tensors, "w.safetensors", false),
                    Catch::Contains("embeddings.word_embeddings.weight is [60, 16] in the file but [50, 16]") &&
                        Catch::Contains("vocab_size 50"));

  kg::test::TempDir dir;
  dir.write("enc/config.json", kDebertaV3);
  kg::model::write_safetensors(dir / "enc/model.safetensors", kg::model::state_dict(*src));
  auto loaded = kg::model::text::load_text_encoder(dir / "enc", true);
  CHECK(loaded.report.clean());
  CHECK(loaded.encoder->shape().hidden_size == 16);
}

TEST_CASE("text encoders: old LayerNorm names and sharded safetensors load", "[unit][model]") {
  auto src = build(kBert);
  kg::model::TensorMap first, second;
  for (const auto& [name, t] : kg::model::state_dict(*src)) {
    std::string n = name;  // BERT's original files: LayerNorm.gamma / LayerNorm.beta, under "bert."
    if (n.size() > 17 && n.compare(n.size() - 17, 17, ".LayerNorm.weight") == 0)
      n = n.substr(0, n.size() - 7) + ".gamma";
    if (n.size() > 15 && n.compare(n.size() - 15, 15, ".LayerNorm.bias") == 0) n = n.substr(0, n.size() - 5) + ".beta";
    (n < "encoder.layer.1" ? first : second)["bert." + n] = t;
  }
  REQUIRE(first.count("bert.embeddings.LayerNorm.gamma"));
  kg::test::TempDir dir;
  dir.write("enc/config.json", kBert);
  kg::model::write_safetensors(dir / "enc/model-00001-of-00002.safetensors", first);
  kg::model::write_safetensors(dir / "enc/model-00002-of-00002.safetensors", second);
  nlohmann::json index;
  for (const auto& [n, t] : first) index["weight_map"][n] = "model-00001-of-00002.safetensors";
  for (const auto& [n, t] : second) index["weight_map"][n] = "model-00002-of-00002.safetensors";
  dir.write("enc/model.safetensors.index.json", index.dump());
  auto loaded = kg::model::text::load_text_encoder(dir / "enc", true);
  CHECK(loaded.report.clean());
  CHECK(loaded.report.renamed == std::vector<std::string>{"bert."});
  CHECK(torch::equal(loaded.encoder->named_parameters()["encoder.layer.1.output.LayerNorm.bias"],
                     src->named_parameters()["encoder.layer.1.output.LayerNorm.bias"]));
  CHECK_THROWS_WITH(kg::model::text::load_text_encoder(dir.str(), false), Catch::Contains("config.json"));
}

TEST_CASE("text encoders: checkpointed layers give the plain gradients", "[unit][model]") {
  for (const char* json : {kDebertaV3, kBert, kDistil, kModern}) {
    auto enc = build(json);
    INFO(enc->shape().model_type);
    enc->train();  // dropout on: the recompute replays its masks
    at::Tensor ids = torch::randint(1, 40, {2, 9}, torch::kLong);
    at::Tensor mask = torch::ones({2, 9}, torch::kLong);
    mask.index_put_({1, torch::indexing::Slice(5)}, 0);
    at::Tensor probe = torch::randn({2, 9, 16});
    auto grads = [&](bool ckpt) {
      enc->set_grad_checkpointing(ckpt);
      enc->zero_grad();
      torch::manual_seed(7);
      (enc->forward(ids, mask).back() * probe).sum().backward();
      std::vector<at::Tensor> g;
      for (auto& p : enc->parameters()) g.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
      return g;
    };
    auto plain = grads(false), ckpt = grads(true);
    for (size_t i = 0; i < plain.size(); ++i) CHECK(torch::allclose(plain[i], ckpt[i], 1e-5, 1e-6));
    CHECK(plain.front().abs().sum().item<double>() > 0);
  }
}

TEST_CASE("text encoders: every family runs padded batches in float32 and bfloat16", "[unit][model]") {
  for (const char* json : {kDebertaV3, kBert, kDistil, kModern, kElectra}) {
    auto enc = build(json);
    INFO(enc->shape().model_type);
    enc->eval();
    torch::NoGradGuard no_grad;
    at::Tensor ids = torch::randint(1, 40, {2, 11}, torch::kLong);
    at::Tensor mask = torch::ones({2, 11}, torch::kLong);
    mask.index_put_({0, torch::indexing::Slice(6)}, 0);
    auto f32 = enc->forward(ids, mask);
    CHECK(static_cast<int64_t>(f32.size()) == enc->shape().num_layers + 1);
    CHECK(f32.back().sizes() == std::vector<int64_t>{2, 11, 16});
    CHECK(torch::isfinite(f32.back()).all().item<bool>());
    size_t grouped = 0;
    for (const auto& g : enc->layer_groups()) grouped += g.params.size();
    CHECK(grouped == enc->parameters().size());
    enc->to(torch::kBFloat16);  // the masks' fill values must fit the dtype (transformers' finfo(dtype).min)
    auto bf16 = enc->forward(ids, mask);
    CHECK(torch::allclose(bf16.back().to(torch::kFloat), f32.back(), 0.1, 0.1));
  }
}

TEST_CASE("text encoders: a padded row's tokens equal the row alone, whatever the padding", "[unit][model]") {
  // Every family runs its dense layers on the real tokens only (TokenLayout): a row's tokens must get the values they
  // get unpadded, and every hidden state zeros at the padding.
  for (const char* json : {kDebertaV3, kBert, kDistil, kModern, kElectra}) {
    auto enc = build(json);
    INFO(enc->shape().model_type);
    enc->eval();
    torch::NoGradGuard no_grad;
    at::Tensor ids = torch::randint(1, 40, {3, 12}, torch::kLong);
    at::Tensor mask = torch::ones({3, 12}, torch::kLong);
    mask.index_put_({0, torch::indexing::Slice(7)}, 0);
    mask.index_put_({2, torch::indexing::Slice(3)}, 0);
    auto padded = enc->forward(ids, mask);
    for (int64_t row : {0, 1, 2}) {
      const int64_t n = mask[row].sum().item<int64_t>();
      auto alone = enc->forward(ids.slice(0, row, row + 1).slice(1, 0, n));
      for (size_t layer = 0; layer < alone.size(); ++layer)
        CHECK(torch::allclose(padded[layer][row].slice(0, 0, n), alone[layer][0], 1e-5, 1e-5));
    }
    for (const auto& h : padded) CHECK(h[0].slice(0, 7).abs().max().item<double>() == 0.0);
  }
}

TEST_CASE("text encoders: TokenLayout packs the real tokens, and is a view without padding", "[unit][model]") {
  using kg::model::text::TokenLayout;
  at::Tensor x = torch::randn({2, 4, 3});
  for (const at::Tensor& ones : {at::Tensor(), torch::ones({2, 4}, torch::kLong)}) {
    const TokenLayout layout(ones, 2, 4);
    CHECK_FALSE(layout.padded());
    at::Tensor packed = layout.pack(x);
    CHECK(packed.sizes() == at::IntArrayRef({8, 3}));
    CHECK(packed.data_ptr() == x.data_ptr());
    CHECK(layout.unpack(packed).data_ptr() == x.data_ptr());
  }
  at::Tensor mask = torch::tensor({1, 1, 0, 0, 1, 1, 1, 0}, torch::kLong).view({2, 4});
  const TokenLayout layout(mask, 2, 4);
  CHECK(layout.padded());
  at::Tensor packed = layout.pack(x);
  REQUIRE(packed.sizes() == at::IntArrayRef({5, 3}));
  CHECK(torch::equal(packed, x.view({8, 3}).index_select(0, torch::tensor({0, 1, 4, 5, 6}, torch::kLong))));
  CHECK(torch::equal(layout.unpack(packed), x * mask.unsqueeze(-1).to(x.scalar_type())));
}

}  // namespace KG_UNITY_ID
}  // namespace
