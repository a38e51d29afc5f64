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

class Collator {
 public:
  virtual ~Collator() = default;
  // The batch of table rows `rows` (in pinned memory when `pin_memory`).
  virtual model::Inputs batch(const std::vector<int64_t>& rows, bool pin_memory) const = 0;
  // data.group_by_length: `order` regrouped into batches of `batch_size` similar samples; as it is by default.
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
