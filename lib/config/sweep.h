// Hydra's multirun grammar on kgtrain's command-line words (`kgtrain fit -m`): an override whose value
// has a comma outside brackets and quotes sweeps (`optim.lr=1e-3,3e-4`, `model=resnet18,resnet34`), as do
// `key=range([start, ]stop[, step])` (Python's range: stop excluded; floats allowed, as Hydra) and
// `key=choice(a, b)`. `key=[a,b]`, `key='a,b'` and `key="a,b"` are single values. The runs are the product
// of the swept keys, in the order they were given, the first key changing slowest (Hydra's order).
#pragma once
#include <string>
#include <vector>

namespace kg::config {

struct SweepAxis {
  std::string key;                  // as written, with a leading + when it adds a key
  std::vector<std::string> values;  // each as an override value ("1e-3", "resnet18")
};

struct SweepSpec {
  std::vector<std::string> fixed;  // recipe files and overrides every run shares, in order
  std::vector<SweepAxis> axes;     // swept keys, in order
  // Every run's overrides ("key=value" per axis), the first axis changing slowest.
  std::vector<std::vector<std::string>> runs() const;
  size_t size() const;
};

// ConfigError (naming the word) for a malformed range()/choice(), an empty value in a list, a key swept
// twice, a grammar kgtrain does not sweep (interval(), glob(), tag()...), or more than `max_runs` runs.
SweepSpec parse_sweep(const std::vector<std::string>& words, size_t max_runs = 10000);

// The top-level comma-separated parts of `value` (brackets, braces, parentheses and quotes nest).
std::vector<std::string> split_top_level(const std::string& value);

}  // namespace kg::config
