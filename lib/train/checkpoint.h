// Checkpoint directories (RUN/checkpoints/last, best, step-<step>, top-epoch<NNN>): model.safetensors (the
// weights), state.safetensors (optimizer slots, RNG, callback tensors), optional <name>.safetensors (EMA,
// SWA weights), state.json, recipe.toml, provenance.json, and MANIFEST.json written last with each file's
// size and SHA-256 (and a SHA-256 of itself). Everything is written into <parent>/.tmp-<name>-<pid> and swapped in as
// one directory: a reader sees the old complete checkpoint or the new complete one, never half of either.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/weights/safetensors.h"

namespace kg::train {

// 2: MANIFEST.json + state.safetensors. load_checkpoint still reads 1 (no manifest, no state tensors).
constexpr int kCheckpointSchema = 2;

struct CheckpointFiles {
  model::TensorMap model;  // model.safetensors: the weights (what --weights / tta-predict load)
  model::TensorMap
      state_tensors;  // state.safetensors: optimizer slots, RNG, callback tensors (written even when empty)
  std::map<std::string, model::TensorMap> extra_weights;  // {"ema", ...} -> ema.safetensors; names [a-z0-9_-]
  nlohmann::json state;       // state.json: epoch, step, batch, metrics... (save sets "schema_version")
  std::string recipe_toml;    // recipe.toml
  nlohmann::json provenance;  // provenance.json
};

struct Checkpoint {
  std::string dir;
  model::TensorMap weights;                               // model.safetensors
  model::TensorMap state_tensors;                         // state.safetensors; empty for schema 1
  std::map<std::string, model::TensorMap> extra_weights;  // every other <name>.safetensors the manifest lists
  nlohmann::json state;                                   // state.json
  std::string recipe_toml;                                // recipe.toml ("" when absent in a schema-1 checkpoint)
  int schema_version = 0;                                 // 1 or 2
};

// Writes the checkpoint (see the top of this file), cleaning stale .tmp-<name>-* folders left by a crashed
// save first. With `rotate_to` (a folder name beside `dir`) a previous complete checkpoint at `dir` is
// renamed to it, after the new one is in place, instead of being deleted; an existing `rotate_to` is replaced.
// DataError when the disk refuses the write.
void save_checkpoint(const std::string& dir, const CheckpointFiles& f, const std::string& rotate_to = "");
// The schema-1 call shape (weights and state only; state.safetensors is written empty).
void save_checkpoint(const std::string& dir, const model::TensorMap& weights, const nlohmann::json& state,
                     const std::string& recipe_toml, const nlohmann::json& provenance);

// Checks MANIFEST.json (every listed file present, with its size and, with `verify`, its SHA-256) and
// loads. CheckpointError (exit 3) naming the missing, truncated or corrupt file and saying the checkpoint is
// incomplete or damaged. A folder without a manifest loads only as a schema-1 checkpoint.
Checkpoint load_checkpoint(const std::string& dir, bool verify = true);

// "" when `dir` holds a complete checkpoint, else why not ("model.safetensors is truncated: ..."). Without
// `deep` only the manifest and file sizes are checked (no hashing).
std::string checkpoint_problem(const std::string& dir, bool deep = true);

// Whether a checkpoint's state.json says its model.safetensors holds a weight average's weights (a best won by EMA or
// SWA: state["weights"] names it) beside the model's training state: such a checkpoint resumes no run exactly.
inline bool holds_averaged_weights(const nlohmann::json& state) {
  return state.is_object() && state.contains("weights") && state["weights"] != "model";
}

}  // namespace kg::train
