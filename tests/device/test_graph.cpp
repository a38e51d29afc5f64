// The emulated step graph keeps the contract of a CUDA graph: a capture computes nothing the caller may
// read (its outputs and gradients are NaN until the first replay) and leaves the parameters' .grad as
// it found them; a replay reads the static inputs as they are now and writes into the capture's memory.
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include "core/error.h"
#include "device/device.h"
#include "device/graph.h"
#include "support/gpu.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

struct Linear {
  at::Tensor w = torch::tensor({1.0f, 2.0f}).requires_grad_(true);
  at::Tensor b = torch::tensor({0.5f}).requires_grad_(true);
  at::Tensor x = torch::tensor({3.0f, 4.0f});  // the static input
  std::vector<at::Tensor> params() const { return {w, b}; }
  kg::device::GraphWork work() {
    return [this] {
      auto l = (w * x).sum() + b.sum();
      l.backward();
      return std::vector<at::Tensor>{l.detach()};
    };
  }
};

}  // namespace

TEST_CASE("emulated graph: capture leaves nothing readable and .grad untouched, replays read the static inputs",
          "[unit][device][graphs]") {
  Linear m;
  m.w.mutable_grad() = torch::full({2}, 7.0f);  // an accumulation in progress
  auto graph = kg::device::emulated_capturer()->capture(m.work(), m.params(), /*warmup=*/2);
  CHECK(m.w.grad().equal(torch::full({2}, 7.0f)));
  CHECK_FALSE(m.b.grad().defined());
  REQUIRE(graph->outputs().size() == 1);
  CHECK(std::isnan(graph->outputs()[0].item<float>()));
  REQUIRE(graph->grads().size() == 2);
  CHECK(graph->grads()[0].isnan().all().item<bool>());

  const at::Tensor out = graph->outputs()[0], gw = graph->grads()[0];
  graph->replay();
  CHECK(graph->outputs()[0].item<float>() == Approx(11.5f));  // 1*3 + 2*4 + 0.5
  CHECK(graph->grads()[0].equal(torch::tensor({3.0f, 4.0f})));
  CHECK(graph->grads()[1].equal(torch::tensor({1.0f})));
  CHECK(m.w.grad().equal(torch::full({2}, 7.0f)));  // replays do not touch .grad either

  m.x.copy_(torch::tensor({-1.0f, 5.0f}));  // a new batch in the static input
  graph->replay();
  CHECK(graph->outputs()[0].item<float>() == Approx(9.5f));
  CHECK(graph->grads()[0].equal(torch::tensor({-1.0f, 5.0f})));
  // Same memory as after the capture: what a CUDA graph writes.
  CHECK(graph->outputs()[0].data_ptr() == out.data_ptr());
  CHECK(graph->grads()[0].data_ptr() == gw.data_ptr());
}

TEST_CASE("emulated graph: work that changes what it computes between capture and replay is an error",
          "[unit][device][graphs]") {
  Linear m;
  bool use_b = false;
  kg::device::GraphWork work = [&] {
    auto l = (m.w * m.x).sum();
    if (use_b) l = l + m.b.sum();  // host-side control flow: a real graph would have frozen the first choice
    l.backward();
    return std::vector<at::Tensor>{l.detach()};
  };
  auto graph = kg::device::emulated_capturer()->capture(work, m.params(), 0);
  graph->replay();
  use_b = true;
  CHECK_THROWS_AS(graph->replay(), kg::InternalError);
  CHECK_FALSE(m.b.grad().defined());  // .grad restored after the failed replay
}

TEST_CASE("a CPU has no CUDA graph capturer, and says why", "[unit][device][graphs]") {
  std::string why;
  CHECK(kg::device::graph_capturer(c10::Device(c10::kCPU), &why) == nullptr);
  CHECK(why.find("CUDA graphs need a CUDA device") != std::string::npos);
}

TEST_CASE("CUDA graph capture: the same contract on the device", "[unit][gpu][device][graphs]") {
  KG_REQUIRE_GPU();
  std::string why;
  auto capturer = kg::device::graph_capturer(c10::Device(c10::kCUDA, 0), &why);
  REQUIRE(capturer != nullptr);
  Linear m;
  m.w = m.w.detach().cuda().requires_grad_(true);
  m.b = m.b.detach().cuda().requires_grad_(true);
  m.x = m.x.cuda();
  m.w.mutable_grad() = torch::full({2}, 7.0f, torch::kCUDA);
  auto graph = capturer->capture(m.work(), m.params(), /*warmup=*/3);
  CHECK(m.w.grad().cpu().equal(torch::full({2}, 7.0f)));
  CHECK_FALSE(m.b.grad().defined());
  const at::Tensor out = graph->outputs()[0];
  graph->replay();
  CHECK(graph->outputs()[0].item<float>() == Approx(11.5f));
  CHECK(graph->grads()[0].cpu().equal(torch::tensor({3.0f, 4.0f})));
  m.x.copy_(torch::tensor({-1.0f, 5.0f}).cuda());
  graph->replay();
  CHECK(graph->outputs()[0].item<float>() == Approx(9.5f));
  CHECK(graph->grads()[0].cpu().equal(torch::tensor({-1.0f, 5.0f})));
  CHECK(graph->outputs()[0].data_ptr() == out.data_ptr());
}

}  // namespace KG_UNITY_ID
}  // namespace
