#include "device/graph.h"

#include <limits>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include "core/error.h"
#include "device/backend.h"

namespace kg::device {

std::vector<at::Tensor> take_grads(const std::vector<at::Tensor>& params) {
  std::vector<at::Tensor> out;
  out.reserve(params.size());
  for (const auto& p : params) {
    auto& g = const_cast<at::Tensor&>(p).mutable_grad();
    out.push_back(g);
    g = at::Tensor();
  }
  return out;
}

void put_grads(const std::vector<at::Tensor>& params, const std::vector<at::Tensor>& grads) {
  for (size_t i = 0; i < params.size() && i < grads.size(); ++i)
    const_cast<at::Tensor&>(params[i]).mutable_grad() = grads[i];
}

namespace {

// The gradients `work` left in the parameters' .grad (undefined where none), the .grad unset again.
std::vector<at::Tensor> run_collecting_grads(const GraphWork& work, const std::vector<at::Tensor>& params,
                                             std::vector<at::Tensor>* outputs) {
  *outputs = work();
  return take_grads(params);
}

class EmulatedGraph : public StepGraph {
 public:
  EmulatedGraph(GraphWork work, std::vector<at::Tensor> params, std::vector<at::Tensor> outputs,
                std::vector<at::Tensor> grads)
      : work_(std::move(work)), params_(std::move(params)) {
    outputs_ = std::move(outputs);
    grads_ = std::move(grads);
  }

  void replay() override {
    const auto before = take_grads(params_);
    std::vector<at::Tensor> outs, grads;
    try {
      grads = run_collecting_grads(work_, params_, &outs);
    } catch (...) {
      put_grads(params_, before);
      throw;
    }
    put_grads(params_, before);
    KG_ASSERT(outs.size() == outputs_.size(), "emulated CUDA graph: the replay returned ", outs.size(),
              " outputs, the capture ", outputs_.size());
    at::NoGradGuard ng;
    for (size_t i = 0; i < outs.size(); ++i) {
      KG_ASSERT(outs[i].sizes() == outputs_[i].sizes() && outs[i].scalar_type() == outputs_[i].scalar_type(),
                "emulated CUDA graph: output ", i, " changed shape or type between capture and replay");
      outputs_[i].copy_(outs[i]);
    }
    for (size_t i = 0; i < grads.size(); ++i) {
      KG_ASSERT(grads[i].defined() == grads_[i].defined(), "emulated CUDA graph: parameter ", i,
                grads[i].defined() ? " took a gradient in the replay but none in the capture"
                                   : " took a gradient in the capture but none in the replay");
      if (grads[i].defined()) grads_[i].copy_(grads[i]);
    }
  }

 private:
  GraphWork work_;
  std::vector<at::Tensor> params_;
};

class EmulatedCapturer : public GraphCapturer {
 public:
  std::unique_ptr<StepGraph> capture(const GraphWork& work, const std::vector<at::Tensor>& params,
                                     int warmup) override {
    const auto before = take_grads(params);
    std::vector<at::Tensor> outputs, grads;
    try {
      for (int i = 0; i < warmup; ++i) {
        (void)work();
        (void)take_grads(params);
      }
      // A real capture computes nothing: its outputs and gradients hold garbage until the first
      // replay. NaN stands for that, so a caller that reads them before replaying is caught.
      grads = run_collecting_grads(work, params, &outputs);
    } catch (...) {
      put_grads(params, before);
      throw;
    }
    put_grads(params, before);
    at::NoGradGuard ng;
    for (auto& t : outputs)
      if (t.is_floating_point()) t.fill_(std::numeric_limits<double>::quiet_NaN());
    for (auto& g : grads)
      if (g.defined()) g.fill_(std::numeric_limits<double>::quiet_NaN());
    return std::make_unique<EmulatedGraph>(work, params, std::move(outputs), std::move(grads));
  }
};

}  // namespace

std::unique_ptr<GraphCapturer> emulated_capturer() { return std::make_unique<EmulatedCapturer>(); }

std::unique_ptr<GraphCapturer> graph_capturer(const c10::Device& device, std::string* why) {
  return backend_for(device.type()).graph_capturer(device.has_index() ? device.index() : 0, why);
}

}  // namespace kg::device
