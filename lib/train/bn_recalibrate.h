// BatchNorm statistics for averaged weights (SWA): torch.optim.swa_utils.update_bn, as Lightning's
// StochasticWeightAveraging runs it after the last epoch.
#pragma once
#include <cstdint>

#include <c10/core/Device.h>

namespace kg::model {
class Network;
}
namespace kg::data {
class Loader;
}

namespace kg::train {

// Every BatchNorm1d/2d/3d with running statistics gets running_mean = 0, running_var = 1,
// num_batches_tracked = 0 and momentum None (a cumulative average: each batch weighs 1/n, never
// momentum 0, Lightning #14866); then forward passes in train mode without gradients over `loader`
// (at most `max_batches`, 0 = all) set the statistics. Momenta and every module's train/eval mode are
// restored afterwards. Returns the number of BatchNorm layers recalibrated; with none, nothing runs.
int64_t recalibrate_bn(model::Network& net, data::Loader& loader, const c10::Device& device, int64_t max_batches = 0);

}  // namespace kg::train
