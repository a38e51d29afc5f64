// Step graphs (device.cuda_graphs): a piece of device work recorded once and replayed with a single
// launch, the way torch.cuda.graph whole-network capture does. A CUDA graph replays the same kernels on
// the same memory: inputs must be copied into tensors that existed before the capture, outputs are read
// from the tensors the capture returned, and any value the host computed while capturing is frozen.
//
// The CUDA backend provides the real capturer (device/backends/cuda.cpp); emulated_capturer() re-runs
// the work on any device instead and checks the contract a real graph imposes (outputs and gradients
// land in the memory the capture left them in), so the trainer's use of graphs is testable on a CPU.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace kg::device {

// The recorded work: returns its outputs. It may only read tensors that outlive the graph.
using GraphWork = std::function<std::vector<at::Tensor>()>;

class StepGraph {
 public:
  virtual ~StepGraph() = default;
  // Runs the recorded work again: outputs() and grads() then hold this run's values.
  virtual void replay() = 0;
  const std::vector<at::Tensor>& outputs() const { return outputs_; }
  // Parallel to the capture's `params`: where replays write each parameter's gradient (undefined for a
  // parameter the work gives no gradient). A parameter's own .grad is left as it was before the capture.
  const std::vector<at::Tensor>& grads() const { return grads_; }

 protected:
  std::vector<at::Tensor> outputs_, grads_;
};

class GraphCapturer {
 public:
  virtual ~GraphCapturer() = default;
  // Runs `work` `warmup` times (library handles, lazy allocations; their effects are the caller's to
  // undo), then records it with every parameter's .grad unset, so its backward writes gradients into
  // memory of the graph. The graphs of one capturer share one memory pool: read a graph's outputs and
  // gradients before replaying another. Errors propagate (a failed capture leaves no graph behind).
  virtual std::unique_ptr<StepGraph> capture(const GraphWork& work, const std::vector<at::Tensor>& params,
                                             int warmup) = 0;
};

// Re-runs the work on replay; each replay copies its outputs and gradients into the memory the capture
// returned, and throws InternalError where a real graph would have written elsewhere (an output of
// another shape, a gradient for a parameter that had none at capture).
std::unique_ptr<GraphCapturer> emulated_capturer();

// The capturer for `device` (CUDA), or nullptr with `why` set to the reason.
std::unique_ptr<GraphCapturer> graph_capturer(const c10::Device& device, std::string* why);

// Unsets every parameter's .grad and returns what they were; put_grads puts them back.
std::vector<at::Tensor> take_grads(const std::vector<at::Tensor>& params);
void put_grads(const std::vector<at::Tensor>& params, const std::vector<at::Tensor>& grads);

}  // namespace kg::device
