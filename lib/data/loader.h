// Threaded batch loader with a bounded prefetch queue. The batches it yields are a pure function of
// (seed, epoch, sample index): worker count and timing never change them.
#pragma once
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <string>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "data/image.h"
#include "data/table.h"
#include "data/transform.h"
#include "model/inputs.h"

namespace kg::data {

class ResidentImages;  // data/resident.h
class Collator;        // data/collator.h

struct Batch {
  int64_t index = 0;  // batch number within the epoch
  // pixels: float [B, C, H, W], or uint8 with data.uint8_transfer (see to_model_input); features: float [B, F] from
  // data.feature_cols (undefined when none)
  model::Inputs inputs;
  // multiclass: int64 [B]; other tasks: float [B, D]; undefined when unlabeled. With LoaderOptions::teacher: float
  // [B, D + K], the targets as D float columns (a class index: D = 1) then the teacher's K logits (loss::distill).
  // Masked-language modelling (data/mlm_masking.h): int64 [B, L], the masked tokens' ids, -100 elsewhere.
  at::Tensor targets;
  std::vector<int64_t> rows;  // table row of each sample
  // With a collator's windows (text's data.stride): each sample's place among its row's windows (0 = the row's
  // first); a row's windows are consecutive in a prediction loader. Empty: one sample per row.
  std::vector<int64_t> windows;
  std::vector<double> norm_mean, norm_std;  // uint8 batches: the normalization left to the device

  int64_t size() const { return inputs.size(); }
};

// The batch's inputs on `device` as the model takes them: uint8 pixels are scaled to [0, 1] and normalized there
// (data.uint8_transfer); the rest is copied (non-blocking from pinned memory).
model::Inputs to_model_input(const Batch& b, const c10::Device& device);

// Samples [start, start + count) of `b` (views of its tensors; index and normalization kept).
Batch slice_batch(const Batch& b, int64_t start, int64_t count);

// Decoded images kept in memory after their first use (data.cache = "ram"), up to a byte cap.
// Shared by every loader of a run (epochs, folds, train and validation). Thread-safe.
class ImageCache {
 public:
  explicit ImageCache(size_t max_bytes) : max_bytes_(max_bytes) {}
  // The row's image (a clone the caller may modify), or an empty Mat when not cached.
  Image get(int64_t row) const;
  // Keeps `img` unless the cap is reached.
  void put(int64_t row, const Image& img);
  // Re-keys after rows were removed from the table: row r becomes new_of_old[r]; -1 drops it.
  void remap(const std::vector<int64_t>& new_of_old);
  size_t bytes() const;
  size_t count() const;

 private:
  size_t max_bytes_;
  mutable std::mutex mu_;
  std::unordered_map<int64_t, Image> images_;
  size_t bytes_ = 0;
};

struct LoaderOptions {
  int64_t batch_size = 64;
  bool shuffle = false;
  bool drop_last = false;
  int workers = 0;
  int prefetch = 4;
  uint64_t seed = 0;
  int64_t epoch = 0;
  int64_t max_batches = -1;     // stop after this many batches (smoke runs); -1 = all
  ImageCache* cache = nullptr;  // data.cache = "ram" (keys are table rows: one cache per table)
  bool pin_memory = false;      // page-locked batches for asynchronous host-to-GPU copies (CUDA only)
  // Resume mid-epoch: yield batches start_batch.. of this epoch's order (the earlier ones are skipped
  // without being read or decoded). size() and Batch::index still count from the epoch's first batch.
  int64_t start_batch = 0;
  // Data parallel (torch.distributed): this process's part of every global batch of
  // batch_size * shard_count samples of the epoch's order: samples [rank * batch_size, +batch_size)
  // of each. A short last global batch is split evenly, padded with the epoch's first samples (as
  // DistributedSampler pads) so every rank takes the same number of updates with equal batches.
  int shard_rank = 0, shard_count = 1;
  // data.cache = "device": images come from these resident ones, gathered and augmented on the device
  // in the consumer's thread (workers are not started); Batch::images is then float on the device.
  const ResidentImages* resident = nullptr;
  // A modality's own batches (text: the tokens, padded per batch), not the pipeline's images; with group_by_length a
  // shuffled epoch visits rows in the batches it groups (similar lengths). The loader's order is then of the
  // collator's samples of `rows` (text's windows: an epoch, its shuffle and a resume's start_batch count windows).
  const Collator* collator = nullptr;
  bool group_by_length = false;
  // loss.distill: the teacher's logits, float [table rows, K] on the CPU; each batch's targets carry their rows'
  // (Batch::targets). Undefined: none.
  at::Tensor teacher = {};
};

// The rows of `order` (an epoch's order) that rank `rank` of `count` trains on, batch by batch (see
// LoaderOptions::shard_rank), and the number of batches they make.
std::vector<int64_t> shard_order(const std::vector<int64_t>& order, int64_t batch_size, bool drop_last, int rank,
                                 int count, int64_t* batches);

// Rank `rank` of `count`'s share of an evaluation: rows[rank], rows[rank + count], ... (validation is
// sharded this way under data parallel; train::gather_predictions puts the shares back in `rows` order).
std::vector<int64_t> shard_rows(const std::vector<int64_t>& rows, int rank, int count);

// The order a shuffled epoch visits `rows` in.
std::vector<int64_t> epoch_order(std::vector<int64_t> rows, uint64_t seed, int64_t epoch);
int64_t num_batches(int64_t rows, int64_t batch_size, bool drop_last, int64_t max_batches = -1);

class Loader {
 public:
  Loader(const Table& table, std::vector<int64_t> rows, const Pipeline& pipeline, LoaderOptions o);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // Batches in the whole epoch (a start_batch does not change it).
  int64_t size() const { return num_batches_; }
  // Images per full batch, and in batch `index` (the epoch's last one may be short).
  int64_t batch_size() const { return o_.batch_size; }
  int64_t rows_in(int64_t index) const {
    const int64_t left = static_cast<int64_t>(order_.size()) - index * o_.batch_size;
    return std::max<int64_t>(0, std::min(o_.batch_size, left));
  }
  // The next batch in order; false at the end of the epoch. Rethrows a worker's DataError.
  bool next(Batch& out);
  // The collator's data.window_pool when its samples are windows of rows, else "".
  std::string window_pool() const;

 private:
  void worker();
  void produce(int64_t b, Batch& out);
  void fill_targets(Batch& out) const;  // targets and features of out.rows
  // An image buffer of this shape no batch uses any more (reused: no allocation, no page faults,
  // and no page-locking per batch), or a new one.
  at::Tensor buffer(const std::vector<int64_t>& shape, bool u8);

  const Table& table_;
  const Pipeline& pipeline_;
  LoaderOptions o_;
  std::vector<int64_t> order_;
  int64_t num_batches_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  int64_t next_to_make_ = 0;                   // next batch a worker claims
  int64_t next_to_give_ = 0;                   // next batch next() returns
  std::vector<std::unique_ptr<Batch>> slots_;  // ring of prefetch slots, indexed by batch % prefetch
  std::exception_ptr error_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
  std::mutex pool_mu_;
  std::vector<at::Tensor> pool_;  // every image buffer handed out; reusable when only the pool holds it
};

}  // namespace kg::data
