// Batches made straight from a table's rows, without the image pipeline: what a modality other than images supplies
// (session/modality.h: Modality::collator; today text's token ids, data/text_inputs.h). The loader asks it for each
// batch when it has one, and prediction asks it for an order that pads little.
#pragma once
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "model/inputs.h"

namespace kg::data {

// A sample is what the model sees once: a table row, or with text's sliding windows (data.stride) one of a row's
// windows. The loader orders, shuffles, groups and batches samples; targets and features come from each sample's row.
class Collator {
 public:
  virtual ~Collator() = default;
  // The samples of table rows `rows`, each row's consecutive and in order; `rows` itself by default.
  virtual std::vector<int64_t> samples(const std::vector<int64_t>& rows) const { return rows; }
  // The table row of sample `s`, and its place among that row's samples (0 for the first).
  virtual int64_t row_of(int64_t s) const { return s; }
  virtual int64_t window_of(int64_t) const { return 0; }
  // data.window_pool when a row can have several samples ("mean" or "max"), else "": how prediction combines a
  // row's outputs (train/window_pool.h).
  virtual std::string window_pool() const { return ""; }
  // The batch of samples `samples` (in pinned memory when `pin_memory`).
  virtual model::Inputs batch(const std::vector<int64_t>& samples, bool pin_memory) const = 0;
  // data.group_by_length: `order` (samples) regrouped into batches of `batch_size` similar ones; as it is by default.
  virtual std::vector<int64_t> grouped(std::vector<int64_t> order, int64_t batch_size) const { return order; }
  // The positions of `rows` in the order prediction batches them (text: longest first); as they are by default.
  virtual std::vector<size_t> prediction_order(const std::vector<int64_t>& rows) const {
    std::vector<size_t> order(rows.size());
    std::iota(order.begin(), order.end(), size_t{0});
    return order;
  }
  // The batch's targets when the collator makes them (masked-language modelling: the masked tokens' ids, from the
  // batch `made` that batch() returned for `rows`); undefined: the table's labels.
  virtual at::Tensor targets(const std::vector<int64_t>& /*rows*/, const model::Inputs& /*made*/) const { return {}; }
  // One log line: what was made and from where ("tokens: 12 % of rows truncated at 256 ...").
  virtual std::string describe() const = 0;
};

}  // namespace kg::data
