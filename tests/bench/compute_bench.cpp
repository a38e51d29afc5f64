// The "pure compute" rate of a recipe: its model, loss, optimizer and schedule stepping on pre-made
// tensors in memory (no decoding, no augmentation, no loader). scripts/bench_vs_python.sh compares
// `kgtrain fit`'s training images/s with it. Usage: kgtrain_compute_bench RECIPE.toml [OVERRIDE...] [--steps N]
#include <torch/torch.h>

#include <chrono>
#include <iostream>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/error.h"
#include "data/options.h"
#include "device/device.h"
#include "loss/loss.h"
#include "model/model.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"
#include "train/options.h"

extern char** environ;

int main(int argc, char** argv) try {
  kg::config::ResolveInput in;
  int steps = 50, warmup = 5;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--steps" && i + 1 < argc)
      steps = std::stoi(argv[++i]);
    else if (a.size() > 5 && a.substr(a.size() - 5) == ".toml")
      in.recipe_files.push_back(a);
    else
      in.args.push_back(a);
  }
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) in.environ[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  in.builtin_recipes_dir = KGTRAIN_RECIPES_DIR;
  in.default_of_in_tree = &kg::config::default_of;
  auto recipe = kg::config::Recipe::validate(kg::config::resolve(in).tree);
  auto dopt = recipe.get<kg::data::DataOptions>();
  auto topt = recipe.get<kg::train::TrainOptions>();
  auto dev = kg::device::setup(recipe.get<kg::device::DeviceOptions>());
  auto g = kg::data::geometry(dopt);
  const int64_t k = dopt.num_classes.value_or(10);
  torch::manual_seed(0);
  auto net = kg::model::build(recipe, {g.channels, k});
  net->to(dev.device);
  auto opt = kg::optim::build(recipe, *net);
  auto loss = kg::loss::build(recipe, {k});
  auto sched = kg::optim::build_schedule(
      recipe, {kg::optim::peak_lr(recipe.get<kg::optim::OptimOptions>()), steps + warmup, steps + warmup});
  auto x = torch::randn({topt.batch_size, g.channels, g.height, g.width}).to(dev.device);
  auto y = torch::randint(0, k, {topt.batch_size}, torch::kLong).to(dev.device);
  net->train();
  std::chrono::steady_clock::time_point t0;
  for (int s = 0; s < steps + warmup; ++s) {
    if (s == warmup) t0 = std::chrono::steady_clock::now();
    opt->set_lr(sched->lr_at(s));
    if (auto m = sched->momentum_at(s)) opt->set_momentum(*m);
    opt->zero_grad();
    auto l = loss->forward(net->forward(x), y);
    l.backward();
    opt->step();
  }
  (void)torch::zeros({1}).item<float>();
  double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "{\"compute_images_per_s\": " << steps * topt.batch_size / sec << ", \"steps\": " << steps
            << ", \"batch_size\": " << topt.batch_size << ", \"device\": \"" << dev.description << "\"}" << std::endl;
  return 0;
} catch (const kg::Error& e) {
  std::cerr << "error: " << e.what() << "\n";
  return e.exit_code();
}
