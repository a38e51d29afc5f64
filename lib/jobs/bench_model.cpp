// `kgtrain bench-model`: what a training step costs the model alone — forward, backward and the
// recipe's optimizer step on synthetic images in memory (no decoding, no loader), for the recipe's model or a list of
// families built for the recipe's data, in NCHW and channels_last layouts, optionally with gradient
// checkpointing and the activation memory it saves (glibc heap held after the forward pass).
#include "jobs/bench_model.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <set>

#include <torch/torch.h>

#include "config/flags.h"
#include "config/sections.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/strings.h"
#include "device/device.h"
#include "device/memory_probe.h"
#include "device/precision.h"
#include "jobs/bench_util.h"
#include "model/model.h"
#include "model/summary.h"
#include "optim/optimizer.h"
#include "session/model_input.h"
#include "session/session.h"
#include "train/options.h"
#include "train/step.h"

using nlohmann::json;

namespace kg::jobs {
namespace {

using bench::Clock;
using bench::fixed;
using bench::median;

// The recipe with model.name = `name`. Another family keeps only the keys every model shares
// (resnet9's width means nothing to convnext); no model loads model.pretrained here.
config::Recipe model_recipe(const config::Recipe& recipe, const std::string& name) {
  const bool other = name != model::model_name(recipe);
  return recipe.edited([&](config::Tree& t) {
    if (other) {
      std::set<std::string> shared;
      for (const auto& k : config::sections().at("model").schema) shared.insert("model." + k.key);
      for (const auto& key : t.keys_under("model"))
        if (!shared.count(key)) t.erase(key);
      t.set("model.name", config::Entry{name, config::Origin::command_line(), {}, false});
    }
    t.erase("model.pretrained");
  });
}

struct Step {
  double seconds = 0;
  int64_t held_bytes = -1;  // heap held after the forward pass (activations autograd keeps + output)
};

// One training step on fixed synthetic tensors with the recipe's optimizer, as fit builds it. Gradients
// are dropped (set to none) first, as fit does, so the heap before the forward pass holds no gradient of
// the previous step.
Step train_step(model::Network& net, optim::Optimizer& opt, const model::Inputs& in,
                const std::function<at::Tensor(const at::Tensor&)>& loss_fn, const at::Tensor& sync_param,
                device::Precision precision) {
  opt.zero_grad();
  Step s;
  const auto t0 = Clock::now();
  const int64_t before = device::heap_in_use();
  {
    // device.precision, as in fit
    at::Tensor loss = loss_fn(train::forward_float32(net, in, precision, sync_param.device().type()));
    const int64_t after = device::heap_in_use();
    if (before >= 0 && after >= 0) s.held_bytes = after - before;
    loss.backward();
  }
  opt.step();
  (void)sync_param.reshape(-1)[0].item<float>();  // waits for queued device work (CUDA runs asynchronously)
  s.seconds = bench::seconds_since(t0);
  return s;
}

// Targets of the task's shape on `device` (seeded by the caller) and the loss on them.
std::function<at::Tensor(const at::Tensor&)> synthetic_loss(data::Task task, int64_t outputs, int64_t batch,
                                                            const c10::Device& device) {
  namespace F = torch::nn::functional;
  auto fopts = torch::TensorOptions().dtype(torch::kFloat).device(device);
  switch (task) {
    case data::Task::multiclass: {
      at::Tensor y = torch::randint(0, outputs, {batch}, torch::TensorOptions().dtype(torch::kLong).device(device));
      return [y](const at::Tensor& out) { return F::cross_entropy(out, y); };
    }
    case data::Task::regression: {
      at::Tensor y = torch::randn({batch, outputs}, fopts);
      return [y](const at::Tensor& out) { return F::mse_loss(out, y); };
    }
    default: {  // binary, multilabel: 0/1 targets per output
      at::Tensor y = torch::randint(0, 2, {batch, outputs}, fopts);
      return [y](const at::Tensor& out) { return F::binary_cross_entropy_with_logits(out, y); };
    }
  }
}

// One configuration (layout, checkpointing) of one model: warm-up, then the timed steps; the report row.
json time_config(const BenchModelRequest& o, const config::Recipe& tree, model::Network& net, const model::Inputs& x,
                 const std::function<at::Tensor(const at::Tensor&)>& loss_fn, const at::Tensor& sync_param,
                 device::Precision precision, bool measure_heap, double gflops, const std::string& name,
                 const std::string& layout, bool ckpt, int64_t batch) {
  // A fresh optimizer per configuration: its moments take each layout's memory format.
  auto opt = optim::build(tree, net);
  for (int64_t i = 0; i < o.flags.warmup; ++i) train_step(net, *opt, x, loss_fn, sync_param, precision);
  std::vector<double> secs, held;
  for (int64_t i = 0; i < o.flags.steps; ++i) {
    Step s = train_step(net, *opt, x, loss_fn, sync_param, precision);
    secs.push_back(s.seconds);
    held.push_back(static_cast<double>(s.held_bytes));
  }
  const double med = median(secs);
  const double ips = med > 0 ? static_cast<double>(batch) / med : 0.0;
  json held_json = measure_heap ? json(static_cast<int64_t>(median(held))) : json(nullptr);
  return {{"model", name},
          {"layout", layout},
          {"grad_checkpointing", ckpt},
          {"batch_size", batch},
          {"warmup_steps", o.flags.warmup},
          {"steps", o.flags.steps},
          {"step_seconds", secs},
          {"median_step_seconds", med},
          {"images_per_s", ips},
          // forward + backward ~ 3x the forward pass's 2 x MACs
          {"train_tflops_per_s", 3.0 * gflops * ips / 1000.0},
          {"held_after_forward_bytes", held_json}};
}

// Checkpointing's trade for one model, per layout: activation memory against speed.
std::string checkpoint_notes(const BenchModelRequest& o, const std::string& name,
                             std::map<std::pair<std::string, bool>, json>& by_config, bool measure_heap,
                             const std::string& device) {
  std::string notes;
  for (const auto& layout : o.flags.layouts) {
    const json& off = by_config[{layout, false}];
    const json& on = by_config[{layout, true}];
    const double speed = on["images_per_s"].get<double>() / std::max(1e-12, off["images_per_s"].get<double>());
    std::string mem = "memory not measured on " + device;
    if (measure_heap) {
      const auto a = off["held_after_forward_bytes"].get<int64_t>(), b = on["held_after_forward_bytes"].get<int64_t>();
      mem = "holds " + model::bytes_text(b) + " after the forward pass instead of " + model::bytes_text(a) +
            (a > 0 ? " (" + fixed(100.0 * static_cast<double>(b - a) / static_cast<double>(a), 0) + "%)" : "");
    }
    notes += name + " " + layout + ": grad checkpointing " + mem + ", at " + fixed(speed, 2) + "x the speed\n";
  }
  return notes;
}

}  // namespace

const config::Fields<BenchModelFlags>& bench_model_flags() {
  static const config::Fields<BenchModelFlags> f = [] {
    using F = BenchModelFlags;
    config::Fields<F> t;
    t.field("models", &F::models, "model names, e.g. resnet18,efficientnet_b0 (none: the recipe's model)");
    t.field("size", &F::size, "square input side in pixels (0: data.image_size)").min(0);
    t.field("batch", &F::batch, "images per step (0: train.batch_size)").min(0);
    t.field("steps", &F::steps, "timed steps per configuration; the median is reported").min(1);
    t.field("warmup", &F::warmup, "untimed steps before them").min(0);
    t.field("layouts", &F::layouts, "memory layouts to time")
        .choices({"nchw", "channels_last"})
        .check([](const json& v) { return v.empty() ? std::string("expected at least one layout") : std::string(); });
    t.field("grad_checkpointing", &F::grad_checkpointing,
            "also time each configuration with gradient checkpointing, with the activation memory held after forward");
    t.field("json", &F::json, "also write the report as JSON (schema_version 1) to this file");
    return t;
  }();
  return f;
}

int run_bench_model(const BenchModelRequest& o) {
  const auto& recipe = o.recipe;
  config::check_flags(bench_model_flags(), o.flags);
  std::vector<std::string> names = o.flags.models;
  if (names.empty()) names.push_back(model::model_name(recipe));
  for (const auto& n : names)
    if (!model::model_registry().find_info(n)) model::model_registry().unknown(n, "--models");

  auto in = session::recipe_model_input(recipe);
  const auto dev = device::setup(recipe.get<device::DeviceOptions>());
  const auto run = recipe.get<train::RunOptions>();
  auto ctx = in.ctx;
  if (o.flags.size > 0) ctx.height = ctx.width = o.flags.size;
  const int64_t batch = o.flags.batch > 0 ? o.flags.batch : recipe.get<train::TrainOptions>().batch_size;
  std::vector<bool> ckpt_modes{false};
  if (o.flags.grad_checkpointing) ckpt_modes.push_back(true);
  const bool measure_heap = dev.device.is_cpu() && device::heap_in_use() >= 0;

  const std::string optim_name = recipe.get<optim::OptimOptions>().name;
  const std::string shape = model::describe_input(ctx);
  std::string head = "bench-model: " + join(o.layers, " + ") + ": " + join(names, ", ") + "; input " + shape +
                     (ctx.num_features > 0 ? " + " + std::to_string(ctx.num_features) + " features" : "") + ", " +
                     std::to_string(ctx.num_outputs) + " outputs (" + data::task_name(in.classes.task) + "), batch " +
                     std::to_string(batch) + ", " + std::to_string(o.flags.warmup) + " warm-up + " +
                     std::to_string(o.flags.steps) + " timed steps (median), " + dev.description +
                     "; forward + backward + " + optim_name + " step (kgtrain's, as fit runs it) on synthetic data\n";
  if (o.dry_run) {
    std::cout << head << "dry run: would time " << names.size() * o.flags.layouts.size() * ckpt_modes.size()
              << " configurations (layouts " << join(o.flags.layouts, ", ")
              << (o.flags.grad_checkpointing ? "; grad checkpointing off and on" : "") << "); nothing timed\n";
    return kExitOk;
  }

  // Synthetic batch and targets of the task's shape (seeded: every model sees the same data).
  torch::manual_seed(static_cast<uint64_t>(run.seed));
  auto fopts = torch::TensorOptions().dtype(torch::kFloat).device(dev.device);
  // Random, not dummy_inputs' zeros: the activations are those of data.
  const model::Inputs x =
      model::dummy_inputs(ctx, batch, fopts).map([](const at::Tensor& t) {
        return t.is_floating_point() ? torch::randn_like(t) : t;  // token ids and masks stay as they are
      });
  const auto loss_fn = synthetic_loss(in.classes.task, ctx.num_outputs, batch, dev.device);

  json models = json::array(), rows = json::array();
  char buf[256];
  std::string table = "";
  std::snprintf(buf, sizeof buf, "%-16s %-14s %-5s %9s %10s %10s %14s\n", "model", "layout", "ckpt", "GFLOPs", "step s",
                "img/s", "held after fw");
  table += buf;
  std::string notes;
  for (const auto& name : names) {
    o.log("  building " + name + "...");
    const config::Recipe tree = model_recipe(recipe, name);
    torch::manual_seed(static_cast<uint64_t>(run.seed));
    auto net = model::build(tree, ctx);
    net->to(dev.device);
    net->set_channels_last(false);
    net->set_grad_checkpointing(false);
    const auto summary = model::summarize(*net, ctx, batch);
    models.push_back({{"name", name}, {"summary", summary.to_json()}});
    at::Tensor sync_param;
    for (const auto& p : net->parameters())
      if (p.requires_grad()) sync_param = p;
    KG_CHECK(sync_param.defined(), UsageError, "bench-model: ", name, " has no trainable parameter to train");
    net->train();
    std::map<std::pair<std::string, bool>, json> by_config;
    for (const auto& layout : o.flags.layouts) {
      net->set_channels_last(layout == "channels_last");
      for (bool ckpt : ckpt_modes) {
        net->set_grad_checkpointing(ckpt);
        o.log("  " + name + ", " + layout + (ckpt ? ", grad checkpointing" : "") + ": " +
              std::to_string(o.flags.warmup) + " + " + std::to_string(o.flags.steps) + " steps...");
        const json row = time_config(o, tree, *net, x, loss_fn, sync_param, dev.precision, measure_heap, summary.gflops,
                                     name, layout, ckpt, batch);
        const double med = row["median_step_seconds"].get<double>(), ips = row["images_per_s"].get<double>();
        const json& held_json = row["held_after_forward_bytes"];
        rows.push_back(row);
        by_config[{layout, ckpt}] = row;
        std::snprintf(buf, sizeof buf, "%-16s %-14s %-5s %9.3f %10.3f %10.1f %14s\n", name.c_str(), layout.c_str(),
                      ckpt ? "on" : "off", summary.gflops, med, ips,
                      measure_heap ? model::bytes_text(held_json.get<int64_t>()).c_str() : "n/a");
        table += buf;
      }
    }
    net->set_channels_last(false);
    net->set_grad_checkpointing(false);
    if (o.flags.grad_checkpointing) notes += checkpoint_notes(o, name, by_config, measure_heap, dev.description);
  }

  std::cout << head << table << (notes.empty() ? "" : "\n" + notes);
  if (!o.flags.json.empty()) {
    json report = {{"schema_version", bench::kSchemaVersion},
                   {"command", "bench-model"},
                   {"recipe", o.layers},
                   {"device", dev.description},
                   {"threads", dev.threads},
                   {"precision", device::precision_name(dev.precision)},
                   {"input", {{"channels", ctx.in_chans}, {"height", ctx.height}, {"width", ctx.width}}},
                   {"feature_dim", ctx.num_features},
                   {"outputs", ctx.num_outputs},
                   {"task", data::task_name(in.classes.task)},
                   {"batch_size", batch},
                   {"warmup_steps", o.flags.warmup},
                   {"steps", o.flags.steps},
                   {"layouts", o.flags.layouts},
                   {"optimizer", optim_name},
                   {"held_after_forward", measure_heap ? "glibc mallinfo2 uordblks + hblkhd delta over the forward pass"
                                                       : "not measured (CPU only)"},
                   {"models", models},
                   {"runs", rows}};
    write_file_atomic(o.flags.json, report.dump(2) + "\n");
    o.log("report: " + o.flags.json);
  }
  return kExitOk;
}

}  // namespace kg::jobs
