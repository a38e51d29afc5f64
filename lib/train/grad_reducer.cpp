#include "train/grad_reducer.h"

#include <algorithm>
#include <utility>

#include <torch/torch.h>

#include "core/error.h"

namespace kg::train {

GradReducer::GradReducer(device::ProcessGroupPtr group, int64_t bucket_bytes)
    : group_(std::move(group)), bucket_bytes_(bucket_bytes) {
  KG_ASSERT(group_ && bucket_bytes_ > 0, "GradReducer needs a process group and a bucket size");
}

GradReducer::~GradReducer() {
  // A collective still in flight (an exception left the update half done) must not outlive its buffer.
  for (auto& b : buckets_)
    if (b.work) try {
        b.work->wait();
      } catch (const std::exception&) {
      }
  remove_hooks();
}

void GradReducer::remove_hooks() {
  for (auto [i, handle] : hooks_) params_[i].remove_hook(handle);
  hooks_.clear();
}

void GradReducer::set_params(const std::vector<at::Tensor>& params) {
  // The same parameters as before (most epochs): the hooks and buckets stand.
  if (params.size() == params_.size() &&
      std::equal(params.begin(), params.end(), params_.begin(),
                 [](const at::Tensor& a, const at::Tensor& b) { return a.is_same(b); })) {
    std::lock_guard<std::mutex> lock(mu_);
    reset();
    return;
  }
  remove_hooks();
  params_ = params;
  for (auto& p : params_) KG_ASSERT(p.requires_grad(), "GradReducer: a parameter without requires_grad");
  // Last parameter first: about the order backward produces the gradients, until one backward shows it.
  std::vector<size_t> last_first;
  for (size_t k = params_.size(); k-- > 0;) last_first.push_back(k);
  plan(last_first);
  rebuilt_ = false;
  // Hooks on the bucketed parameters (plan_buckets leaves empty ones out: nothing to sum).
  for (const auto& b : buckets_)
    for (size_t i : b.params)
      hooks_.emplace_back(i, params_[i].register_hook([this, i](const at::Tensor& g) { on_grad(i, g); }));
  reset();
}

void GradReducer::plan(const std::vector<size_t>& order) {
  slots_.assign(params_.size(), Slot{});
  buckets_.clear();
  std::vector<at::Tensor> ordered;
  for (size_t k : order) ordered.push_back(params_[k]);
  for (const auto& members : device::plan_buckets(ordered, bucket_bytes_)) {
    Bucket& b = buckets_.emplace_back();
    int64_t numel = 0;
    for (size_t j : members) {
      const size_t k = order[j];
      slots_[k] = {buckets_.size() - 1, numel, false};
      b.params.push_back(k);
      numel += params_[k].numel();
    }
    b.flat = torch::empty({numel}, params_[b.params.front()].options().requires_grad(false));
  }
}

std::vector<std::vector<size_t>> GradReducer::layout() const {
  std::vector<std::vector<size_t>> out;
  for (const auto& b : buckets_) out.push_back(b.params);
  return out;
}

void GradReducer::rebuild_from_arrivals() {
  rebuilt_ = true;
  if (buckets_.empty()) return;  // nothing trainable: the same on every rank
  // The arrival order, then the parameters that got no gradient (last first): rank 0's for every rank,
  // which must agree on the buckets.
  std::vector<size_t> order = arrivals_;
  std::vector<bool> seen(params_.size(), false);
  for (size_t k : order) seen[k] = true;
  for (size_t k = params_.size(); k-- > 0;)
    if (!seen[k]) order.push_back(k);
  std::vector<int64_t> as_int(order.begin(), order.end());
  std::vector<at::Tensor> t{torch::tensor(as_int, torch::kLong).to(params_.front().device())};
  group_->broadcast(t, 0);
  const at::Tensor root = t[0].cpu();
  KG_ASSERT(root.numel() == static_cast<int64_t>(order.size()), "bucket rebuild: rank 0 ordered ", root.numel(),
            " parameters, this rank ", order.size());
  for (size_t j = 0; j < order.size(); ++j)
    order[j] = static_cast<size_t>(root[static_cast<int64_t>(j)].item<int64_t>());
  std::vector<size_t> now, wanted;
  std::vector<bool> bucketed(params_.size(), false);
  for (const auto& b : buckets_)
    for (size_t k : b.params) {
      now.push_back(k);
      bucketed[k] = true;
    }
  for (size_t k : order)
    if (bucketed[k]) wanted.push_back(k);
  if (wanted != now) plan(order);
  arrivals_.clear();
}

void GradReducer::reset() {
  for (auto& s : slots_) s.arrived = false;
  for (auto& b : buckets_) {
    b.pending = b.params.size();
    b.work.reset();
  }
  next_ = 0;
  armed_ = false;
}

void GradReducer::arm() {
  std::lock_guard<std::mutex> lock(mu_);
  reset();
  arrivals_.clear();
  armed_ = true;
  started_during_backward_ = 0;
}

void GradReducer::on_grad(size_t i, const at::Tensor& g) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!armed_ || !g.defined()) return;
  at::NoGradGuard no_grad;
  Slot& s = slots_[i];
  Bucket& b = buckets_[s.bucket];
  const auto& p = params_[i];
  at::Tensor dst = b.flat.narrow(0, s.offset, p.numel()).view(p.sizes());
  if (s.arrived) {
    // A second gradient for one parameter in one backward (it sits in two graph tasks): it adds up,
    // as in .grad, until its bucket has gone out.
    KG_ASSERT(b.work == nullptr, "a gradient for parameter ", i, " arrived after its bucket was all-reduced");
    dst.add_(g);
    return;
  }
  // The hook runs before autograd accumulates g into .grad: the bucket gets what .grad will hold.
  const at::Tensor& acc = p.grad();
  if (acc.defined())
    at::add_out(dst, acc, g);
  else
    dst.copy_(g);
  s.arrived = true;
  if (!rebuilt_) arrivals_.push_back(i);
  if (--b.pending == 0) start_ready();
}

void GradReducer::start(Bucket& b) { b.work = group_->start_all_reduce_sum(b.flat); }

void GradReducer::start_ready() {
  while (next_ < buckets_.size() && buckets_[next_].pending == 0) {
    start(buckets_[next_++]);
    ++started_during_backward_;
  }
}

void GradReducer::finish() {
  std::lock_guard<std::mutex> lock(mu_);
  KG_ASSERT(armed_, "GradReducer::finish without arm");
  at::NoGradGuard no_grad;
  for (; next_ < buckets_.size(); ++next_) {
    Bucket& b = buckets_[next_];
    for (size_t i : b.params) {
      if (slots_[i].arrived) continue;
      // No gradient in the last backward: what earlier micro-batches left in .grad, else zeros.
      const auto& p = params_[i];
      at::Tensor dst = b.flat.narrow(0, slots_[i].offset, p.numel()).view(p.sizes());
      if (p.grad().defined())
        dst.copy_(p.grad());
      else
        dst.zero_();
    }
    start(b);
  }
  const double w = static_cast<double>(group_->world_size());
  for (auto& b : buckets_) {
    b.work->wait();
    b.work.reset();
    b.flat.div_(w);
    for (size_t i : b.params) {
      auto& p = params_[i];
      if (p.grad().defined()) p.mutable_grad().copy_(b.flat.narrow(0, slots_[i].offset, p.numel()).view(p.sizes()));
    }
  }
  armed_ = false;
  if (!rebuilt_) rebuild_from_arrivals();
}

bool GradReducer::abandon() {
  std::lock_guard<std::mutex> lock(mu_);
  bool clean = next_ == 0;
  for (auto& b : buckets_)
    if (b.work) try {
        b.work->wait();  // every rank sends this bucket: let it complete before the buffer is reused
      } catch (const std::exception&) {
        clean = false;
      }
  reset();
  return clean;
}

}  // namespace kg::train
