// Gradient checkpointing through one custom autograd node per checkpointed stage. Unlike PyTorch's
// reentrant torch.utils.checkpoint, the node's next edges are the input AND the stage's parameters, so
// parameters get gradients even when the input needs none (a frozen stem), and the recompute leaves
// BatchNorm running statistics as one forward pass left them.
#include "model/grad_checkpoint.h"

#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/Context.h>
#include <ATen/core/Generator.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/torch.h>

#include "core/error.h"
#include "device/autocast_state.h"

namespace kg::model {
namespace {

using torch::autograd::variable_list;

// Context::defaultGenerator(Device) and Generator::{get,set}_state are the same in LibTorch 1.13 and
// 2.x (no compat entry needed); they cover the CPU and CUDA default generators without CUDA headers.
bool has_default_generator(const c10::Device& d) { return d.is_cpu() || d.is_cuda(); }

at::Tensor generator_state(const c10::Device& d) {
  at::Generator gen = at::globalContext().defaultGenerator(d);
  std::lock_guard<std::mutex> lock(gen.mutex());  // Note [Acquire lock when using random generators]
  return gen.get_state();
}

void set_generator_state(const c10::Device& d, const at::Tensor& state) {
  at::Generator gen = at::globalContext().defaultGenerator(d);
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

// The default generator state of one device: CPU always, plus the tensor's accelerator (dropout and
// drop-path masks on CUDA come from the CUDA generator).
struct RngStates {
  at::Tensor cpu, device_state;
  std::optional<c10::Device> device;

  static RngStates capture(const c10::Device& d) {
    RngStates s;
    s.cpu = generator_state(c10::Device(c10::kCPU));
    if (d.type() != c10::kCPU && has_default_generator(d)) {
      s.device = d;
      s.device_state = generator_state(d);
    }
    return s;
  }
  void restore() const {
    set_generator_state(c10::Device(c10::kCPU), cpu);
    if (device) set_generator_state(*device, device_state);
  }
};

// Runs the recompute with the forward pass's RNG states and puts the current ones back afterwards
// (torch.random.fork_rng), so checkpointing does not shift the random stream of later steps.
class ForkedRng {
 public:
  ForkedRng(const RngStates& replay, const c10::Device& d) : now_(RngStates::capture(d)) { replay.restore(); }
  ~ForkedRng() { now_.restore(); }
  ForkedRng(const ForkedRng&) = delete;
  ForkedRng& operator=(const ForkedRng&) = delete;

 private:
  RngStates now_;
};

// Copies of a stage's buffers (BatchNorm running stats, num_batches_tracked), written back on destruction.
class BufferRestore {
 public:
  explicit BufferRestore(torch::nn::Module& m) {
    for (auto& b : m.buffers(true))
      if (b.defined()) saved_.emplace_back(b, b.clone());
  }
  ~BufferRestore() {
    at::NoGradGuard no_grad;
    for (auto& [buf, copy] : saved_) buf.copy_(copy);
  }
  BufferRestore(const BufferRestore&) = delete;
  BufferRestore& operator=(const BufferRestore&) = delete;

 private:
  std::vector<std::pair<at::Tensor, at::Tensor>> saved_;
};

class CheckpointBackward final : public torch::autograd::Node {
 public:
  CheckpointBackward(torch::autograd::edge_list&& edges, std::shared_ptr<torch::nn::Module> stage,
                     std::function<at::Tensor(const at::Tensor&)> fn, at::Tensor x, uint32_t x_version,
                     std::vector<at::Tensor> params, RngStates rng, device::AutocastState autocast)
      : Node(std::move(edges)),
        stage_(std::move(stage)),
        fn_(std::move(fn)),
        x_(std::move(x)),
        x_version_(x_version),
        params_(std::move(params)),
        rng_(std::move(rng)),
        autocast_(autocast) {}

  std::string name() const override { return "kg::model::CheckpointBackward"; }

  void release_variables() override {
    fn_ = nullptr;
    stage_.reset();
    x_.reset();
    params_.clear();
    rng_ = RngStates{};
  }

  variable_list apply(variable_list&& grads) override {
    KG_ASSERT(fn_,
              "a checkpointed stage was back-propagated twice; its saved input was freed by the first backward "
              "(retain_graph is needed for a second one)");
    KG_ASSERT(x_._version() == x_version_,
              "the input of a checkpointed stage was modified in place after its forward "
              "pass; the recompute would use other values");
    const size_t n = num_outputs();
    variable_list out(n);
    if (grads.empty() || !grads[0].defined()) return out;
    // The engine runs this node with grad mode = create_graph; the recompute itself always needs it.
    const bool create_graph = at::GradMode::is_enabled();
    const bool need_x = task_should_compute_output(0);

    at::Tensor xin = x_.detach();
    xin.requires_grad_(need_x);
    // The first forward already updated the running statistics; the recompute must not count again. They
    // are put back only after the inner backward: BatchNorm's backward saved them (version check).
    BufferRestore restore(*stage_);
    at::Tensor y;
    {
      at::AutoGradMode grad_on(true);
      ForkedRng fork(rng_, x_.device());
      device::AutocastReplay autocast(autocast_);  // the forward pass's mixed precision, not the engine thread's
      y = fn_(xin);
    }
    if (!y.defined() || !y.requires_grad()) return out;  // no path from x or a parameter to the output

    std::vector<at::Tensor> inputs;
    std::vector<size_t> slots;
    if (need_x) inputs.push_back(xin), slots.push_back(0);
    for (size_t i = 0; i < params_.size(); ++i)
      if (task_should_compute_output(i + 1)) inputs.push_back(params_[i]), slots.push_back(i + 1);
    if (inputs.empty()) return out;
    auto g = torch::autograd::grad({y}, inputs, {grads[0]}, /*retain_graph=*/create_graph, create_graph,
                                   /*allow_unused=*/true);
    for (size_t i = 0; i < g.size(); ++i) out[slots[i]] = g[i];
    return out;
  }

 private:
  std::shared_ptr<torch::nn::Module> stage_;
  std::function<at::Tensor(const at::Tensor&)> fn_;
  at::Tensor x_;  // detached: shares the version counter with the caller's tensor
  uint32_t x_version_;
  std::vector<at::Tensor> params_;
  RngStates rng_;
  device::AutocastState autocast_;
};

}  // namespace

at::Tensor checkpoint(const std::shared_ptr<torch::nn::Module>& stage,
                      const std::function<at::Tensor(const at::Tensor&)>& fn, const at::Tensor& x) {
  KG_ASSERT(stage && fn && x.defined(), "checkpoint needs a stage, a function and an input");
  std::vector<at::Tensor> params;
  for (auto& p : stage->parameters(true))
    if (p.requires_grad()) params.push_back(p);
  if (!at::GradMode::is_enabled() || (!x.requires_grad() && params.empty())) return fn(x);

  RngStates rng = RngStates::capture(x.device());
  const uint32_t version = x._version();
  at::Tensor y;
  {
    at::NoGradGuard no_grad;
    y = fn(x);
  }
  KG_ASSERT(x._version() == version,
            "a checkpointed stage modified its input in place; its recompute would see other values");
  if (!y.defined() || !(y.is_floating_point() || y.is_complex())) return y;
  // The output gets this node as its history: it must not be the input itself or an autograd view (a view
  // made in no-grad mode refuses later in-place ops); detach() aliases the data without copying it.
  if (y.is_same(x) || y.is_view()) y = y.detach();

  std::vector<at::Tensor> edges_of{x};
  edges_of.insert(edges_of.end(), params.begin(), params.end());
  std::shared_ptr<CheckpointBackward> node(
      new CheckpointBackward(torch::autograd::collect_next_edges(edges_of), stage, fn, x.detach(), version,
                             std::move(params), std::move(rng), device::AutocastState::current()),
      torch::autograd::deleteNode);
  torch::autograd::set_history(y, node);
  return y;
}

}  // namespace kg::model
