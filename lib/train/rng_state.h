// The state of every random generator the training stream draws from (dropout, drop-path, stochastic
// depth, weight init), saved in checkpoints so a resumed run draws the same numbers as an uninterrupted one.
// The data stream needs none of this: it is a pure function of (seed, epoch, sample index).
#pragma once
#include "model/weights/safetensors.h"

namespace kg::train {

// LibTorch's default CPU generator under "rng.cpu", and each CUDA device's default generator under
// "rng.cuda.<index>" when CUDA is available; uint8 tensors (the generators' own serialized state).
model::TensorMap capture_rng();

// Restores the generators captured by capture_rng (other keys in `t` are ignored, so a checkpoint's whole
// state TensorMap can be passed). CheckpointError when "rng.cpu" is absent or a state is malformed.
// CUDA states are restored for the devices present; a state for a device this machine lacks is skipped
// (a run moved to fewer GPUs cannot replay the missing ones' streams anyway).
void restore_rng(const model::TensorMap& t);

}  // namespace kg::train
