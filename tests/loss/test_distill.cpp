// loss.distill against PyTorch's F.kl_div / F.binary_cross_entropy_with_logits (tests/golden/distill.json, made by
// scripts/golden/gen_distill.py), built through the real recipe path; alpha = 0 is the plain loss exactly, targets no
// wider than the logits (validation) get the plain loss, numeric gradient checks, and the options' errors.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/error.h"
#include "core/fs.h"
#include "loss/loss.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::Task;
using nlohmann::json;

kg::loss::LossPtr build(const std::string& toml, Task task, int64_t k) {
  return kg::loss::build(kg::config::Recipe::validate(kg::config::parse_toml_string(toml, "distill.toml")), {k, task});
}

std::string distill_toml(const std::string& task, double alpha, double temperature) {
  return "[data]\ntask = \"" + task +
         "\"\n[loss]\ndistill = { teacher = \"teacher.csv\", alpha = " + std::to_string(alpha) +
         ", temperature = " + std::to_string(temperature) + " }\n";
}

torch::Tensor matrix(const json& rows) {
  std::vector<double> v;
  for (auto& r : rows)
    for (auto& x : r) v.push_back(x.get<double>());
  return torch::tensor(v, torch::kDouble).view({static_cast<int64_t>(rows.size()), -1});
}

// The batch's targets as the loader packs them: the hard targets as float columns, then the teacher's logits.
torch::Tensor packed(const torch::Tensor& hard, const torch::Tensor& teacher) {
  return torch::cat({hard.dim() == 1 ? hard.to(torch::kDouble).unsqueeze(1) : hard, teacher}, 1);
}

TEST_CASE("distillation matches PyTorch's kl_div and BCE on fixed logits", "[unit][loss]") {
  const json j = json::parse(kg::read_file(KGTRAIN_SOURCE_DIR "/tests/golden/distill.json"));
  REQUIRE(j["cases"].size() == 8);
  for (auto& c : j["cases"]) {
    const std::string task = c["task"];
    INFO(task << " alpha " << c["alpha"] << " T " << c["temperature"]);
    const auto s = matrix(c["logits"]), t = matrix(c["teacher"]);
    const auto y = task == "multiclass" ? torch::tensor(c["targets"].get<std::vector<int64_t>>(), torch::kLong)
                                        : matrix(c["targets"]);
    auto loss = build(distill_toml(task, c["alpha"], c["temperature"]), kg::parse_task(task), s.size(1));
    CHECK(loss->forward(s, packed(y, t)).item<double>() == Approx(c["loss"].get<double>()).epsilon(1e-10));
  }
}

TEST_CASE("distillation with alpha = 0 is the plain loss exactly; validation targets get the plain loss",
          "[unit][loss]") {
  torch::manual_seed(3);
  const auto s = torch::randn({6, 5}), t = torch::randn({6, 5}) * 4;
  const auto y = torch::tensor({0, 4, 1, 2, 3, 1}, torch::kLong);
  const auto plain = build("[loss]\nname = \"cross_entropy\"\nlabel_smoothing = 0.1\n", Task::multiclass, 5);
  const auto off =
      build("[loss]\nname = \"cross_entropy\"\nlabel_smoothing = 0.1\ndistill = { teacher = \"t.csv\", alpha = 0.0 }\n",
            Task::multiclass, 5);
  const auto on =
      build("[loss]\nname = \"cross_entropy\"\nlabel_smoothing = 0.1\ndistill = { teacher = \"t.csv\", alpha = 0.5 }\n",
            Task::multiclass, 5);
  const auto p = plain->forward(s, y);
  CHECK(torch::equal(off->forward(s, packed(y, t).to(torch::kFloat)), p));
  CHECK(torch::equal(on->forward(s, y), p));  // hard targets alone: validation's loss
  CHECK(on->forward(s, packed(y, t).to(torch::kFloat)).item<double>() != Approx(p.item<double>()));
  // Soft (pseudo-labelled) multiclass targets are [N, K]: packed [N, 2K].
  const auto soft = torch::softmax(torch::randn({6, 5}), 1);
  CHECK(torch::equal(off->forward(s, packed(soft, t).to(torch::kFloat)), plain->forward(s, soft)));
  // A teacher that agrees with the student adds nothing: KL = 0.
  const auto bce = build("[data]\ntask = \"multilabel\"\n[loss]\ndistill = { teacher = \"t.csv\", alpha = 1.0 }\n",
                         Task::multilabel, 5);
  CHECK(bce->forward(s, packed((torch::rand({6, 5}) > 0.5).to(torch::kFloat), s)).item<double>() ==
        Approx(0).margin(1e-6));
}

// Central finite differences of loss(x) against autograd, float64.
void check_gradient(const kg::loss::Loss& loss, torch::Tensor x, const torch::Tensor& t) {
  x = x.clone().to(torch::kDouble).requires_grad_(true);
  auto g = torch::autograd::grad({loss.forward(x, t)}, {x})[0];
  auto xd = x.detach().clone();
  const double h = 1e-6;
  for (int64_t i = 0; i < xd.numel(); ++i) {
    auto p = xd.clone(), m = xd.clone();
    p.view(-1)[i] += h;
    m.view(-1)[i] -= h;
    const double num = (loss.forward(p, t).item<double>() - loss.forward(m, t).item<double>()) / (2 * h);
    CHECK(g.view(-1)[i].item<double>() == Approx(num).margin(1e-6));
  }
}

TEST_CASE("distillation gradients match finite differences", "[unit][loss]") {
  torch::manual_seed(5);
  auto mc = build(distill_toml("multiclass", 0.7, 3.0), Task::multiclass, 4);
  check_gradient(*mc, torch::randn({5, 4}) * 2, packed(torch::tensor({0, 3, 1, 2, 2}), torch::randn({5, 4}) * 3));
  auto ml = build(distill_toml("multilabel", 0.6, 2.0), Task::multilabel, 3);
  check_gradient(*ml, torch::randn({4, 3}) * 2,
                 packed((torch::rand({4, 3}) > 0.5).to(torch::kDouble), torch::randn({4, 3}, torch::kDouble)));
  auto bin = build(distill_toml("binary", 0.5, 1.5), Task::binary, 1);
  check_gradient(
      *bin, torch::randn({6, 1}),
      packed(torch::tensor({{1.0}, {0.0}, {1.0}, {1.0}, {0.0}, {0.0}}), torch::randn({6, 1}, torch::kDouble) * 2));
}

TEST_CASE("distillation refuses regression and bad options with the key's name", "[unit][loss]") {
  auto message = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const kg::ConfigError& e) {
      return e.what();
    }
    return "";
  };
  const std::string reg = message([] {
    build("[data]\ntask = \"regression\"\n[loss]\nname = \"mse\"\ndistill = { teacher = \"t.csv\" }\n",
          Task::regression, 1);
  });
  CHECK(reg.find("loss.distill") != std::string::npos);
  CHECK(reg.find("regression") != std::string::npos);
  CHECK(message([] { build(distill_toml("multiclass", 1.5, 2.0), Task::multiclass, 3); }).find("loss.distill.alpha") !=
        std::string::npos);
  CHECK(message([] {
          build(distill_toml("multiclass", 0.5, 0.0), Task::multiclass, 3);
        }).find("loss.distill.temperature") != std::string::npos);
  CHECK(message([] {
          build("[loss]\ndistill = { teacher = \"t.csv\", temprature = 2.0 }\n", Task::multiclass, 3);
        }).find("temprature") != std::string::npos);
}

}  // namespace KG_UNITY_ID
}  // namespace
