// train.batch_size = "auto": the largest power of two whose real training step (forward, backward,
// optimizer step on inputs of the recipe's largest image size) fits on the device with
// train.auto_batch_margin of its memory to spare — Lightning's BatchSizeFinder ("power" mode), except
// that the answer is always a size that was run, never an untested one.
#pragma once
#include <nlohmann/json.hpp>

#include "session/session.h"

namespace kg::session {

// Nothing when train.batch_size is a number; otherwise sets train.batch_size in `o.recipe` to the found
// size, logs the trials and keeps them in `o.auto_batch` (for summary.json). DeviceError when not
// even two images fit.
void resolve_auto_batch(Session& o);

}  // namespace kg::session
