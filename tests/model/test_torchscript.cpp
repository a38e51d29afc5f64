// The torchscript backbone (lib/model/torchscript.cpp) on fixtures from scripts/golden/gen_torchscript.py:
// refused without trust, damaged files rejected, parameters mirrored under the script's names as the
// same tensors, Python's outputs reproduced, trained end to end by `kgtrain fit`, saved and reloaded.
#include <catch2/catch.hpp>

#include <set>

#include <nlohmann/json.hpp>
#include <torch/script.h>
#include <torch/torch.h>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/error.h"
#include "core/fs.h"
#include "model/model.h"
#include "model/weights/safetensors.h"
#include "support/det_weights.h"
#include "support/fixtures.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using nlohmann::json;

namespace {

const std::string kGolden = KGTRAIN_SOURCE_DIR "/tests/golden/";
const std::string kTraced = kGolden + "tiny_traced.pt";

std::string recipe_for(const std::string& path, bool trust = true, const std::string& extra = "") {
  return "[model]\nname = \"torchscript\"\npath = \"" + path + "\"\ntrust_torchscript = " + (trust ? "true" : "false") +
         "\n" + extra;
}

kg::model::NetworkPtr build(const std::string& toml, int64_t size = 12, int64_t outputs = 2) {
  auto recipe = kg::config::Recipe::validate(kg::config::parse_toml_string(toml, "ts.toml"));
  kg::model::ModelContext ctx;
  ctx.in_chans = 3;
  ctx.num_outputs = outputs;
  ctx.height = ctx.width = size;
  return kg::model::build(recipe, ctx);
}

template <class E>
std::string error_of(const std::string& toml) {
  try {
    build(toml);
  } catch (const E& e) {
    return e.what() + std::string("\nexit ") + std::to_string(e.exit_code());
  }
  return "no error";
}

}  // namespace

TEST_CASE("torchscript is refused without model.trust_torchscript", "[unit][model]") {
  auto m = error_of<kg::ConfigError>(recipe_for(kTraced, /*trust=*/false));
  CHECK_THAT(m,
             Catch::Contains("trust_torchscript") && Catch::Contains("executable code") && Catch::Contains("exit 2"));
  // The file is not even opened: a missing one gives the same refusal.
  CHECK_THAT(error_of<kg::ConfigError>(recipe_for("/nonexistent/x.pt", false)), Catch::Contains("trust_torchscript"));
  CHECK_THAT(error_of<kg::ConfigError>(recipe_for(kTraced, true, "grad_checkpointing = true\n")),
             Catch::Contains("grad_checkpointing") && Catch::Contains("exit 2"));
  // Channels that do not fit the traced convolution: a recipe error naming the file.
  auto recipe = kg::config::Recipe::validate(kg::config::parse_toml_string(recipe_for(kTraced), "ts.toml"));
  kg::model::ModelContext one_channel;
  one_channel.in_chans = 1;
  one_channel.num_outputs = 2;
  try {
    kg::model::build(recipe, one_channel);
    FAIL("a 1-channel build of a 3-channel trace went through");
  } catch (const kg::ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains("tiny_traced.pt") && Catch::Contains("data.channels") &&
                             Catch::Contains("expected input[1, 1, 64, 64] to have 3 channels"));
  }
}

TEST_CASE("missing, truncated and foreign torchscript files are CheckpointErrors naming the path", "[unit][model]") {
  kg::test::TempDir dir;
  const std::string missing = dir / "missing.pt";
  CHECK_THAT(error_of<kg::CheckpointError>(recipe_for(missing)), Catch::Contains(missing) && Catch::Contains("exit 3"));
  auto bytes = kg::read_file(kTraced);
  const std::string truncated = dir.write("truncated.pt", bytes.substr(0, bytes.size() / 2));
  CHECK_THAT(error_of<kg::CheckpointError>(recipe_for(truncated)),
             Catch::Contains(truncated) && Catch::Contains("exit 3"));
  const std::string foreign = kGolden + "tiny.safetensors";
  CHECK_THAT(error_of<kg::CheckpointError>(recipe_for(foreign)), Catch::Contains(foreign) && Catch::Contains("exit 3"));
}

TEST_CASE("torchscript mirrors the script module's parameters and buffers under its names", "[unit][model]") {
  auto net = build(recipe_for(kTraced));
  auto script = torch::jit::load(kTraced);
  std::set<std::string> params, buffers;
  for (auto& p : net->named_parameters(true)) params.insert(p.key());
  for (auto& b : net->named_buffers(true)) buffers.insert(b.key());
  CHECK(params == std::set<std::string>{"stem.0.weight", "stem.1.weight", "stem.1.bias", "conv2.weight", "conv2.bias",
                                        "fc.weight", "fc.bias"});
  CHECK(buffers == std::set<std::string>{"stem.1.running_mean", "stem.1.running_var", "stem.1.num_batches_tracked"});
  // The file's values, untouched by the build-time dry forward (a train-mode trace updates BN stats even in eval).
  auto mine = kg::model::state_dict(*net);
  for (const auto& p : script.named_parameters()) CHECK(torch::equal(mine.at(p.name), p.value));
  for (const auto& b : script.named_buffers()) CHECK(torch::equal(mine.at(b.name), b.value));
  for (auto& p : net->parameters()) CHECK(p.requires_grad());

  CHECK(net->group_names() == std::vector<std::string>{"stem", "conv2", "head"});
  auto groups = net->layer_groups();
  CHECK(groups[0].params.size() == 3);
  CHECK(net->first_conv() == "stem.0.weight");
  CHECK(net->classifier() == "fc");
  CHECK(net->num_features() == 16);  // conv2's channels, average-pooled
}

TEST_CASE("a timm-like model traced with trace_module runs its forward_features, its own fc stays apart",
          "[unit][model]") {
  auto net = build(recipe_for(kGolden + "tiny_trace_module.pt"));
  CHECK(net->classifier() == "classifier");  // "fc" is the script module's own (unused) classifier
  CHECK(net->group_names() == std::vector<std::string>{"stem", "conv2", "fc", "head"});
  CHECK(net->named_parameters().contains("fc.weight"));
  CHECK(net->named_parameters()["classifier.weight"].sizes() == torch::IntArrayRef({2, 16}));
  auto x = torch::randn({2, 3, 12, 12});
  CHECK(net->forward_features(x).sizes() == torch::IntArrayRef({2, 16, 6, 6}));
  net->forward(x).sum().backward();
  CHECK(net->named_parameters()["stem.0.weight"].grad().defined());
  CHECK_FALSE(net->named_parameters()["fc.weight"].grad().defined());
}

TEST_CASE("torchscript reproduces Python's output, traced BatchNorm keeps batch statistics under eval()",
          "[unit][model]") {
  json g = json::parse(kg::read_file(kGolden + "tiny_traced.json"));
  auto net = build(recipe_for(kTraced));
  auto x = kg::test::det_input(g.at("input_shape").get<std::vector<int64_t>>());
  auto want = torch::tensor(g.at("output").get<std::vector<double>>(), torch::kDouble)
                  .reshape(g.at("output_shape").get<std::vector<int64_t>>());
  net->eval();  // Python ran the loaded module in eval mode too: the trace ignores it
  torch::NoGradGuard no_grad;
  auto got = net->forward_features(x).to(torch::kDouble);
  REQUIRE(got.sizes() == want.sizes());
  CHECK((got - want).abs().max().item<double>() < 1e-5);
  auto rm = torch::tensor(g.at("running_mean_after").get<std::vector<double>>(), torch::kDouble);
  CHECK((net->named_buffers()["stem.1.running_mean"].to(torch::kDouble) - rm).abs().max().item<double>() < 1e-6);
  CHECK(net->named_buffers()["stem.1.num_batches_tracked"].item<int64_t>() ==
        g.at("num_batches_tracked_after").get<int64_t>());
  // Batch statistics in eval mode: one image's features depend on the other images of the batch.
  auto other = x.clone();
  other[1].mul_(3).add_(1);
  CHECK_FALSE(torch::allclose(net->forward_features(x)[0], net->forward_features(other)[0]));
}

TEST_CASE("a scripted module follows kgtrain's train()/eval()", "[unit][model]") {
  auto net = build(recipe_for(kGolden + "tiny_scripted.pt"));
  auto x = torch::randn({4, 3, 12, 12});
  torch::NoGradGuard no_grad;
  auto stats = [&] { return net->named_buffers()["stem.1.running_mean"].clone(); };
  net->eval();
  auto before = stats();
  net->forward(x);
  CHECK(torch::equal(before, stats()));  // eval: running statistics used, not updated
  net->train();
  net->forward(x);
  CHECK_FALSE(torch::equal(before, stats()));
}

TEST_CASE("the network's tensors are the script module's: to(), in-place edits", "[unit][model]") {
  auto net = build(recipe_for(kTraced));
  auto x = torch::randn({2, 3, 12, 12});
  {
    torch::NoGradGuard no_grad;
    // Zeroing conv2's weight through the network leaves the script computing conv2's bias only.
    net->named_parameters()["conv2.weight"].zero_();
    auto f = net->forward_features(x);
    auto bias = net->named_parameters()["conv2.bias"].view({1, -1, 1, 1}).expand_as(f);
    CHECK(torch::allclose(f, bias));
  }
  // Module::to() converts with set_data(): the script module computes in double afterwards.
  net->to(torch::kDouble);
  auto y = net->forward(x.to(torch::kDouble));
  CHECK(y.scalar_type() == torch::kDouble);
  y.sum().backward();
  CHECK(net->named_parameters()["stem.0.weight"].grad().defined());
}

TEST_CASE("a torchscript network's state_dict saved and loaded into a fresh build reproduces its outputs",
          "[unit][model]") {
  torch::manual_seed(8);
  auto net = build(recipe_for(kTraced));
  auto x = torch::randn({8, 3, 12, 12});
  auto target = torch::randint(0, 2, {8});
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  double first = 0, last = 0;
  for (int i = 0; i < 20; ++i) {
    opt.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(net->forward(x), target);
    loss.backward();
    opt.step();
    (i == 0 ? first : last) = loss.item<double>();
  }
  CHECK(last < 0.5 * first);
  auto original = torch::jit::load(kTraced);
  for (const auto& p : original.named_parameters())  // the optimizer moved the script module's own tensors
    CHECK_FALSE(torch::equal(net->named_parameters()[p.name], p.value));

  kg::test::TempDir dir;
  kg::model::write_safetensors(dir / "model.safetensors", kg::model::state_dict(*net));
  auto fresh = build(recipe_for(kTraced));
  auto eval_out = [&](kg::model::Network& n) {
    n.eval();
    torch::NoGradGuard no_grad;
    return n.forward(x);
  };
  CHECK_FALSE(torch::allclose(eval_out(*fresh), eval_out(*net), 1e-4, 1e-5));
  // Both forwards above updated the traced BatchNorm's stats: reload the saved ones.
  auto saved = kg::model::read_safetensors(dir / "model.safetensors");
  auto report = kg::model::load_state_dict(*fresh, saved, /*strict=*/true, "model.safetensors");
  CHECK(report.clean());
  kg::model::load_state_dict(*net, saved, true, "model.safetensors");
  CHECK(torch::equal(eval_out(*fresh), eval_out(*net)));
}

TEST_CASE("kgtrain fit trains a traced backbone end to end", "[integration][model]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 64, 16);
  auto recipe = dir.write("ts.toml",
                          "[run]\nname = \"ts\"\nseed = 3\n"
                          "[data]\nroot = \"" +
                              ds.root +
                              "\"\nsample_submission = \"sample_submission.csv\"\n"
                              "channels = 3\nimage_size = 12\nnum_workers = 1\n"
                              "augment = [{ name = \"normalize\", mean = [0.4, 0.4, 0.4], std = [0.3, 0.3, 0.3] }]\n"
                              "[cv]\nfolds = 4\nfold = 1\n"
                              "[model]\nname = \"torchscript\"\npath = \"" +
                              kGolden +
                              "tiny_traced_pooled.pt\"\ntrust_torchscript = true\n"
                              "[optim]\nlr = 0.02\nweight_decay = 0.0\n"
                              "[train]\nepochs = 4\nbatch_size = 8\n"
                              "[device]\nthreads = 1\n");
  std::string run = dir / "run";
  auto fit = kg::test::run_kgtrain({"fit", recipe, "--run-dir", run, "--quiet"});
  INFO(fit.output);
  REQUIRE(fit.exit_code == 0);
  std::vector<json> epochs;
  std::istringstream metrics(kg::read_file(run + "/metrics.jsonl"));
  for (std::string line; std::getline(metrics, line);) epochs.push_back(json::parse(line));
  REQUIRE(epochs.size() == 4);
  INFO(kg::read_file(run + "/metrics.jsonl"));
  CHECK(epochs.back()["train_loss"].get<double>() < epochs.front()["train_loss"].get<double>());
  CHECK(epochs.back()["accuracy"].get<double>() >= 0.8);
  // The checkpoint holds the script's tensors under their Python names.
  auto saved = kg::model::read_safetensors(run + "/checkpoints/last/model.safetensors");
  auto original = torch::jit::load(kGolden + "tiny_traced_pooled.pt");
  for (const auto& p : original.named_parameters()) {
    INFO(p.name);
    REQUIRE(saved.count(p.name) == 1);
    CHECK_FALSE(torch::equal(saved.at(p.name), p.value));  // the backbone trained, not only the head
  }

  SECTION("without trust the same recipe exits 2") {
    auto refused =
        kg::test::run_kgtrain({"fit", recipe, "model.trust_torchscript=false", "--run-dir", dir / "run2", "--quiet"});
    INFO(refused.output);
    CHECK(refused.exit_code == 2);
    CHECK_THAT(refused.output, Catch::Contains("trust_torchscript"));
  }
}

}  // namespace KG_UNITY_ID
}  // namespace
