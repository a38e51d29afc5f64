// kgtrain_text_parity: the C++ half of scripts/check_text_encoders.py. Loads a Hugging Face model folder with
// lib/model/text, runs the inputs the script wrote and writes what transformers is compared on:
//   kgtrain_text_parity FOLDER INPUTS.safetensors OUT.safetensors
// INPUTS: input_ids, attention_mask, token_type_ids (optional), probe [B, L, hidden] (the loss's fixed tensor).
// OUT: hidden.K (K = 0 embeddings, 1.. layers) in eval mode; loss = sum(last hidden * probe) and grad.NAME for every
// parameter that got one; the same loss's gradients with every layer checkpointed (train mode: the script's
// configs have no dropout) as ckpt.NAME; load.missing / load.unexpected counts. With mlm_labels [B, L] (-100: not
// predicted) in INPUTS, the folder's *ForMaskedLM through model/text/mlm.h as well: mlm.head (1: the head came from
// the file), mlm.logits [M, vocab] at the labelled positions, mlm.loss and mlm.grad.NAME under the file's names.
// With pool_layers (a 1-element int64 k), the text model's poolings over the last k layers (model/text/text_network.h,
// eval mode): pool.mean, pool.cls, pool.attention [B, k * hidden], and each attention pooling's parameters
// (pool.attention.I.dense.weight, ...), for the script's own Python AttentionPooling / MeanPooling.
#include <cstdio>
#include <exception>
#include <string>

#include <torch/torch.h>

#include "core/error.h"
#include "model/weights/safetensors.h"
#include "loss/masked_lm.h"
#include "model/inputs.h"
#include "model/text/encoder.h"
#include "model/text/mlm.h"
#include "model/text/text_network.h"

namespace {

kg::model::TensorMap step(kg::model::text::TextEncoder& enc, const kg::model::TensorMap& in, const std::string& tag) {
  at::Tensor types = in.count("token_type_ids") ? in.at("token_type_ids") : at::Tensor();
  enc.zero_grad();
  auto hidden = enc.forward(in.at("input_ids"), in.at("attention_mask"), types);
  at::Tensor loss = (hidden.back() * in.at("probe")).sum();
  loss.backward();
  kg::model::TensorMap out;
  out[tag + "loss"] = loss.detach().reshape({1});
  for (const auto& p : enc.named_parameters(true))
    if (p.value().grad().defined()) out[tag + p.key()] = p.value().grad().clone();
  return out;
}

kg::model::TensorMap mlm_step(const std::string& folder, const kg::model::TensorMap& in) {
  namespace text = kg::model::text;
  const auto cfg = text::HfConfig::read(folder + "/config.json");
  auto loaded = text::load_text_encoder(folder);
  text::MlmNetwork net(loaded.encoder, cfg);
  auto [tensors, path] = text::read_hf_weights(folder);
  kg::model::TensorMap out;
  out["mlm.head"] = torch::tensor({static_cast<int64_t>(net.load_head(tensors, path))});
  net.eval();
  kg::model::Inputs x;
  x.ids = in.at("input_ids");
  x.mask = in.at("attention_mask");
  if (in.count("token_type_ids")) x.type_ids = in.at("token_type_ids");
  const at::Tensor labels = in.at("mlm_labels");
  x.predict = labels.ge(0);
  const at::Tensor logits = net.forward(x);
  const at::Tensor loss = kg::loss::MaskedLmLoss().forward(logits, labels);
  loss.backward();
  out["mlm.logits"] = logits.detach().contiguous();
  out["mlm.loss"] = loss.detach().reshape({1});
  for (const auto& [name, p] : net.hf_parameters())
    if (p.grad().defined()) out["mlm.grad." + name] = p.grad().clone();
  return out;
}

kg::model::TensorMap pool_step(const std::string& folder, const kg::model::TensorMap& in) {
  const at::Tensor ids = in.at("input_ids"), mask = in.at("attention_mask");
  const at::Tensor types = in.count("token_type_ids") ? in.at("token_type_ids") : at::Tensor();
  kg::model::ModelContext ctx;
  ctx.seq_len = ids.size(1);
  ctx.num_outputs = 2;
  kg::model::TensorMap out;
  for (const char* pooling : {"mean", "cls", "attention"}) {
    kg::model::TextNetworkOptions o;
    o.pooling = pooling;
    o.pool_layers = in.at("pool_layers").item<int64_t>();
    torch::manual_seed(1);
    kg::model::TextNetwork net(kg::model::text::load_text_encoder(folder).encoder, o, ctx);
    net.eval();
    torch::NoGradGuard no_grad;
    out[std::string("pool.") + pooling] = net.pool_hidden(net.encoder().forward(ids, mask, types), mask).contiguous();
    if (o.pooling == "attention")
      for (int64_t i = 0; i < o.pool_layers; ++i)
        for (const auto& p : net.attention_pool(static_cast<size_t>(i))->named_parameters(true))
          out["pool.attention." + std::to_string(i) + "." + p.key()] = p.value().detach().clone();
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: kgtrain_text_parity FOLDER INPUTS.safetensors OUT.safetensors\n");
    return 2;
  }
  try {
    torch::manual_seed(0);
    auto loaded = kg::model::text::load_text_encoder(argv[1]);
    auto& enc = *loaded.encoder;
    auto in = kg::model::read_safetensors(argv[2]);
    kg::model::TensorMap out;
    out["load.missing"] = torch::tensor({static_cast<int64_t>(loaded.report.missing.size())});
    out["load.unexpected"] = torch::tensor({static_cast<int64_t>(loaded.report.unexpected.size())});
    if (!loaded.report.clean()) std::fprintf(stderr, "%s: %s\n", argv[1], loaded.report.str().c_str());
    at::Tensor types = in.count("token_type_ids") ? in.at("token_type_ids") : at::Tensor();
    enc.eval();
    {
      torch::NoGradGuard no_grad;
      auto hidden = enc.forward(in.at("input_ids"), in.at("attention_mask"), types);
      for (size_t i = 0; i < hidden.size(); ++i) out["hidden." + std::to_string(i)] = hidden[i].contiguous();
    }
    for (auto& [k, v] : step(enc, in, "grad.")) out[k] = v;
    enc.train();
    enc.set_grad_checkpointing(true);
    for (auto& [k, v] : step(enc, in, "ckpt.")) out[k] = v;
    if (in.count("mlm_labels"))
      for (auto& [k, v] : mlm_step(argv[1], in)) out[k] = v;
    if (in.count("pool_layers"))
      for (auto& [k, v] : pool_step(argv[1], in)) out[k] = v;
    kg::model::write_safetensors(argv[3], out);
    return 0;
  } catch (const kg::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
