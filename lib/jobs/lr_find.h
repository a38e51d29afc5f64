// `kgtrain lr-find`: fastai's lr finder on the recipe's training stream (lib/jobs/lr_find.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "session/session.h"

namespace kg::model {
class Network;
}
namespace kg::session {
class TrainingContext;
}

namespace kg::jobs {

int run_lr_find(const session::Session& o);

// The lr finder on fold `fold`'s training rows with `net` (on the device, state restored afterwards): writes
// lr_find.csv, lr_find.json and lr_find.png into `dir`, prints the table and returns lr_find.json's content
// ("lr" is the chosen suggestion). fit runs it for optim.lr = "find".
nlohmann::json run_lr_finder(const session::TrainingContext& s, model::Network& net, int64_t fold,
                             const std::string& dir);

}  // namespace kg::jobs
