// GradReducer (lib/train/grad_reducer.cpp): buckets summed during backward on two Gloo ranks give,
// bit for bit, the blocking all-reduce of the finished gradients; accumulation micro-batches send
// nothing; parameters without a gradient; an abandoned update.
#include <catch2/catch.hpp>

#include <vector>

#include <torch/torch.h>

#include "support/two_ranks.h"
#include "train/grad_reducer.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

// A three-layer MLP as plain tensors (no shared generator between the rank threads) plus one
// parameter the loss never uses (first: the reducer's last bucket, which waits for backward's end).
struct Mlp {
  std::vector<at::Tensor> p;
  Mlp() {
    auto w = [](int64_t o, int64_t i, double k) {
      return (torch::arange(o * i).reshape({o, i}) * k).sin().requires_grad_(true);
    };
    p = {torch::ones({5}).requires_grad_(true),  w(8, 4, 0.37), torch::zeros({8}).requires_grad_(true), w(8, 8, 0.53),
         torch::zeros({8}).requires_grad_(true), w(3, 8, 0.71), torch::zeros({3}).requires_grad_(true)};
  }
  at::Tensor loss(const at::Tensor& x) const {
    auto h = torch::tanh(torch::nn::functional::linear(x, p[1], p[2]));
    h = torch::tanh(torch::nn::functional::linear(h, p[3], p[4]));
    return torch::nn::functional::linear(h, p[5], p[6]).pow(2).mean();
  }
  std::vector<at::Tensor> grads() const {
    std::vector<at::Tensor> g;
    for (auto& t : p) g.push_back(t.grad().defined() ? t.grad().clone() : at::Tensor());
    return g;
  }
  void zero_grad() {
    for (auto& t : p) t.mutable_grad() = at::Tensor();
  }
};

at::Tensor input(int rank, int micro) {
  return (torch::arange(24).reshape({6, 4}) * (0.1 + 0.05 * rank + 0.3 * micro)).cos();
}

// The gradients the blocking path averages: each rank's finished .grad, summed and halved.
std::vector<at::Tensor> blocking_average(kg::device::ProcessGroup& g, std::vector<at::Tensor> local) {
  std::vector<at::Tensor> defined;
  for (auto& t : local)
    if (t.defined()) defined.push_back(t);
  g.all_reduce_sum(defined);
  for (auto& t : defined) t.div_(2.0);
  return local;
}

// Parameters whose gradients differ (defined-ness or any bit); empty = equal.
std::vector<size_t> differing(const std::vector<at::Tensor>& got, const std::vector<at::Tensor>& want) {
  std::vector<size_t> bad;
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i].defined() != want[i].defined() || (got[i].defined() && !torch::equal(got[i], want[i]))) bad.push_back(i);
  return bad;
}

// What one rank saw (Catch2's assertions are not thread-safe: the ranks record, the test thread checks).
struct Seen {
  size_t buckets = 0, started_during_backward = 0;
  std::vector<size_t> single, accumulated;
  bool unused_has_grad = true, leftover_equal = false, leftover_close = false, abandon_after = true,
       abandon_before = false;
};

}  // namespace

TEST_CASE("gradient buckets summed during backward equal the blocking all-reduce, bit for bit", "[unit][train][dist]") {
  Seen seen[2];
  kg::test::two_ranks([&](kg::device::ProcessGroupPtr g) {
    const int r = g->rank();
    Seen& out = seen[r];
    Mlp m;
    kg::train::GradReducer reducer(g, /*bucket_bytes=*/128);  // 32 floats: the 64- and 32-float weights get their own
    reducer.set_params(m.p);
    reducer.set_params(m.p);  // the first set's hooks are gone (else every gradient would count twice)
    out.buckets = reducer.buckets();

    // One backward per update.
    m.loss(input(r, 0)).backward();
    const auto want = blocking_average(*g, m.grads());
    m.zero_grad();
    reducer.arm();
    m.loss(input(r, 0)).backward();
    out.started_during_backward = reducer.started_during_backward();
    reducer.finish();
    out.single = differing(m.grads(), want);
    out.unused_has_grad = m.p[0].grad().defined();

    // Two accumulated micro-batches: only the last backward is armed; its bucket holds both.
    m.zero_grad();
    m.loss(input(r, 0)).backward();
    m.loss(input(r, 1)).backward();
    const auto want2 = blocking_average(*g, m.grads());
    m.zero_grad();
    m.loss(input(r, 0)).backward();  // unarmed: no collective (the ranks would deadlock on a mismatch)
    reducer.arm();
    m.loss(input(r, 1)).backward();
    reducer.finish();
    out.accumulated = differing(m.grads(), want2);

    // A parameter the last micro-batch did not reach sends what earlier ones left in .grad.
    m.zero_grad();
    (m.loss(input(r, 0)) + m.p[0].sum() * (r + 1)).backward();
    const auto want3 = blocking_average(*g, m.grads());
    m.zero_grad();
    (m.loss(input(r, 0)) * 0.5 + m.p[0].sum() * (r + 1)).backward();
    reducer.arm();
    (m.loss(input(r, 0)) * 0.5).backward();
    reducer.finish();
    const auto got3 = m.grads();
    out.leftover_equal = torch::equal(got3[0], want3[0]);
    out.leftover_close = torch::allclose(got3[1], want3[1], 1e-6, 1e-7);  // 0.5 + 0.5 vs 1: equal up to rounding

    // An update abandoned after buckets went out cannot be retried; one abandoned before can.
    m.zero_grad();
    reducer.arm();
    m.loss(input(r, 0)).backward();
    out.abandon_after = reducer.abandon();
    reducer.arm();
    out.abandon_before = reducer.abandon();
  });
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r);
    const Seen& s = seen[r];
    CHECK(s.buckets >= 4);
    // Every bucket but the last (the unused parameter's) went out while backward ran.
    CHECK(s.started_during_backward == s.buckets - 1);
    CHECK(s.single.empty());
    CHECK_FALSE(s.unused_has_grad);
    CHECK(s.accumulated.empty());
    CHECK(s.leftover_equal);
    CHECK(s.leftover_close);
    CHECK_FALSE(s.abandon_after);
    CHECK(s.abandon_before);
  }
}

TEST_CASE("after the first reduced backward the buckets follow the order the gradients arrived in (DDP's rebuild)",
          "[unit][train][dist]") {
  struct Out {
    std::vector<std::vector<size_t>> before, after;
    size_t buckets = 0, started_before = 0, started_after = 0;
    std::vector<size_t> diff{99};
  };
  Out seen[2];
  kg::test::two_ranks([&](kg::device::ProcessGroupPtr g) {
    const int r = g->rank();
    Out& out = seen[r];
    Mlp m;
    // Parameters listed first layer last: "last first" is then the order of the forward pass, the
    // opposite of backward's, and the unused parameter's bucket comes first.
    const std::vector<at::Tensor> reversed(m.p.rbegin(), m.p.rend());
    kg::train::GradReducer reducer(g, /*bucket_bytes=*/128);
    reducer.set_params(reversed);
    out.before = reducer.layout();
    out.buckets = reducer.buckets();
    reducer.arm();
    m.loss(input(r, 0)).backward();
    out.started_before = reducer.started_during_backward();
    reducer.finish();
    out.after = reducer.layout();

    m.zero_grad();
    m.loss(input(r, 1)).backward();
    const auto want = blocking_average(*g, m.grads());
    m.zero_grad();
    reducer.arm();
    m.loss(input(r, 1)).backward();
    out.started_after = reducer.started_during_backward();
    reducer.finish();
    out.diff = differing(m.grads(), want);
  });
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r);
    const Out& o = seen[r];
    REQUIRE(o.buckets >= 4);
    CHECK(o.before.front() == std::vector<size_t>{6});  // the unused parameter (reversed index 6) first: nothing
    CHECK(o.started_before == 0);                       // could start before backward ended
    CHECK(o.after.back() == std::vector<size_t>{6});    // now last, the others in arrival order
    CHECK(o.after.front() != o.before.front());
    CHECK(o.after == seen[0].after);  // rank 0's order on every rank
    CHECK(o.started_after == o.buckets - 1);
    CHECK(o.diff.empty());
  }
}

}  // namespace KG_UNITY_ID
}  // namespace
