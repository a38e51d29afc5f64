// A small trainer (resnet9 width 2, AdamW, one-cycle, EMA and SWA) that the checkpoint fuzz harness resumes from
// checkpoint folders built out of fuzzed bytes: state.json, state.safetensors and MANIFEST.json go through the
// same load_checkpoint + Trainer::resume that `fit --resume` runs.
#pragma once
#include <memory>
#include <string>

#include "train/checkpoint.h"

namespace kg::fuzz {

class CheckpointRig {
 public:
  static CheckpointRig& get();  // built on first use (a few hundred ms), then reused for every input
  ~CheckpointRig();
  // Writes the checkpoint folder `dir` (model.safetensors = the rig's weights, recipe.toml, provenance.json, and
  // the given state.json and state.safetensors; MANIFEST.json = `manifest`, or a correct one when it is empty),
  // loads it with load_checkpoint (hashes verified) and resumes the trainer from it.
  void resume_from(const std::string& state_json, const std::string& state_tensors, const std::string& manifest,
                   const std::string& dir);
  // The rig's own checkpoint after one update (optimizer slots, EMA, RNG state in it): the harness's seed.
  train::CheckpointFiles files();

 private:
  CheckpointRig();
  struct Parts;
  std::unique_ptr<Parts> p_;
};

}  // namespace kg::fuzz
