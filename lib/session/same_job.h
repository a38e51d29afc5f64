// Every rank of a multi-process job runs the same thing: the same kgtrain binary (its SHA-256), LibTorch and resolved
// recipe. Nodes started by hand (two torchrun agents, an srun step over nodes with their own installs) can drift:
// another binary, a recipe edited on one node, an override typed on one command line. Checked once after the
// rendezvous, before any data is read; a difference stops every rank with exit 2, naming the key (or the version)
// and the ranks that differ.
#pragma once
#include <string>
#include <vector>

#include "config/recipe.h"
#include "device/distributed.h"

namespace kg::session {

// This process's side of the comparison: "binary kgtrain 0.9 sha256 1a2b...", "LibTorch 2.11.0", then "key = value"
// for every recipe key but those each node may set for itself (device.threads, device.name, data.num_workers,
// data.cache_max_gb: its cores, GPUs and memory).
std::vector<std::string> job_fingerprint(const config::Recipe& recipe, const std::string& binary_identity);

// The first line where `theirs` (rank 0's) and `mine` differ, as "optim.lr = 0.1 on rank 0, 0.2 here"; "" when equal.
std::string first_difference(const std::vector<std::string>& theirs, const std::vector<std::string>& mine);

// Compares every rank's fingerprint with rank 0's over `group`; ConfigError (exit 2) on every rank when any differs.
void check_same_job(device::ProcessGroup& group, const std::vector<std::string>& mine);

// "kgtrain <version> sha256 <first 16 hex digits of /proc/self/exe>".
std::string binary_identity();

}  // namespace kg::session
