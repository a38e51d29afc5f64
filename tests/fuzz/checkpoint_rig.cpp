#include "fuzz/checkpoint_rig.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/sha256.h"
#include "data/loader.h"
#include "loss/loss.h"
#include "metric/metric_set.h"
#include "model/model.h"
#include "model/weights/safetensors.h"
#include "optim/optimizer.h"
#include "train/callbacks/ema.h"
#include "train/callbacks/swa.h"
#include "train/options.h"
#include "train/plan.h"
#include "train/trainer.h"

namespace kg::fuzz {
using json = nlohmann::json;

struct CheckpointRig::Parts {
  config::Recipe recipe;
  model::NetworkPtr net;
  optim::OptimizerPtr opt;
  loss::LossPtr loss;
  std::unique_ptr<metric::MetricSet> metrics;
  std::unique_ptr<train::Plan> plan;
  std::unique_ptr<train::Trainer> trainer;
  std::string model_bytes;
};

CheckpointRig& CheckpointRig::get() {
  static CheckpointRig rig;
  return rig;
}

CheckpointRig::~CheckpointRig() = default;

CheckpointRig::CheckpointRig() : p_(std::make_unique<Parts>()) {
  torch::manual_seed(0);
  p_->recipe =
      config::Recipe::validate(config::parse_toml_string("[model]\nwidth = 2\n"
                                                         "[optim]\nname = \"adamw\"\nlr = 0.01\n"
                                                         "[schedule]\nname = \"one_cycle\"\n"
                                                         "[train]\nepochs = 3\nbatch_size = 4\n"
                                                         "[ema]\nenabled = true\n"
                                                         "[swa]\nenabled = true\nswa_epoch_start = 1\n",
                                                         "checkpoint_rig.toml"));
  const auto& rec = p_->recipe;
  p_->net = model::build(rec, {1, 2});
  p_->opt = optim::build(rec, *p_->net);
  p_->loss = loss::build(rec, {2, kg::Task::multiclass});
  p_->metrics = std::make_unique<metric::MetricSet>(rec, kg::Task::multiclass, 2);
  p_->plan = std::make_unique<train::Plan>(
      rec, 3, [](int64_t, int64_t) { return int64_t{4}; }, p_->net->group_names());
  train::TrainerParts parts;
  parts.net = p_->net.get();
  parts.opt = p_->opt.get();
  parts.loss = p_->loss.get();
  parts.metrics = p_->metrics.get();
  std::vector<train::CallbackPtr> cbs;
  cbs.push_back(std::make_unique<train::SwaCallback>(rec.get<train::SwaOptions>()));
  cbs.push_back(std::make_unique<train::EmaCallback>(rec.get<train::EmaOptions>()));
  train::TrainerIO io;
  io.dir = "";
  io.progress.quiet = true;
  io.log = [](const std::string&) {};
  auto no_loader = [](auto...) -> std::unique_ptr<data::Loader> { throw InternalError("the rig loads no data"); };
  p_->trainer = std::make_unique<train::Trainer>(parts, *p_->plan, rec.get<train::TrainOptions>(),
                                                 rec.get<train::CheckpointOptions>(), no_loader, no_loader,
                                                 train::MixFn(), std::move(cbs), io);
  // One update, so the optimizer has its slots.
  p_->net->train();
  p_->opt->zero_grad();
  p_->net->forward(torch::randn({4, 1, 8, 8})).pow(2).mean().backward();
  p_->opt->step();
  p_->model_bytes = model::encode_safetensors(model::state_dict(*p_->net));
}

train::CheckpointFiles CheckpointRig::files() {
  auto f = p_->trainer->checkpoint_files();
  f.model = model::decode_safetensors(p_->model_bytes, "rig");
  return f;
}

void CheckpointRig::resume_from(const std::string& state_json, const std::string& state_tensors,
                                const std::string& manifest, const std::string& dir) {
  std::error_code ec;
  remove_tree(dir, ec);
  make_directories(dir);
  json files = json::array();
  auto put = [&](const std::string& name, const std::string& bytes) {
    write_file_atomic(dir + "/" + name, bytes);
    files.push_back({{"name", name}, {"bytes", static_cast<uint64_t>(bytes.size())}, {"sha256", sha256_hex(bytes)}});
  };
  put("model.safetensors", p_->model_bytes);
  put("state.safetensors", state_tensors);
  put("recipe.toml", "");
  put("provenance.json", "{}\n");
  put("state.json", state_json);
  if (manifest.empty()) {  // as save_checkpoint writes it, so the fuzzer gets past the hashes
    json m = {{"schema_version", train::kCheckpointSchema}, {"files", files}, {"created_utc", "2026-01-01T00:00:00Z"}};
    m["manifest_sha256"] = sha256_hex(m.dump());
    write_file_atomic(dir + "/MANIFEST.json", m.dump(2) + "\n");
  } else {
    write_file_atomic(dir + "/MANIFEST.json", manifest);
  }
  auto c = train::load_checkpoint(dir, true);
  p_->trainer->resume(c);
}

}  // namespace kg::fuzz
