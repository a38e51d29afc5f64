// Checkpoint directories (RUN/checkpoints/last, RUN/checkpoints/best): model.safetensors, state.json
// (epoch, step, metric, classes, model), recipe.toml and provenance.json. Written into a temp
// directory beside the target and swapped in atomically: a reader sees the old or the new, never half.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "model/safetensors.h"

namespace kg::train {

constexpr int kCheckpointSchema = 1;

struct Checkpoint {
  std::string dir;
  model::TensorMap weights;
  nlohmann::json state;  // state.json
};

void save_checkpoint(const std::string& dir, const model::TensorMap& weights, const nlohmann::json& state,
                     const std::string& recipe_toml, const nlohmann::json& provenance);

// CheckpointError (exit 3) when the directory, its weights or its state are missing or damaged.
Checkpoint load_checkpoint(const std::string& dir);

}  // namespace kg::train
