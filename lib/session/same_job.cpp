#include "session/same_job.h"

#include <map>
#include <set>

#include <torch/torch.h>

#include "config/resolve.h"
#include "build_info.h"
#include "core/error.h"
#include "core/sha256.h"
#include "core/strings.h"
#include "device/compat.h"

namespace kg::session {
namespace {

// Keys a node sets for its own hardware: they may differ between ranks.
const std::set<std::string> kPerNode{"device.threads", "device.name", "data.num_workers", "data.cache_max_gb"};

// "optim.lr = 0.1" -> "optim.lr"; a line without " = " is its own key ("LibTorch 2.11.0" -> "LibTorch").
std::string key_of(const std::string& line) {
  const size_t eq = line.find(" = ");
  if (eq != std::string::npos) return line.substr(0, eq);
  return line.substr(0, line.find(' '));
}

}  // namespace

std::vector<std::string> job_fingerprint(const config::Recipe& recipe, const std::string& binary_identity) {
  std::vector<std::string> out{"binary " + binary_identity, std::string("LibTorch ") + compat::torch_version()};
  for (const auto& [key, entry] : recipe.tree().entries())
    if (!kPerNode.count(key)) out.push_back(key + " = " + config::to_toml_value(entry.value));
  return out;
}

std::string first_difference(const std::vector<std::string>& theirs, const std::vector<std::string>& mine) {
  std::map<std::string, std::string> a, b;
  std::vector<std::string> order;
  for (const auto& l : theirs) {
    a[key_of(l)] = l;
    order.push_back(key_of(l));
  }
  for (const auto& l : mine) {
    if (!a.count(key_of(l))) order.push_back(key_of(l));
    b[key_of(l)] = l;
  }
  auto value = [](const std::map<std::string, std::string>& m, const std::string& key) {
    auto it = m.find(key);
    if (it == m.end()) return std::string("(not set)");
    const size_t eq = it->second.find(" = ");
    return eq == std::string::npos ? it->second.substr(key.size() + 1) : it->second.substr(eq + 3);
  };
  for (const auto& key : order)
    if (!a.count(key) || !b.count(key) || a.at(key) != b.at(key))
      return key + ": " + value(a, key) + " on rank 0, " + value(b, key) + " here";
  return "";
}

void check_same_job(device::ProcessGroup& group, const std::vector<std::string>& mine) {
  std::vector<std::string> shared{join(mine, "\n")};
  group.broadcast_strings(shared, 0);
  const std::string diff = first_difference(split(shared[0], '\n'), mine);
  // Which ranks differ, summed over all of them: every rank stops, and says who.
  at::Tensor differs = torch::zeros({group.world_size()}, torch::kFloat);
  if (!diff.empty()) differs[group.rank()] = 1;
  std::vector<at::Tensor> t{differs};
  group.all_reduce_sum(t);
  std::vector<std::string> ranks;
  for (int r = 0; r < group.world_size(); ++r)
    if (differs[r].item<float>() > 0) ranks.push_back(std::to_string(r));
  if (ranks.empty()) return;
  const std::string who = "rank" + std::string(ranks.size() > 1 ? "s " : " ") + join(ranks, ", ");
  if (!diff.empty())
    throw ConfigError("this rank runs another job than rank 0: " + diff +
                      " (every rank needs the same kgtrain, LibTorch and recipe; the nodes' own device.threads, "
                      "device.name, data.num_workers and data.cache_max_gb may differ)");
  throw ConfigError(who + " of " + std::to_string(group.world_size()) +
                    " run another job than rank 0 (another kgtrain, LibTorch or recipe: their messages name the "
                    "key); stopped before training");
}

std::string binary_identity() {
  std::string id = std::string("kgtrain ") + KGTRAIN_VERSION;
  try {
    id += " sha256 " + sha256_file_hex("/proc/self/exe").substr(0, 16);
  } catch (const std::exception&) {
    id += " (its file unreadable)";
  }
  return id;
}

}  // namespace kg::session
