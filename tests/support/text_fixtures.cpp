#include "support/text_fixtures.h"

#include <filesystem>
#include <random>

#include <torch/torch.h>

#include "core/fs.h"
#include "data/csv.h"
#include "model/weights/safetensors.h"
#include "model/text/encoder.h"
#include "model/text/hf_config.h"
#include "test_paths.h"

namespace fs = std::filesystem;

namespace kg::test {

namespace {
const char* const kFox[] = {"quick", "brown", "fox", "jumps", "over", "fence"};
const char* const kDog[] = {"lazy", "dog", "sleeps", "under", "the", "porch"};
const char* const kFiller[] = {"hello", "world", "and", "a", "day", "in", "spring", "with", "some", "wind"};

std::string sentence(std::mt19937& rng, bool fox, int words) {
  std::string s;
  for (int w = 0; w < words; ++w) {
    const bool topical = rng() % 3 == 0;
    const char* word = topical ? (fox ? kFox[rng() % 6] : kDog[rng() % 6]) : kFiller[rng() % 10];
    s += (w ? " " : "") + std::string(word);
  }
  return s + ".";
}
}  // namespace

std::string make_tiny_text_task(const TempDir& dir, int train, int test) {
  const std::string root = dir / "textdata";
  fs::create_directories(root);
  std::mt19937 rng(11);
  auto rows = [&](int n, const std::string& prefix, bool labels, std::string& truth) {
    std::string out = labels ? "id,text,words,label\n" : "id,text,words\n";
    for (int i = 0; i < n; ++i) {
      const bool fox = i % 2 == 0;
      const int words = 4 + static_cast<int>(rng() % 57);
      const std::string id = prefix + std::to_string(i);
      std::string fields = data::csv_line({id, sentence(rng, fox, words), std::to_string(words)});
      fields.pop_back();  // csv_line's newline
      out += fields + (labels ? std::string(",") + (fox ? "fox" : "dog") : "") + "\n";
      truth += id + "," + (fox ? "fox" : "dog") + "\n";
    }
    return out;
  };
  std::string train_truth, test_truth = "id,label\n";
  write_file_atomic(root + "/train.csv", rows(train, "t", true, train_truth));
  write_file_atomic(root + "/test.csv", rows(test, "q", false, test_truth));
  write_file_atomic(root + "/test_labels.csv", test_truth);
  return root;
}

std::string make_tiny_deberta(const TempDir& dir, const std::string& name, int seed) {
  const std::string folder = dir / name;
  fs::create_directories(folder);
  const fs::path spm = fs::path(KGTRAIN_SOURCE_DIR) / "tests/text/fixtures/deberta_spm";
  for (const auto& e : fs::directory_iterator(spm))
    fs::copy_file(e.path(), fs::path(folder) / e.path().filename(), fs::copy_options::overwrite_existing);
  const std::string config = R"({"model_type": "deberta-v2", "vocab_size": 96, "hidden_size": 16,
  "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 512,
  "relative_attention": true, "position_buckets": 32, "norm_rel_ebd": "layer_norm", "share_att_key": true,
  "pos_att_type": ["p2c", "c2p"], "max_relative_positions": -1, "position_biased_input": false,
  "type_vocab_size": 0, "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0, "pad_token_id": 0})";
  write_file_atomic(folder + "/config.json", config);
  torch::manual_seed(static_cast<uint64_t>(seed));
  auto enc = model::text::build_text_encoder(model::text::HfConfig::parse(config, folder + "/config.json"));
  model::write_safetensors(folder + "/model.safetensors", model::state_dict(*enc));
  return folder;
}

std::string tiny_text_recipe(const std::string& data_root, const std::string& model_folder) {
  return "[run]\nname = \"tinytext\"\nseed = 3\n"
         "[data]\nroot = \"" +
         data_root +
         "\"\nsample_submission = \"\"\ntext_cols = [\"text\"]\nfeature_cols = [\"words\"]\nmax_length = 48\n"
         "num_workers = 2\naugment = []\n"
         "[cv]\nfolds = 2\nfold = 0\n"
         "[model]\nname = \"deberta-v2\"\npretrained = \"" +
         model_folder +
         "\"\n"
         "[optim]\nlr = 0.003\nweight_decay = 0.0\n"
         "[train]\nepochs = 2\nbatch_size = 8\n"
         "[tta]\nviews = [\"identity\"]\n"
         "[device]\nthreads = 1\n";
}

}  // namespace kg::test
