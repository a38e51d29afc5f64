// The end of an epoch: evaluation on the validation rows (sharded over ranks when asked), the epoch's
// report and metrics line, the best epoch, and the callbacks around them.
#include <algorithm>
#include <chrono>
#include <cmath>

#include <torch/torch.h>

#include "model/weights/safetensors.h"
#include "train/trainer.h"

using nlohmann::json;

namespace kg::train {

Evaluation Trainer::evaluate(const model::TensorMap* weights) {
  model::TensorMap backup;
  if (weights) {
    for (auto& [k, v] : model::state_dict(*p_.net)) backup[k] = v.clone();
    model::load_state_dict(*p_.net, *weights, /*strict=*/true, "evaluation weights");
  }
  Evaluation ev;
  {
    auto loader = valid_loader_();
    ev.pred = predict(*p_.net, *loader, p_.device, p_.loss, p_.task, p_.precision);
  }
  if (p_.shard_validation) gather_predictions(ev.pred, *p_.group);
  if (weights) model::load_state_dict(*p_.net, backup, true, "training weights");
  ev.values = p_.metrics->compute(ev.pred.probs, ev.pred.targets);
  ev.values["valid_loss"] = ev.pred.loss;
  ev.values.insert(ev.pred.extra.begin(), ev.pred.extra.end());
  if (p_.group) {
    // Rank 0's numbers everywhere: "best", early stopping and plateau schedules decide alike on every rank.
    at::Tensor v = torch::empty({static_cast<int64_t>(ev.values.size())}, torch::kDouble);
    int64_t i = 0;
    for (auto& [k, x] : ev.values) v[i++] = x;
    std::vector<at::Tensor> t{v};
    p_.group->broadcast(t, 0);
    i = 0;
    for (auto& [k, x] : ev.values) x = v[i++].item<double>();
  }
  return ev;
}

void Trainer::select_best(EpochReport& r) {
  const auto& mon = p_.metrics->monitor();
  auto consider = [&](const std::string& from, const std::map<std::string, double>& values) {
    auto it = values.find(mon);
    if (it == values.end()) return;
    if (!s_.best || p_.metrics->better(it->second, *s_.best)) {
      s_.best = it->second;
      s_.best_epoch = r.epoch;
      s_.best_from = from;
      r.improved = true;
      r.best_from = from;
    }
  };
  consider("model", r.values);
  for (auto& v : r.variants)
    if (v.candidate_for_best) consider(v.name, v.values);
}

void Trainer::end_epoch(int64_t epoch) {
  p_.opt->sync();  // Lookahead: evaluate and save the slow weights
  // BatchNorm running statistics are rank 0's (DDP's broadcast_buffers); the epoch's loss and images
  // are the whole job's.
  ranks_->broadcast_buffers(*p_.net);
  const auto [loss_sum, loss_count, images] = epoch_sums();
  auto ev = evaluate();
  auto r = std::make_unique<EpochReport>();
  r->epoch = epoch + 1;
  r->values = ev.values;
  r->values["train_loss"] = loss_count > 0 ? loss_sum / loss_count : 0.0;
  r->values["lr"] = plan_.lr_at(std::max<int64_t>(0, s_.step - 1));
  r->values["train_images_per_s"] = s_.epoch_seconds > 0 ? images / s_.epoch_seconds : 0.0;
  r->values["epoch_seconds"] = s_.epoch_seconds;
  if (p_.scaler.enabled()) r->values["loss_scale"] = p_.scaler.scale();
  s_.elapsed_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - last_mark_).count();
  last_mark_ = std::chrono::steady_clock::now();
  r->values["elapsed_s"] = s_.elapsed_seconds;
  // The epoch is complete: the position moves to the next one before anything is saved.
  s_.epoch = epoch + 1;
  s_.batch = 0;
  s_.epoch_loss_sum = 0;
  s_.epoch_loss_count = 0;
  s_.epoch_samples = 0;
  s_.epoch_seconds = 0;
  size_t i = 0;
  for (; i < callbacks_.size() && callbacks_[i]->order() < 50; ++i) callbacks_[i]->on_epoch_end(*this, *r);
  for (auto& v : r->variants)
    for (auto& [k, x] : v.values) r->values[v.name + "_" + k] = x;
  select_best(*r);
  json line = {{"epoch", r->epoch}, {"step", s_.step}};
  for (auto& [k, x] : r->values) line[k] = std::isfinite(x) ? json(x) : json();
  if (r->improved) line["best"] = r->best_from;
  s_.history.push_back(line);
  plan_.observe(s_.step, r->values);
  last_report_ = std::move(r);
  for (; i < callbacks_.size(); ++i) callbacks_[i]->on_epoch_end(*this, *last_report_);
}

}  // namespace kg::train
