#include "train/step_graphs.h"

#include <sstream>

#include <torch/torch.h>

#include "device/device.h"
#include "device/oom.h"
#include "train/model_snapshot.h"
#include "train/options.h"

namespace kg::train {

namespace {
constexpr int kWarmup = 3;  // eager runs before a capture (cuDNN benchmark, library handles), as in PyTorch's docs
constexpr size_t kMaxGraphs = 4;  // input shapes kept captured (progressive-resizing stages, out-of-memory back-offs)

void describe(std::ostringstream& s, const at::Tensor& t) {
  if (!t.defined()) {
    s << "-;";
    return;
  }
  s << c10::toString(t.scalar_type()) << t.sizes() << t.strides() << ';';
}
}  // namespace

std::string graphs_blocker(const config::Recipe& recipe, bool multi_process) {
  if (recipe.get<TrainOptions>().adv_kind != "none")
    return "train.adversarial perturbs the weights between two backward passes of a micro-batch";
  if (recipe.get<model::ModelOptions>().grad_checkpointing)
    return "model.grad_checkpointing recomputes activations inside backward, which a graph cannot record";
  if (multi_process && recipe.get<device::DeviceOptions>().sync_batchnorm)
    return "device.sync_batchnorm exchanges BatchNorm statistics between processes inside the forward pass";
  return "";
}

struct GraphedSteps::Entry {
  std::string key;
  model::Inputs in;  // the static inputs every replay reads
  at::Tensor y, w;
  std::unique_ptr<device::StepGraph> graph;
};

GraphedSteps::GraphedSteps(std::unique_ptr<device::GraphCapturer> capturer, MicroStep step,
                           std::vector<at::Tensor> params, std::function<void(const std::string&)> log)
    : capturer_(std::move(capturer)), step_(step), params_(std::move(params)), log_(std::move(log)) {}

GraphedSteps::~GraphedSteps() = default;

std::string GraphedSteps::signature() const {
  std::string s;
  for (const auto& p : params_) s += p.requires_grad() ? '1' : '0';
  s += '|';
  for (const auto& m : step_.net->modules(/*include_self=*/true)) s += m->is_training() ? '1' : '0';
  return s;
}

void GraphedSteps::check_model() {
  if (entries_.empty() || signature() == model_signature_) return;
  clear();
  if (log_) log_("  cuda graphs: trainable parameters or layer modes changed; the step is captured again");
}

void GraphedSteps::clear() { entries_.clear(); }

GraphedSteps::Entry& GraphedSteps::entry_for(const model::Inputs& in, const at::Tensor& y) {
  std::ostringstream k;
  for (const at::Tensor* t : in.fields()) describe(k, *t);
  describe(k, y);
  const std::string key = k.str();
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if ((*it)->key == key) {
      entries_.splice(entries_.begin(), entries_, it);
      return *entries_.front();
    }
  if (entries_.size() >= kMaxGraphs) entries_.pop_back();
  auto e = std::make_unique<Entry>();
  e->key = key;
  // The batch itself (not uninitialised memory): warm-up runs read it, and a loss must see valid targets.
  e->in = in.map([](const at::Tensor& t) { return t.clone(); });
  e->y = y.clone();
  e->w = step_.weight_tensor(1.0, y.device());
  Entry* ep = e.get();
  const MicroStep step = step_;
  device::GraphWork work = [step, ep]() -> std::vector<at::Tensor> {
    at::Tensor l = step.forward(ep->in, ep->y);
    step.backward(l, ep->w);
    return {l.detach()};
  };
  // Warm-up and capture move BatchNorm statistics and the generators (a capture on the CPU emulation
  // runs the work too): the replay that counts starts from where the step found them.
  ModelSnapshot before;
  before.take(*step_.net);
  try {
    e->graph = capturer_->capture(work, params_, kWarmup);
  } catch (...) {
    before.restore(*step_.net);
    throw;
  }
  before.restore(*step_.net);
  if (entries_.empty()) model_signature_ = signature();
  ++captures_;
  if (log_)
    log_("  cuda graphs: training step captured for input " +
         c10::str((in.pixels.defined() ? in.pixels : in.ids).sizes()) + " (" + std::to_string(entries_.size() + 1) +
         " shape" + (entries_.empty() ? "" : "s") + " kept)");
  entries_.push_front(std::move(e));
  return *entries_.front();
}

at::Tensor GraphedSteps::run(const model::Inputs& in, const at::Tensor& y, double weight, bool sole) {
  Entry* e = nullptr;
  try {
    e = &entry_for(in, y);
  } catch (const std::exception& err) {
    if (device::is_out_of_memory(err)) throw;
    std::string what = err.what();
    on_ = false;
    clear();
    if (log_)
      log_("  cuda graphs: off for the rest of the run, the step could not be captured (" +
           what.substr(0, what.find('\n')) + "); it runs eagerly");
    at::Tensor l = step_.forward(in, y);
    step_.backward(l, step_.weight_tensor(weight, y.device()));
    return l.detach();
  }
  {
    torch::NoGradGuard ng;
    const auto from = in.fields();
    const auto to = e->in.fields();
    for (size_t i = 0; i < from.size(); ++i)
      if (from[i]->defined()) to[i]->copy_(*from[i], /*non_blocking=*/true);
    e->y.copy_(y, /*non_blocking=*/true);
    e->w.fill_(MicroStep::weight_as_float(weight));
  }
  e->graph->replay();  // outside the guard: the emulation runs backward
  torch::NoGradGuard ng;
  // What backward does with a micro-batch's gradient: the first one becomes .grad, later ones add in place.
  const auto& grads = e->graph->grads();
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!grads[i].defined()) continue;
    at::Tensor& g = params_[i].mutable_grad();
    if (!g.defined())
      g = sole ? grads[i] : grads[i].clone();
    else
      g.add_(grads[i]);
  }
  return e->graph->outputs().front();
}

}  // namespace kg::train
