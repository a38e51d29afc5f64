// Metrics accumulate over batches of (probabilities, targets) and report one number.
#pragma once
#include <memory>
#include <string>

#include <ATen/core/Tensor.h>

#include "core/registry.h"

namespace kg::metric {

class Metric {
 public:
  virtual ~Metric() = default;
  virtual void reset() = 0;
  // probs [N, K] float; targets [N] int64 class indices.
  virtual void update(const at::Tensor& probs, const at::Tensor& targets) = 0;
  virtual double compute() const = 0;
  virtual bool higher_is_better() const = 0;
};
using MetricPtr = std::unique_ptr<Metric>;

struct MetricContext {
  int64_t num_classes = 0;
};

using MetricRegistry = Registry<MetricPtr(const MetricContext&)>;
MetricRegistry& metric_registry();

// Builds a metric by name with its default options.
MetricPtr create(const std::string& name, const MetricContext& ctx);

}  // namespace kg::metric
