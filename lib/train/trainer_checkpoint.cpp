// What the trainer puts into a checkpoint, and the exact resume from one.
#include "train/trainer.h"

#include <algorithm>

#include <torch/torch.h>

#include "core/error.h"
#include "train/rng_state.h"

using nlohmann::json;

namespace kg::train {

CheckpointFiles Trainer::checkpoint_files(const model::TensorMap* model_weights) {
  CheckpointFiles f;
  if (model_weights) {
    f.model = *model_weights;
  } else {
    for (auto& [k, v] : model::state_dict(*p_.net)) f.model[k] = v.clone();
    // Lookahead: the file holds the slow (evaluated) weights; saving changes nothing in training.
    p_.opt->synced_view(f.model);
  }
  json optim_meta = json::object();
  p_.opt->save_state(f.state_tensors, optim_meta);
  for (auto& [k, v] : capture_rng()) f.state_tensors[k] = v;
  json cbs = json::object();
  for (auto& cb : callbacks_) {
    json st = json::object();
    cb->save_state(f.state_tensors, st);
    cbs[cb->name()] = st;
    if (auto* w = cb->extra_weights()) f.extra_weights[cb->name()] = *w;
  }
  f.state = io_.state_fields;
  f.state["epoch"] = s_.epoch;
  f.state["step"] = s_.step;
  f.state["batch"] = s_.batch;
  f.state["trainer"] = s_.to_json();
  if (p_.group) {
    // Mid-epoch partial sums: the job's where every rank saved together, else this rank's alone.
    json& t = f.state["trainer"];
    if (job_partials_) {
      t["epoch_loss_sum"] = (*job_partials_)[0];
      t["epoch_loss_count"] = static_cast<int64_t>((*job_partials_)[1]);
      t["epoch_samples"] = static_cast<int64_t>((*job_partials_)[2]);
    }
    t["epoch_partials_of"] = job_partials_ ? "job" : "rank";
  }
  // Where the update counter stands in the plan's layout of updates per epoch: a resume whose updates per
  // epoch differ (another number of processes, batch size or accumulation) continues the schedule there.
  f.state["trainer"]["updates_into_epoch"] = s_.step - plan_.first_step_of_epoch(s_.epoch);
  // What a mid-epoch position (s_.batch) counts in: a resume mid-epoch needs the same.
  f.state["trainer"]["batch_size"] = topt_.batch_size;
  f.state["trainer"]["accum_steps"] = topt_.accum_steps;
  f.state["plan"] = plan_.state();
  f.state["optimizer"] = optim_meta;
  f.state["scaler"] = p_.scaler.state();
  f.state["callbacks"] = cbs;
  f.state["store"] = store_.state();
  f.state["metric"] = {{"name", p_.metrics->monitor()}, {"value", s_.best ? json(*s_.best) : json()}};
  f.recipe_toml = io_.recipe_toml;
  f.provenance = io_.provenance;
  return f;
}

void Trainer::save_last() { store_.save_last(checkpoint_files()); }

void Trainer::resume(const Checkpoint& c) {
  // state.json matches its manifest hash yet may have been edited by hand: a wrong type or a negative
  // position is a damaged checkpoint (exit 3), not an internal error.
  try {
    restore(c);
  } catch (const json::exception& e) {
    throw CheckpointError("checkpoint " + c.dir + ": state.json does not hold what kgtrain wrote there (" + e.what() +
                          ")");
  }
  KG_CHECK(s_.epoch >= 0 && s_.batch >= 0 && s_.step >= 0, CheckpointError, "checkpoint ", c.dir,
           ": state.json holds a negative position (epoch ", s_.epoch, ", batch ", s_.batch, ", update ", s_.step, ")");
}

void Trainer::restore(const Checkpoint& c) {
  const auto& st = c.state;
  KG_CHECK(st.contains("trainer") && st.contains("optimizer"), CheckpointError, "checkpoint ", c.dir,
           " holds weights only (written by an older kgtrain or a weights export): it cannot resume a run; "
           "use it with fit --weights instead");
  model::load_state_dict(*p_.net, c.weights, /*strict=*/true, c.dir + "/model.safetensors");
  p_.opt->load_state(c.state_tensors, st.at("optimizer"));
  plan_.load_state(st.value("plan", json::object()));
  restore_rng(c.state_tensors);
  p_.scaler.load_state(st.value("scaler", json()));
  auto cbs = st.value("callbacks", json::object());
  for (auto& cb : callbacks_) cb->load_state(c.state_tensors, cbs.value(cb->name(), json::object()));
  store_.load_state(st.value("store", json::object()));
  const int64_t world = p_.group ? p_.group->world_size() : 1;
  s_ = TrainState::from_json(st.at("trainer"));
  KG_CHECK(
      s_.batch == 0 || s_.world_size == world, UsageError, "checkpoint ", c.dir, " was saved mid-epoch (batch ",
      s_.batch, ") by ", s_.world_size, " process(es); resume it with ", s_.world_size,
      " (mid-epoch positions count global batches of train.batch_size x processes), or from a checkpoint saved at an "
      "epoch's end, which any number of processes can resume");
  const json& saved = st.at("trainer");
  const int64_t saved_batch = saved.value("batch_size", topt_.batch_size),
                saved_accum = saved.value("accum_steps", topt_.accum_steps);
  KG_CHECK(
      s_.batch == 0 || (saved_batch == topt_.batch_size && saved_accum == topt_.accum_steps), UsageError, "checkpoint ",
      c.dir, " was saved mid-epoch (batch ", s_.batch, ") with train.batch_size = ", saved_batch,
      " and train.accum_steps = ", saved_accum, "; the recipe now has ", topt_.batch_size, " and ", topt_.accum_steps,
      ", so that position would name other samples. Resume with the run's values, or from a checkpoint saved at an "
      "epoch's end (checkpoints/step-N of an epoch end, or best), which any batch size can resume");
  s_.world_size = world;
  // The saved partial sums of the epoch (the job's, see checkpoint_files) are added once, by rank 0:
  // every rank adding them counted them world-size times in the epoch's train_loss.
  if (p_.group && p_.group->rank() != 0) {
    s_.epoch_loss_sum = 0;
    s_.epoch_loss_count = 0;
    s_.epoch_samples = 0;
  }
  if (s_.batch == 0 && st.at("trainer").contains("updates_into_epoch")) {
    const int64_t at = plan_.first_step_of_epoch(s_.epoch) + st.at("trainer").at("updates_into_epoch").get<int64_t>();
    if (at != s_.step) {
      log("  resume: " + std::to_string(plan_.steps_in_epoch(std::min(s_.epoch, plan_.epochs() - 1))) +
          " updates per epoch now (processes, batch size or accumulation changed): the schedule goes on from update " +
          std::to_string(at) + " of " + std::to_string(plan_.total_steps()) + " (the checkpoint counted " +
          std::to_string(s_.step) + ")");
      s_.step = at;
    }
  }
}

}  // namespace kg::train
