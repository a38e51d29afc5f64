#include "jobs/pretrain.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <numeric>
#include <random>
#include <tuple>

#include <torch/torch.h>

#include "config/resolve.h"
#include "config/sections.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/strings.h"
#include "data/loader.h"
#include "data/mlm_masking.h"
#include "data/options.h"
#include "data/table.h"
#include "data/transform.h"
#include "device/device.h"
#include "loss/masked_lm.h"
#include "metric/metric_set.h"
#include "model/model.h"
#include "model/text/mlm.h"
#include "model/weights/safetensors.h"
#include "optim/optimizer.h"
#include "session/modality.h"
#include "train/callback.h"
#include "train/checkpoint.h"
#include "train/checkpoint_store.h"
#include "train/options.h"
#include "train/plan.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kg::jobs {

namespace {

config::Fields<PretrainOptions> pretrain_fields() {
  config::Fields<PretrainOptions> f;
  f.field("mlm_probability", &PretrainOptions::mlm_probability,
          "the share of each text's tokens the model predicts (of them 80 % become the mask token, 10 % a random "
          "token, 10 % stay), as BERT and DeBERTa pre-train")
      .min(0.01)
      .max(0.9);
  f.field("whole_word", &PretrainOptions::whole_word,
          "mask whole words (every token of a chosen word: WordPiece's ## continuations, sentencepiece's and "
          "byte-level BPE's pieces without a word-start mark) instead of single tokens");
  f.field("valid_fraction", &PretrainOptions::valid_fraction,
          "the share of the texts held out to measure the masked-token loss (valid_loss), masked alike every epoch")
      .min(0.001)
      .max(0.5);
  f.field("splits", &PretrainOptions::splits,
          "whose texts it trains on: the recipe's train table (data.train_csv), its test table (data.test_csv), or "
          "both (the competition's own text: a test set's text is no label)")
      .check([](const config::json& v) -> std::string {
        if (v.empty()) return "give at least one of \"train\", \"test\"";
        for (const auto& x : v)
          if (x != "train" && x != "test") return "\"" + x.get<std::string>() + "\" is not a split (train, test)";
        return "";
      });
  return f;
}

KG_REGISTER_SECTION("pretrain", "kgtrain pretrain: continued masked-language-model pre-training on the recipe's text",
                    pretrain_fields().schema(), "");

// The recipe's texts: the train table's, then the test table's rows (labels dropped), as one table.
data::Table text_table(const data::DataOptions& d, const PretrainOptions& p) {
  data::Table out;
  for (const auto& split : p.splits) {
    const std::string& csv = split == "train" ? d.train_csv : d.test_csv;
    KG_CHECK(!csv.empty(), ConfigError, "pretrain.splits names \"", split, "\" but data.", split,
             "_csv is empty: set it or leave \"", split, "\" out of pretrain.splits");
    data::Table t = data::load_table(d, csv, "", nullptr, /*require_labels=*/false);
    if (out.rows.empty()) {
      out = std::move(t);
      continue;
    }
    out.rows.insert(out.rows.end(), t.rows.begin(), t.rows.end());
    out.texts.insert(out.texts.end(), t.texts.begin(), t.texts.end());
    out.csv_path += " + " + t.csv_path;
  }
  out.targets.clear();
  out.values.clear();
  out.features.clear();
  out.feature_dim = 0;
  return out;
}

// (train, valid) rows: a seeded shuffle, the first valid_fraction of it held out.
std::pair<std::vector<int64_t>, std::vector<int64_t>> split_rows(int64_t n, double fraction, uint64_t seed) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  const auto valid = std::clamp<int64_t>(std::llround(static_cast<double>(n) * fraction), 1, n - 1);
  std::vector<int64_t> v(order.begin(), order.begin() + valid), t(order.begin() + valid, order.end());
  std::sort(v.begin(), v.end());
  return {t, v};
}

// RUN/model: config.json naming the MLM architecture, model.safetensors, the tokenizer files; written beside, then
// moved into place.
void write_hf_folder(const model::text::MlmNetwork& net, const std::string& from, const std::string& dst) {
  const fs::path tmp = fs::path(dst).string() + ".tmp";
  discard_directory(tmp.string());
  make_directories(tmp.string());
  json cfg = json::parse(read_file((fs::path(from) / "config.json").string()));
  cfg["architectures"] = json::array({net.spec().architecture});
  write_file_atomic((tmp / "config.json").string(), cfg.dump(2) + "\n");
  model::write_safetensors((tmp / "model.safetensors").string(), net.hf_state_dict());
  for (const char* f : {"tokenizer.json", "spm.model", "sentencepiece.bpe.model", "vocab.txt", "merges.txt",
                        "vocab.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json"})
    if (fs::exists(fs::path(from) / f)) write_file_atomic((tmp / f).string(), read_file((fs::path(from) / f).string()));
  replace_directory(tmp.string(), dst);
}

struct Built {
  std::shared_ptr<model::text::MlmNetwork> net;
  std::string note;
};

Built build_network(const config::Recipe& recipe, int64_t tokenizer_size, int64_t max_length, uint64_t seed) {
  const auto& m = recipe.get<model::ModelOptions>();
  const auto cfg = model::text::HfConfig::read((fs::path(m.pretrained) / "config.json").string());
  torch::manual_seed(seed);
  auto enc = model::text::build_text_encoder(cfg);
  model::text::check_vocabulary(*enc, tokenizer_size, m.pretrained);
  const auto& shape = enc->shape();
  KG_CHECK(shape.max_positions <= 0 || max_length <= shape.max_positions, ConfigError, "data.max_length = ", max_length,
           " is longer than the ", shape.model_type, " encoder's ", shape.max_positions, " positions");
  auto [tensors, path] = model::text::read_hf_weights(m.pretrained);
  const auto report = model::text::load_hf_state_dict(*enc, tensors, path, false);
  Built b;
  b.net = std::make_shared<model::text::MlmNetwork>(enc, cfg);
  const bool head = b.net->load_head(tensors, path);
  b.net->set_grad_checkpointing(m.grad_checkpointing);
  b.note = "encoder " + std::to_string(report.loaded) + " tensors from " + path + "; MLM head " +
           (head ? "from the file" : "new (" + b.net->spec().architecture + "'s init)");
  return b;
}

// The texts, masked: the table, its masking collator and the rows each side reads.
struct Corpus {
  data::Table table;
  std::unique_ptr<data::MaskingCollator> collator;
  std::vector<int64_t> train, valid;
  int64_t tokenizer_size = 0;
};

Corpus read_corpus(const PretrainRequest& o, const device::DeviceInfo& dev, uint64_t seed) {
  const auto& recipe = o.recipe;
  const auto& d = recipe.get<data::DataOptions>();
  const auto& p = recipe.get<PretrainOptions>();
  Corpus c;
  c.table = text_table(d, p);
  KG_CHECK(c.table.size() >= 2, DataError, c.table.csv_path, ": ", c.table.size(),
           " texts; pre-training needs at least 2");
  auto vocab = data::MaskVocabulary::from_folder(recipe.get<model::ModelOptions>().pretrained);
  c.tokenizer_size = vocab.size;
  const int threads = std::max({1, static_cast<int>(d.num_workers), dev.threads});
  c.collator = std::make_unique<data::MaskingCollator>(session::modality_of(d).collator(recipe, c.table, threads),
                                                       std::move(vocab),
                                                       data::MaskingOptions{p.mlm_probability, p.whole_word, seed});
  std::tie(c.train, c.valid) = split_rows(c.table.size(), p.valid_fraction, seed);
  o.log("  data    " + c.table.csv_path + ": " + std::to_string(c.table.size()) + " texts, " +
        std::to_string(c.train.size()) + " train, " + std::to_string(c.valid.size()) + " valid");
  o.log("  " + c.collator->describe());
  return c;
}

// What the trainer writes where: the run dir, its state fields, progress, the time budget.
train::TrainerIO trainer_io(const PretrainRequest& o, const std::string& run_dir, const std::string& arch) {
  const auto& recipe = o.recipe;
  const auto& d = recipe.get<data::DataOptions>();
  train::TrainerIO io;
  io.dir = run_dir;
  io.recipe_toml = config::to_toml(recipe.tree(), false);
  io.provenance = session::provenance(o);
  io.state_fields = {
      {"kgtrain", "pretrain"}, {"model", arch}, {"input", {{"text_cols", d.text_cols}, {"max_length", d.max_length}}}};
  io.progress = {o.quiet, o.tty, recipe.get<train::TrainOptions>().log_every_s, o.columns};
  io.log = [&o](const std::string& l) { o.log(l); };
  if (const double budget = train::parse_duration(recipe.get<train::RunOptions>().time_limit); budget > 0)
    io.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(budget * 1000));
  return io;
}

// summary.json, and RUN/model unless interrupted (Interrupted then: exit 130 / 143).
void finish(const PretrainRequest& o, const std::string& run_dir, const train::FitOutcome& outcome,
            const train::TrainState& st, int64_t texts, model::text::MlmNetwork& net) {
  json summary = {{"command", "pretrain"},        {"status", outcome.status}, {"run_dir", run_dir},
                  {"epochs_completed", st.epoch}, {"updates", st.step},       {"texts", texts}};
  if (outcome.status == "interrupted") {
    session::write_summary(run_dir, summary);
    throw Interrupted(outcome.signal == SIGTERM ? kExitSigterm : kExitSigint,
                      "stopped by signal " + std::to_string(outcome.signal) +
                          "; everything is saved: continue with kgtrain pretrain ... --run-dir " + run_dir +
                          " --resume");
  }
  net.to(torch::kCPU);
  const std::string out = (fs::path(run_dir) / "model").string();
  write_hf_folder(net, o.recipe.get<model::ModelOptions>().pretrained, out);
  summary["model_dir"] = out;
  if (st.best) summary["best_valid_loss"] = *st.best;
  session::write_summary(run_dir, summary);
  o.log("  model   " + out + " (" + net.spec().architecture + "): fine-tune it with model.pretrained=" + out);
}

}  // namespace

PretrainOptions PretrainOptions::load(const config::Tree& recipe) {
  return pretrain_fields().load(config::Options(&recipe, "pretrain"));
}

int run_pretrain(const PretrainRequest& o) {
  const auto& recipe = o.recipe;
  const auto& d = recipe.get<data::DataOptions>();
  const auto& m = recipe.get<model::ModelOptions>();
  const auto& topt = recipe.get<train::TrainOptions>();
  KG_CHECK(!d.text_cols.empty() && !m.pretrained.empty(), ConfigError,
           "kgtrain pretrain trains a text encoder on the recipe's texts: set data.text_cols and model.pretrained "
           "(a Hugging Face folder)");
  KG_CHECK(!o.dist.active(), ConfigError, "kgtrain pretrain runs in one process (no torchrun / --nproc)");
  KG_CHECK(!o.resume || !o.run_dir.empty(), UsageError, "pretrain --resume continues the run of --run-dir DIR");
  const auto dev = device::setup(recipe.get<device::DeviceOptions>());
  const auto seed = static_cast<uint64_t>(recipe.get<train::RunOptions>().seed);
  o.log("kgtrain pretrain: " + dev.description + ", env " + o.env_name + "; reading the texts...");
  const Corpus corpus = read_corpus(o, dev, seed);
  auto built = build_network(recipe, corpus.tokenizer_size, d.max_length, seed);
  auto& net = *built.net;
  o.log("  model   " + net.arch() + " + MLM head (" + net.spec().architecture + "); " + built.note);
  net.to(dev.device);
  auto opt = optim::build(recipe, net);
  const int64_t max_batches = o.smoke ? 2 * topt.accum_steps : -1;
  const auto n_train = static_cast<int64_t>(corpus.collator->samples(corpus.train).size());  // windows
  train::Plan plan(
      recipe, o.smoke ? 1 : topt.epochs,
      [&](int64_t, int64_t) {
        return (data::num_batches(n_train, topt.batch_size, true, max_batches) + topt.accum_steps - 1) /
               topt.accum_steps;
      },
      net.group_names());
  const data::Pipeline pipe(d.augment, data::geometry(d), false);
  auto loader = [&](const std::vector<int64_t>& rows, bool training, int64_t epoch, int64_t start) {
    data::LoaderOptions lo{training ? topt.batch_size : train::eval_batch_size(topt),
                           training,
                           training,
                           static_cast<int>(d.num_workers),
                           static_cast<int>(d.prefetch),
                           seed,
                           epoch,
                           max_batches,
                           nullptr,
                           d.pin_memory && dev.device.is_cuda()};
    lo.start_batch = start;
    lo.collator = corpus.collator.get();
    lo.group_by_length = training && d.group_by_length;
    return std::make_unique<data::Loader>(corpus.table, rows, pipe, lo);
  };
  const std::string run_dir = o.resume ? o.run_dir : session::prepare_run_dir(o);
  loss::MaskedLmLoss loss;
  const auto metrics = metric::MetricSet::loss_only();
  train::TrainerParts parts;
  parts.net = &net;
  parts.opt = opt.get();
  parts.loss = &loss;
  parts.metrics = &metrics;
  parts.device = dev.device;
  parts.precision = dev.precision;
  parts.scaler = dev.make_scaler();
  train::Trainer trainer(
      std::move(parts), plan, topt, recipe.get<train::CheckpointOptions>(),
      [&, rows = corpus.train](int64_t epoch, int64_t start) { return loader(rows, true, epoch, start); },
      [&, rows = corpus.valid]() { return loader(rows, false, 0, 0); }, {}, train::build_callbacks(recipe),
      trainer_io(o, run_dir, net.arch()));
  if (o.resume) {
    const auto latest = train::find_latest((fs::path(run_dir) / "checkpoints").string());
    KG_CHECK(latest.has_value(), UsageError, "pretrain --resume: ", run_dir, " holds no complete checkpoint");
    trainer.resume(train::load_checkpoint(*latest, true));
    o.log("  resume  from " + *latest);
  }
  const auto outcome = trainer.fit();
  finish(o, run_dir, outcome, trainer.state(), corpus.table.size(), net);
  return 0;
}

}  // namespace kg::jobs
