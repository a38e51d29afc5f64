#include "device/slurm.h"

#include <cctype>

#include "core/error.h"

namespace kg::device {
namespace {

UsageError malformed(const std::string& var, const std::string& value, const std::string& want) {
  return UsageError(var + "=" + value + ": expected " + want + " (Slurm sets it for srun's tasks)");
}

}  // namespace

std::string slurm_first_host(const std::string& nodelist, const std::string& var) {
  const std::string want = "a Slurm node list such as node[01-04,07],gpu5";
  if (nodelist.empty()) throw malformed(var, nodelist, want);
  std::string host;
  for (size_t i = 0; i < nodelist.size(); ++i) {
    const char c = nodelist[i];
    if (c == ',') break;  // the first entry's end
    if (c != '[') {
      if (c == ']') throw malformed(var, nodelist, want);
      host += c;
      continue;
    }
    // A bracket group: its first range's first number, zero padding kept ("[01-04,07]" -> "01").
    const size_t close = nodelist.find(']', i);
    if (close == std::string::npos) throw malformed(var, nodelist, want);
    const std::string group = nodelist.substr(i + 1, close - i - 1);
    size_t n = 0;
    while (n < group.size() && std::isdigit(static_cast<unsigned char>(group[n]))) ++n;
    if (n == 0) throw malformed(var, nodelist, want);
    host += group.substr(0, n);
    i = close;
  }
  if (host.empty()) throw malformed(var, nodelist, want);
  return host;
}

std::vector<int> slurm_tasks_per_node(const std::string& spec, const std::string& var) {
  const std::string want = "tasks per node such as 2(x3),1";
  std::vector<int> out;
  size_t i = 0;
  auto number = [&]() -> long {
    const size_t start = i;
    while (i < spec.size() && std::isdigit(static_cast<unsigned char>(spec[i]))) ++i;
    if (i == start || i - start > 6) throw malformed(var, spec, want);
    return std::stol(spec.substr(start, i - start));
  };
  while (i < spec.size()) {
    const long tasks = number();
    long times = 1;
    if (i < spec.size() && spec[i] == '(') {
      if (spec.compare(i, 2, "(x") != 0) throw malformed(var, spec, want);
      i += 2;
      times = number();
      if (i >= spec.size() || spec[i] != ')') throw malformed(var, spec, want);
      ++i;
    }
    if (tasks < 1 || times < 1 || out.size() + static_cast<size_t>(times) > 65536) throw malformed(var, spec, want);
    out.insert(out.end(), static_cast<size_t>(times), static_cast<int>(tasks));
    if (i < spec.size()) {
      if (spec[i] != ',' || i + 1 == spec.size()) throw malformed(var, spec, want);
      ++i;
    }
  }
  if (out.empty()) throw malformed(var, spec, want);
  return out;
}

}  // namespace kg::device
