#include "data/loader.h"

#include "core/fs.h"

#include <algorithm>

#include <ATen/ATen.h>

#include "core/error.h"
#include "core/random.h"
#include "data/resident.h"
#include "data/collator.h"

namespace kg::data {

std::vector<int64_t> epoch_order(std::vector<int64_t> rows, uint64_t seed, int64_t epoch) {
  Rng rng(stream_seed(seed, 0x5348554646ULL /* "SHUFF" */, static_cast<uint64_t>(epoch)));
  for (size_t i = rows.size(); i > 1; --i) std::swap(rows[i - 1], rows[rng.below(i)]);
  return rows;
}

int64_t num_batches(int64_t rows, int64_t batch_size, bool drop_last, int64_t max_batches) {
  int64_t n = drop_last ? rows / batch_size : (rows + batch_size - 1) / batch_size;
  if (drop_last && n == 0 && rows > 0) n = 1;  // a tiny set still trains on its one short batch
  return max_batches >= 0 ? std::min(n, max_batches) : n;
}

std::vector<int64_t> shard_order(const std::vector<int64_t>& order, int64_t batch_size, bool drop_last, int rank,
                                 int count, int64_t* batches) {
  KG_ASSERT(count >= 1 && rank >= 0 && rank < count && batch_size > 0, "shard ", rank, " of ", count);
  const int64_t n = static_cast<int64_t>(order.size());
  const int64_t global = batch_size * count;
  const int64_t g = num_batches(n, global, drop_last);
  std::vector<int64_t> out;
  for (int64_t b = 0; b < g; ++b) {
    const int64_t begin = b * global;
    const int64_t here = std::min(global, n - begin);
    const int64_t per = (here + count - 1) / count;  // batch_size for a full global batch
    for (int64_t j = 0; j < per; ++j) {
      int64_t pos = begin + rank * per + j;
      if (pos >= n) pos = (pos - n) % n;  // padding: the epoch's first samples again
      out.push_back(order[static_cast<size_t>(pos)]);
    }
  }
  *batches = g;
  return out;
}

std::vector<int64_t> shard_rows(const std::vector<int64_t>& rows, int rank, int count) {
  KG_ASSERT(count >= 1 && rank >= 0 && rank < count, "shard ", rank, " of ", count);
  std::vector<int64_t> out;
  for (size_t i = static_cast<size_t>(rank); i < rows.size(); i += static_cast<size_t>(count)) out.push_back(rows[i]);
  return out;
}

Loader::Loader(const Table& table, std::vector<int64_t> rows, const Pipeline& pipeline, LoaderOptions o)
    : table_(table), pipeline_(pipeline), o_(o) {
  if (o_.collator) rows = o_.collator->samples(rows);
  order_ = o_.shuffle ? epoch_order(std::move(rows), o_.seed, o_.epoch) : std::move(rows);
  if (o_.collator && o_.shuffle && o_.group_by_length)
    order_ = o_.collator->grouped(std::move(order_), o_.batch_size * std::max(1, o_.shard_count));
  if (o_.shard_count > 1 && !order_.empty()) {
    int64_t g = 0;
    order_ = shard_order(order_, o_.batch_size, o_.drop_last, o_.shard_rank, o_.shard_count, &g);
    num_batches_ = o_.max_batches >= 0 ? std::min(g, o_.max_batches) : g;
  } else {
    num_batches_ = num_batches(static_cast<int64_t>(order_.size()), o_.batch_size, o_.drop_last, o_.max_batches);
  }
  o_.prefetch = std::max(1, o_.prefetch);
  KG_ASSERT(o_.start_batch >= 0, "start_batch ", o_.start_batch);
  // Skipped batches are never produced: both cursors start past them (a start at or past the end yields nothing).
  next_to_make_ = next_to_give_ = std::min(o_.start_batch, num_batches_);
  slots_.resize(static_cast<size_t>(o_.prefetch));
  if (o_.resident) o_.workers = 0;
  for (int i = 0; i < o_.workers; ++i) threads_.emplace_back([this] { worker(); });
}

Loader::~Loader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

at::Tensor Loader::buffer(const std::vector<int64_t>& shape, bool u8) {
  std::lock_guard<std::mutex> lock(pool_mu_);
  for (auto& t : pool_)
    if (t.use_count() == 1 && t.storage().use_count() == 1 && t.sizes().vec() == shape &&
        (t.scalar_type() == at::kByte) == u8)
      return t;
  pool_.push_back(
      at::empty(shape, at::TensorOptions().dtype(u8 ? at::kByte : at::kFloat).pinned_memory(o_.pin_memory)));
  return pool_.back();
}

void Loader::produce(int64_t b, Batch& out) {
  const auto& g = pipeline_.geometry();
  int64_t begin = b * o_.batch_size;
  int64_t end = std::min<int64_t>(begin + o_.batch_size, static_cast<int64_t>(order_.size()));
  int64_t n = end - begin;
  out.index = b;
  const bool u8 = pipeline_.outputs_u8();
  out.rows.assign(order_.begin() + begin, order_.begin() + end);
  if (o_.collator) {
    out.inputs = o_.collator->batch(out.rows, o_.pin_memory);  // samples; their rows below
    if (at::Tensor made = o_.collator->targets(out.rows, out.inputs); made.defined()) {
      out.targets = o_.pin_memory ? made.pin_memory() : made;  // masked-language modelling: the masked tokens
      return;
    }
    out.windows.clear();
    if (!o_.collator->window_pool().empty())
      for (int64_t& s : out.rows) {
        out.windows.push_back(o_.collator->window_of(s));
        s = o_.collator->row_of(s);
      }
    fill_targets(out);
    return;
  }
  if (o_.resident) {
    out.inputs.pixels = o_.resident->batch(out.rows, pipeline_, o_.seed, o_.epoch);
    fill_targets(out);
    return;
  }
  at::Tensor& pixels = out.inputs.pixels;
  pixels = buffer({n, g.channels, g.height, g.width}, u8);
  if (u8) {
    out.norm_mean = pipeline_.device_mean();
    out.norm_std = pipeline_.device_std();
  }
  float* dst = u8 ? nullptr : pixels.data_ptr<float>();
  uint8_t* dst8 = u8 ? pixels.data_ptr<uint8_t>() : nullptr;
  const int64_t per_image = g.channels * g.height * g.width;
  for (int64_t i = 0; i < n; ++i) {
    int64_t row = out.rows[static_cast<size_t>(i)];
    // One stream per sample: the same augmentation whatever thread or batch produces it.
    Rng rng = sample_rng(o_.seed, o_.epoch, row);
    const Row& r = table_.rows[static_cast<size_t>(row)];
    // The context string is built only on failure: this loop runs once per training image.
    try {
      if (!o_.cache && pipeline_.decodes_reduced() && !(table_.pack && r.item >= 0)) {
        // A loose file straight from its bytes: a JPEG is decoded at the scale its crop needs.
        pipeline_.process_encoded(read_file(r.image), r.image, static_cast<int>(g.channels), table_.max_image_pixels,
                                  rng, u8 ? nullptr : dst + i * per_image, u8 ? dst8 + i * per_image : nullptr);
        continue;
      }
      Image img = o_.cache ? o_.cache->get(row) : Image();
      if (img.empty()) {
        img = table_.image(static_cast<size_t>(row), static_cast<int>(g.channels));
        if (o_.cache) o_.cache->put(row, img);
      }
      if (u8)
        pipeline_.process_u8(std::move(img), rng, dst8 + i * per_image);
      else
        pipeline_.process(std::move(img), rng, dst + i * per_image);
    } catch (const Error&) {
      with_context(r.where + " (id " + r.id + ")", [] { throw; });
    }
  }
  fill_targets(out);
}

void Loader::fill_targets(Batch& out) const {
  const auto n = static_cast<int64_t>(out.rows.size());
  auto gather = [&](const std::vector<float>& src, int64_t dim) {
    at::Tensor t = at::empty({n, dim}, at::kFloat);
    float* p = t.data_ptr<float>();
    for (int64_t i = 0; i < n; ++i) {
      auto from = src.begin() + static_cast<std::ptrdiff_t>(out.rows[static_cast<size_t>(i)] * dim);
      std::copy(from, from + dim, p + i * dim);
    }
    return t;
  };
  bool soft = false;  // a batch holding soft pseudo-labelled rows carries [n, K] probabilities for every row
  for (int64_t i = 0; i < n && !table_.soft.empty(); ++i)
    soft = soft || table_.is_extra(out.rows[static_cast<size_t>(i)]);
  if (soft) {
    const int64_t K = static_cast<int64_t>(table_.soft.size()) / (table_.size() - table_.extra_begin);
    out.targets = at::zeros({n, K}, at::kFloat);
    float* p = out.targets.data_ptr<float>();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t r = out.rows[static_cast<size_t>(i)];
      if (table_.is_extra(r))
        std::copy_n(table_.soft.begin() + (r - table_.extra_begin) * K, K, p + i * K);
      else
        p[i * K + table_.targets[static_cast<size_t>(r)]] = 1.0f;
    }
  } else if (!table_.targets.empty()) {
    out.targets = at::empty({n}, at::kLong);
    auto* t = out.targets.data_ptr<int64_t>();
    for (int64_t i = 0; i < n; ++i) t[i] = table_.targets[static_cast<size_t>(out.rows[static_cast<size_t>(i)])];
  } else if (!table_.values.empty()) {
    out.targets = gather(table_.values, table_.value_dim);
  }
  if (table_.feature_dim > 0) out.inputs.features = gather(table_.features, table_.feature_dim);
  if (o_.teacher.defined() && out.targets.defined()) {
    const at::Tensor hard = out.targets.dim() == 1 ? out.targets.to(at::kFloat).unsqueeze(1) : out.targets;
    const at::Tensor rows = at::tensor(out.rows, at::kLong);
    out.targets = at::cat({hard, o_.teacher.index_select(0, rows)}, 1);
  }
}

std::string Loader::window_pool() const { return o_.collator ? o_.collator->window_pool() : ""; }

Batch slice_batch(const Batch& b, int64_t start, int64_t count) {
  Batch s;
  s.index = b.index;
  s.inputs = b.inputs.narrow(start, count);
  if (b.targets.defined()) s.targets = b.targets.narrow(0, start, count);
  s.rows.assign(b.rows.begin() + start, b.rows.begin() + start + count);
  if (!b.windows.empty()) s.windows.assign(b.windows.begin() + start, b.windows.begin() + start + count);
  s.norm_mean = b.norm_mean;
  s.norm_std = b.norm_std;
  return s;
}

model::Inputs to_model_input(const Batch& b, const c10::Device& device) {
  model::Inputs in = b.inputs.to(device, /*non_blocking=*/true);
  if (!in.pixels.defined() || in.pixels.scalar_type() != at::kByte) return in;
  at::Tensor& x = in.pixels;
  x = x.to(at::kFloat).div_(255.0);
  if (!b.norm_mean.empty()) {
    const int64_t c = x.size(1);
    auto stat = [&](const std::vector<double>& v) {
      return at::tensor(std::vector<float>(v.begin(), v.end())).view({1, c, 1, 1}).to(device);
    };
    x.sub_(stat(b.norm_mean)).div_(stat(b.norm_std));
  }
  return in;
}

Image ImageCache::get(int64_t row) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = images_.find(row);
  return it == images_.end() ? Image() : it->second.clone();
}

void ImageCache::put(int64_t row, const Image& img) {
  const size_t b = img.total() * img.elemSize();
  std::lock_guard<std::mutex> lock(mu_);
  if (bytes_ + b > max_bytes_ || images_.count(row)) return;
  images_.emplace(row, img.clone());
  bytes_ += b;
}

void ImageCache::remap(const std::vector<int64_t>& new_of_old) {
  std::lock_guard<std::mutex> lock(mu_);
  std::unordered_map<int64_t, Image> kept;
  bytes_ = 0;
  for (auto& [row, img] : images_) {
    const int64_t to =
        row >= 0 && row < static_cast<int64_t>(new_of_old.size()) ? new_of_old[static_cast<size_t>(row)] : -1;
    if (to < 0) continue;
    bytes_ += img.total() * img.elemSize();
    kept.emplace(to, std::move(img));
  }
  images_ = std::move(kept);
}

size_t ImageCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

size_t ImageCache::count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return images_.size();
}

void Loader::worker() {
  for (;;) {
    int64_t b;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // Bounded prefetch: never more than `prefetch` batches ahead of the consumer.
      cv_.wait(lock,
               [&] { return stop_ || next_to_make_ >= num_batches_ || next_to_make_ < next_to_give_ + o_.prefetch; });
      if (stop_ || next_to_make_ >= num_batches_) return;
      b = next_to_make_++;
    }
    auto batch = std::make_unique<Batch>();
    try {
      produce(b, *batch);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = std::current_exception();
      stop_ = true;
      cv_.notify_all();
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      slots_[static_cast<size_t>(b % o_.prefetch)] = std::move(batch);
    }
    cv_.notify_all();
  }
}

bool Loader::next(Batch& out) {
  if (next_to_give_ >= num_batches_) return false;
  if (threads_.empty()) {
    produce(next_to_give_++, out);
    return true;
  }
  std::unique_lock<std::mutex> lock(mu_);
  auto& slot = slots_[static_cast<size_t>(next_to_give_ % o_.prefetch)];
  cv_.wait(lock, [&] { return error_ || (slot && slot->index == next_to_give_); });
  if (error_) std::rethrow_exception(error_);
  out = std::move(*slot);
  slot.reset();
  ++next_to_give_;
  lock.unlock();
  cv_.notify_all();
  return true;
}

}  // namespace kg::data
