#include "session/auto_batch.h"

#include <torch/torch.h>

#include "core/error.h"
#include "core/strings.h"
#include "device/device.h"
#include "device/oom.h"
#include "model/model.h"
#include "model/summary.h"
#include "optim/optimizer.h"
#include "session/effective_recipe.h"
#include "session/model_input.h"
#include "train/options.h"
#include "train/step.h"

using nlohmann::json;

namespace kg::session {
void resolve_auto_batch(Session& o) {
  if (!train::batch_size_is_auto(o.recipe)) return;
  const auto topt = o.recipe.get<train::TrainOptions>();
  const auto dev = device::setup(o.recipe.get<device::DeviceOptions>());
  const auto in = recipe_model_input(o.recipe);
  const auto& backend = device::backend_for(dev.device.type());
  const int index = dev.device.is_cuda() ? dev.device.index() : 0;
  const double limit = (1.0 - topt.auto_batch_margin) * static_cast<double>(dev.hardware.total_memory);
  const config::Recipe recipe = optim::with_numeric_lr(o.recipe);
  o.log("batch size auto: trying powers of two up to " + std::to_string(topt.auto_batch_max) + " on " +
        dev.description + " (input " + model::describe_input(in.ctx) + ", " +
        format_significant(topt.auto_batch_margin * 100, 3) + "% of " + model::bytes_text(dev.hardware.total_memory) +
        " kept free)");
  json trials = json::array();
  int64_t chosen = 0;
  std::string stopped = "reached train.auto_batch_max";
  {
    auto net = model::build(recipe, in.ctx);
    net->to(dev.device);
    if (dev.channels_last) net->set_channels_last(true);
    net->train();
    auto opt = optim::build(recipe, *net);
    // BatchNorm in training mode needs two samples: the search starts at 2.
    for (int64_t b = 2; b <= std::max<int64_t>(2, topt.auto_batch_max); b *= 2) {
      backend.empty_cache();
      backend.reset_peak_memory(index);
      json t = {{"batch", b}};
      try {
        train::trial_step(*net, *opt, in.ctx, dev, b);
        backend.synchronize(index);
      } catch (const std::exception& e) {
        if (!device::is_out_of_memory(e)) throw;
        opt->zero_grad();
        backend.empty_cache();
        std::string what = e.what();
        t["fits"] = false;
        t["error"] = what.substr(0, what.find('\n'));
        trials.push_back(t);
        stopped = "out of memory at " + std::to_string(b);
        break;
      }
      const auto mem = backend.memory(index);
      t["peak_bytes"] = mem.available ? json(mem.peak_reserved) : json();
      const bool within = !mem.available || static_cast<double>(mem.peak_reserved) <= limit;
      t["fits"] = within;
      trials.push_back(t);
      if (!within) {
        stopped = "peak memory " + model::bytes_text(mem.peak_reserved) + " at " + std::to_string(b) +
                  " leaves less than the margin";
        break;
      }
      chosen = b;
    }
  }
  backend.empty_cache();
  KG_CHECK(chosen > 0, DeviceError, "train.batch_size = \"auto\": not even 2 images fit a training step on ",
           dev.description, " (", stopped,
           "); lower data.image_size, set model.grad_checkpointing = true, or pick a smaller model");
  o.log("batch size auto: " + std::to_string(chosen) + " (" + stopped + ")");
  Resolutions chosen_size;
  chosen_size.batch_size = chosen;
  o.recipe = effective_recipe(o.recipe, chosen_size).recipe;
  o.auto_batch = {{"batch_size", chosen},
                  {"stopped", stopped},
                  {"margin", topt.auto_batch_margin},
                  {"trials", trials},
                  {"device", dev.description}};
}

}  // namespace kg::session
