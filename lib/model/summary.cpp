#include "model/summary.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <unordered_set>
#include <utility>

#include <ATen/Context.h>
#include <ATen/record_function.h>
#include <c10/core/Storage.h>
#include <torch/torch.h>

#include "core/error.h"
#include "model/model.h"

namespace kg::model {
namespace {

// Activations are measured at this batch and scaled: BatchNorm refuses one sample per channel in
// training mode (the head's BatchNorm1d sees [1, C]), and two samples keep the pass cheap.
constexpr int64_t kActivationBatch = 2;

enum class OpKind { none, conv, linear, addmm, mm, bmm, matmul };

OpKind op_kind(const char* name) {
  if (!name || std::strncmp(name, "aten::", 6) != 0) return OpKind::none;
  const char* n = name + 6;
  if (!std::strcmp(n, "convolution") || !std::strcmp(n, "_convolution")) return OpKind::conv;
  if (!std::strcmp(n, "linear")) return OpKind::linear;
  if (!std::strcmp(n, "addmm")) return OpKind::addmm;
  if (!std::strcmp(n, "mm")) return OpKind::mm;
  if (!std::strcmp(n, "bmm")) return OpKind::bmm;
  if (!std::strcmp(n, "matmul")) return OpKind::matmul;
  return OpKind::none;
}

// int[] arguments arrive as int lists; LibTorch 2.x's SymInt[] ones as int lists too when concrete
// (always, in eager mode), so a generic list walk serves both versions.
std::vector<int64_t> int_list(const c10::IValue& v) {
  if (v.isIntList()) return v.toIntVector();
  std::vector<int64_t> out;
  if (v.isList())
    for (const c10::IValue& e : v.toListRef()) out.push_back(e.isInt() ? e.toInt() : 0);
  return out;
}
int64_t nth(const std::vector<int64_t>& v, size_t i, int64_t fallback) {
  if (v.empty()) return fallback;
  return i < v.size() ? v[i] : v[0];  // a single value applies to every spatial dimension
}
int64_t prod(c10::IntArrayRef s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

// aten::convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
// (aten::_convolution starts the same). Weight [Cout, Cin/g, k...] (transposed: [Cin, Cout/g, k...]):
// every output position of a sample costs weight.numel() MACs (transposed: every input position).
int64_t conv_macs(c10::ArrayRef<const c10::IValue> in) {
  if (in.size() < 9 || !in[0].isTensor() || !in[1].isTensor()) return 0;
  const at::Tensor& x = in[0].toTensor();
  const at::Tensor& w = in[1].toTensor();
  const int64_t sd = w.dim() - 2;  // spatial dimensions
  if (sd < 1 || x.dim() < sd + 1) return 0;
  const int64_t n = x.dim() == w.dim() ? x.size(0) : 1;  // unbatched input [C, spatial...]
  const int64_t first = x.dim() - sd;
  const bool transposed = in[6].isBool() && in[6].toBool();
  if (transposed) return n * prod(x.sizes(), static_cast<size_t>(first), static_cast<size_t>(x.dim())) * w.numel();
  auto stride = int_list(in[3]), padding = int_list(in[4]), dilation = int_list(in[5]);
  int64_t positions = 1;
  for (int64_t i = 0; i < sd; ++i) {
    const auto d = static_cast<size_t>(i);
    const int64_t k = w.size(2 + i);
    const int64_t out =
        (x.size(first + i) + 2 * nth(padding, d, 0) - nth(dilation, d, 1) * (k - 1) - 1) / nth(stride, d, 1) + 1;
    positions *= std::max<int64_t>(out, 0);
  }
  return n * positions * w.numel();
}

// aten::matmul's broadcasting rules (torch.matmul docs): 1-D operands gain and lose a dimension.
int64_t matmul_macs(const at::Tensor& a, const at::Tensor& b) {
  if (a.dim() == 0 || b.dim() == 0) return 0;
  if (b.dim() == 1) return a.numel();  // [..., n, k] x [k]
  if (a.dim() == 1) return b.numel();  // [k] x [..., k, m]
  const int64_t n = a.size(-2), k = a.size(-1), m = b.size(-1);
  const int64_t da = a.dim() - 2, db = b.dim() - 2, nb = std::max(da, db);
  int64_t batches = 1;
  for (int64_t i = 0; i < nb; ++i) {
    const int64_t ia = i - (nb - da), ib = i - (nb - db);
    const int64_t sa = ia >= 0 ? a.size(ia) : 1, sb = ib >= 0 ? b.size(ib) : 1;
    batches *= std::max(sa, sb);
  }
  return batches * n * k * m;
}

int64_t macs_of(OpKind kind, c10::ArrayRef<const c10::IValue> in) {
  auto tensor = [&](size_t i) -> const at::Tensor* {
    return i < in.size() && in[i].isTensor() && in[i].toTensor().defined() ? &in[i].toTensor() : nullptr;
  };
  switch (kind) {
    case OpKind::conv:
      return conv_macs(in);
    case OpKind::linear: {  // input [..., in], weight [out, in]
      auto* x = tensor(0);
      auto* w = tensor(1);
      return x && w && w->dim() == 2 ? x->numel() * w->size(0) : 0;
    }
    case OpKind::addmm: {  // bias, [n, k], [k, m]
      auto *a = tensor(1), *b = tensor(2);
      return a && b && a->dim() == 2 && b->dim() == 2 ? a->size(0) * a->size(1) * b->size(1) : 0;
    }
    case OpKind::mm: {
      auto *a = tensor(0), *b = tensor(1);
      return a && b && a->dim() == 2 && b->dim() == 2 ? a->size(0) * a->size(1) * b->size(1) : 0;
    }
    case OpKind::bmm: {
      auto *a = tensor(0), *b = tensor(1);
      return a && b && a->dim() == 3 && b->dim() == 3 ? a->size(0) * a->size(1) * a->size(2) * b->size(2) : 0;
    }
    case OpKind::matmul: {
      auto *a = tensor(0), *b = tensor(1);
      return a && b ? matmul_macs(*a, *b) : 0;
    }
    case OpKind::none:
      break;
  }
  return 0;
}

// What the callbacks accumulate on the measuring thread.
struct Tracker {
  bool track_outputs = false;
  int depth = 0;       // operators open on this thread
  int flop_depth = 0;  // counted operators open: their inner products are part of them
  int64_t macs = 0;
  // Storages of op outputs, each once. Weak references keep the StorageImpl objects (not their data)
  // alive, so an address is never reused within one pass and liveness can be asked afterwards.
  std::unordered_set<const c10::StorageImpl*> seen_any, seen_top;
  std::vector<c10::weak_intrusive_ptr<c10::StorageImpl>> outputs;
  int64_t top_level_bytes = 0;

  void exclude(const at::Tensor& t) {  // parameters, buffers, the input batch
    if (!t.defined() || !t.has_storage()) return;
    seen_any.insert(t.storage().unsafeGetStorageImpl());
    seen_top.insert(t.storage().unsafeGetStorageImpl());
  }
  void record(const at::Tensor& t, bool top) {
    if (!t.defined() || !t.has_storage()) return;
    const c10::Storage& s = t.storage();
    if (seen_any.insert(s.unsafeGetStorageImpl()).second) outputs.push_back(s.getWeakStorageImpl());
    if (top && seen_top.insert(s.unsafeGetStorageImpl()).second) top_level_bytes += static_cast<int64_t>(s.nbytes());
  }
  void record(const c10::IValue& v, bool top) {
    if (v.isTensor())
      record(v.toTensor(), top);
    else if (v.isTensorList())
      for (const at::Tensor& t : v.toTensorVector()) record(t, top);
    else if (v.isList())
      for (const c10::IValue& e : v.toListRef()) record(e, top);
    else if (v.isTuple())
      for (const c10::IValue& e : v.toTupleRef().elements()) record(e, top);
  }
  // Sizes are read now, not when recorded: an inner op may return an empty buffer that a later one
  // resizes in place (the slow convolution path does).
  int64_t held_bytes() const {
    int64_t n = 0;
    for (auto& weak : outputs)
      if (auto strong = weak.lock()) n += static_cast<int64_t>(strong->nbytes());
    return n;
  }
};

thread_local Tracker* t_tracker = nullptr;

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  Tracker* t = t_tracker;
  if (!t) return nullptr;
  ++t->depth;
  const OpKind k = op_kind(fn.name());
  if (k != OpKind::none) {
    if (t->flop_depth == 0) t->macs += macs_of(k, fn.inputs());
    ++t->flop_depth;
  }
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  Tracker* t = t_tracker;
  if (!t) return;
  --t->depth;
  if (op_kind(fn.name()) != OpKind::none) --t->flop_depth;
  if (t->track_outputs)
    for (const c10::IValue& v : fn.outputs()) t->record(v, t->depth == 0);
}

// Installs the callbacks on this thread for its lifetime. Only FUNCTION scope: TorchScript method
// frames (TORCHSCRIPT_FUNCTION) would otherwise hide their operators from the top level.
class Tracking {
 public:
  explicit Tracking(Tracker& t) {
    KG_ASSERT(!t_tracker, "model summaries do not nest");
    t_tracker = &t;
    handle_ = at::addThreadLocalCallback(at::RecordFunctionCallback(on_start, on_end)
                                             .needsInputs(true)
                                             .needsOutputs(t.track_outputs)
                                             .scopes({at::RecordScope::FUNCTION}));
  }
  ~Tracking() {
    at::removeCallback(handle_);
    t_tracker = nullptr;
  }
  Tracking(const Tracking&) = delete;
  Tracking& operator=(const Tracking&) = delete;

 private:
  at::CallbackHandle handle_;
};

// Puts back what a measuring pass may change: buffers (BatchNorm running statistics and counters),
// every submodule's train/eval mode, and the device's default generator (dropout, drop-path).
class NetworkState {
 public:
  NetworkState(Network& net, const c10::Device& device)
      : net_(net), gen_(at::globalContext().defaultGenerator(device)) {
    torch::NoGradGuard no_grad;
    for (auto& b : net.named_buffers(true)) buffers_.emplace_back(b.value(), b.value().clone());
    // Not modules(include_self): that needs the network to own a shared_ptr to itself.
    self_training_ = net.is_training();
    for (auto& m : net.modules(/*include_self=*/false)) modes_.emplace_back(m, m->is_training());
    std::lock_guard<std::mutex> lock(gen_.mutex());
    rng_ = gen_.get_state();
  }
  ~NetworkState() {
    torch::NoGradGuard no_grad;
    for (auto& [b, saved] : buffers_) b.copy_(saved);
    // Pre-order: a parent's train() reaches its children, whose own modes are set after it.
    net_.train(self_training_);
    for (auto& [m, training] : modes_) m->train(training);
    std::lock_guard<std::mutex> lock(gen_.mutex());
    gen_.set_state(rng_);
  }
  NetworkState(const NetworkState&) = delete;
  NetworkState& operator=(const NetworkState&) = delete;

 private:
  Network& net_;
  bool self_training_ = true;
  at::Generator gen_;
  at::Tensor rng_;
  std::vector<std::pair<at::Tensor, at::Tensor>> buffers_;
  std::vector<std::pair<std::shared_ptr<torch::nn::Module>, bool>> modes_;
};

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace

int64_t count_macs(const std::function<void()>& fn) {
  Tracker t;
  {
    Tracking on(t);
    fn();
  }
  return t.macs;
}

ModelSummary summarize(Network& net, int64_t in_chans, int64_t height, int64_t width, int64_t batch,
                       int64_t feature_dim) {
  ModelContext ctx;
  ctx.in_chans = in_chans;
  ctx.height = height;
  ctx.width = width;
  ctx.num_features = feature_dim;
  return summarize(net, ctx, batch);
}

ModelSummary summarize(Network& net, const ModelContext& ctx, int64_t batch) {
  KG_CHECK((ctx.seq_len > 0 || (ctx.in_chans > 0 && ctx.height > 0 && ctx.width > 0)) && batch > 0, UsageError,
           "model summary: expected a positive input ", describe_input(ctx), " and batch ", batch);
  ModelSummary s;
  s.input_shape = ctx.seq_len > 0 ? std::vector<int64_t>{ctx.seq_len}
                                  : std::vector<int64_t>{ctx.in_chans, ctx.height, ctx.width};
  s.feature_dim = ctx.num_features;
  s.batch = batch;
  s.channels_last = net.channels_last();
  s.grad_checkpointing = net.grad_checkpointing();

  c10::Device device = c10::kCPU;
  int64_t buffer_bytes = 0;
  for (const auto& p : net.parameters(true)) {
    device = p.device();
    s.total_params += p.numel();
    if (p.requires_grad()) s.trainable_params += p.numel();
  }
  for (const auto& b : net.buffers(true)) buffer_bytes += b.numel() * static_cast<int64_t>(b.element_size());
  s.weight_bytes = s.total_params * 4 + buffer_bytes;
  s.grad_bytes = s.trainable_params * 4;
  s.optimizer_bytes = 2 * s.trainable_params * 4;  // AdamW's exp_avg and exp_avg_sq

  const auto opts = torch::TensorOptions().device(device);
  NetworkState restore(net, device);

  {  // FLOPs: eval mode, no autograd, one image.
    net.eval();
    torch::NoGradGuard no_grad;
    const Inputs in = dummy_inputs(ctx, 1, opts);
    s.macs = count_macs([&] { net.forward(in); });
    s.gflops = 2.0 * static_cast<double>(s.macs) / 1e9;
  }
  {  // Activations: training mode with autograd at kActivationBatch, scaled linearly to `batch`.
    net.train(true);
    torch::AutoGradMode grad(true);
    const Inputs in = dummy_inputs(ctx, kActivationBatch, opts);
    Tracker t;
    t.track_outputs = true;
    for (const auto& p : net.parameters(true)) t.exclude(p);
    for (const auto& b : net.buffers(true)) t.exclude(b);
    for (const at::Tensor* x : in.fields())
      if (x->defined()) t.exclude(*x);
    at::Tensor out;
    {
      Tracking on(t);
      out = net.forward(in);
    }
    // `out` and the graph behind it are alive here: what they reference is what backward needs.
    const int64_t held = t.held_bytes();
    out = at::Tensor();
    s.activation_bytes = held * batch / kActivationBatch;
    s.activation_output_bytes = t.top_level_bytes * batch / kActivationBatch;
  }
  return s;
}

std::string count_text(int64_t n) {
  const double v = static_cast<double>(n);
  if (n >= 1000000000) return fixed(v / 1e9, 2) + "G";
  if (n >= 1000000) return fixed(v / 1e6, 2) + "M";
  if (n >= 1000) return fixed(v / 1e3, 1) + "K";
  return std::to_string(n);
}

std::string bytes_text(int64_t bytes) {
  const double v = static_cast<double>(bytes);
  if (bytes >= (int64_t{1} << 30)) return fixed(v / (1 << 30), 2) + " GiB";
  if (bytes >= (int64_t{1} << 20)) return fixed(v / (1 << 20), 1) + " MiB";
  if (bytes >= (int64_t{1} << 10)) return fixed(v / (1 << 10), 1) + " KiB";
  return std::to_string(bytes) + " B";
}

std::string ModelSummary::str() const {
  std::string shape;
  for (size_t i = 0; i < input_shape.size(); ++i) shape += (i ? "x" : "") + std::to_string(input_shape[i]);
  const bool text = input_shape.size() == 1;
  if (text) shape += " tokens";
  std::string layout = channels_last ? "channels_last" : "";
  if (grad_checkpointing) layout += std::string(layout.empty() ? "" : ", ") + "grad checkpointing";
  return count_text(total_params) + " parameters (" + count_text(trainable_params) + " trainable), input " + shape +
         (feature_dim > 0 ? " + " + std::to_string(feature_dim) + " features" : "") + ", " +
         fixed(gflops, gflops < 0.1 ? 4 : 2) + (text ? " GFLOPs per text (forward)" : " GFLOPs per image (forward)") +
         (layout.empty() ? "" : " [" + layout + "]") + "\ntraining memory at batch " + std::to_string(batch) +
         ": about " + bytes_text(train_bytes()) + " = weights " + bytes_text(weight_bytes) + " + gradients " +
         bytes_text(grad_bytes) + " + " + optimizer + " state " + bytes_text(optimizer_bytes) + " + activations " +
         bytes_text(activation_bytes) + " (fp32)";
}

nlohmann::json ModelSummary::to_json() const {
  return {{"parameters", {{"total", total_params}, {"trainable", trainable_params}}},
          {"input", input_shape.size() == 1 ? nlohmann::json{{"tokens", input_shape[0]}}
                                            : nlohmann::json{{"channels", input_shape.at(0)},
                                                             {"height", input_shape.at(1)},
                                                             {"width", input_shape.at(2)}}},
          {"feature_dim", feature_dim},
          {"macs_per_image", macs},
          {"gflops_per_image", gflops},
          {"channels_last", channels_last},
          {"grad_checkpointing", grad_checkpointing},
          {"training_memory",
           {{"batch", batch},
            {"weights_bytes", weight_bytes},
            {"gradients_bytes", grad_bytes},
            {"optimizer_bytes", optimizer_bytes},
            {"activation_bytes", activation_bytes},
            {"activation_output_bytes", activation_output_bytes},
            {"activations_measured_at_batch", kActivationBatch},
            {"total_bytes", train_bytes()}}}};
}

}  // namespace kg::model
