#include "metric/metric.h"

namespace kg::metric {

MetricRegistry& metric_registry() {
  static MetricRegistry r("metric");
  return r;
}

MetricPtr create(const std::string& name, const MetricContext& ctx) {
  return metric_registry().create(name, config::Options(config::json::object(), "train.metric"), ctx);
}

}  // namespace kg::metric
