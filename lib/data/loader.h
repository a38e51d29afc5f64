// Threaded batch loader with a bounded prefetch queue. The batches it yields are a pure function of
// (seed, epoch, sample index): worker count and timing never change them.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <ATen/core/Tensor.h>

#include "data/table.h"
#include "data/transform.h"

namespace kg::data {

struct Batch {
  int64_t index = 0;             // batch number within the epoch
  at::Tensor images;             // float [B, C, H, W]
  at::Tensor targets;            // int64 [B] (undefined for unlabeled tables)
  std::vector<int64_t> rows;     // table row of each sample
};

struct LoaderOptions {
  int64_t batch_size = 64;
  bool shuffle = false;
  bool drop_last = false;
  int workers = 0;
  int prefetch = 4;
  uint64_t seed = 0;
  int64_t epoch = 0;
  int64_t max_batches = -1;      // stop after this many batches (smoke runs); -1 = all
};

// The order a shuffled epoch visits `rows` in.
std::vector<int64_t> epoch_order(std::vector<int64_t> rows, uint64_t seed, int64_t epoch);
int64_t num_batches(int64_t rows, int64_t batch_size, bool drop_last, int64_t max_batches = -1);

class Loader {
 public:
  Loader(const Table& table, std::vector<int64_t> rows, const Pipeline& pipeline, LoaderOptions o);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  int64_t size() const { return num_batches_; }
  // The next batch in order; false at the end of the epoch. Rethrows a worker's DataError.
  bool next(Batch& out);

 private:
  void worker();
  void produce(int64_t b, Batch& out) const;

  const Table& table_;
  const Pipeline& pipeline_;
  LoaderOptions o_;
  std::vector<int64_t> order_;
  int64_t num_batches_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  int64_t next_to_make_ = 0;      // next batch a worker claims
  int64_t next_to_give_ = 0;      // next batch next() returns
  std::vector<std::unique_ptr<Batch>> slots_;  // ring of prefetch slots, indexed by batch % prefetch
  std::exception_ptr error_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace kg::data
