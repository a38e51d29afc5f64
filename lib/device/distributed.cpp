#include "device/distributed.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>  // c10d's options and Work, with or without Gloo/NCCL
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
// Gloo's headers come from libgloo-dev on Debian; a PyTorch install may lack them (then CPU ranks
// cannot talk, and say so).
#if defined(USE_C10D_GLOO) && __has_include(<gloo/config.h>)
#define KG_HAVE_GLOO 1
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#include <torch/torch.h>
#if defined(KG_WITH_CUDA) && defined(USE_C10D_NCCL)
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "core/error.h"
#include "core/stop.h"
#include "device/net_route.h"
#include "device/slurm.h"

namespace kg::device {
namespace {

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

#ifdef KG_HAVE_GLOO
// Gloo's network device: GLOO_SOCKET_IFNAME when set (as in PyTorch), loopback for a local job, else the address
// this machine reaches the store's host from (device/net_route.h): the one the other nodes can reach it at, where
// the hostname's (PyTorch's default) is often 127.0.0.1.
std::shared_ptr<::gloo::transport::Device> gloo_device(const DistEnv& env) {
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  if (is_loopback(env.master_addr)) return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  const std::string local = local_address_towards(env.master_addr);
  if (!local.empty() && !is_loopback(local)) return c10d::ProcessGroupGloo::createDeviceForHostname(local);
  return c10d::ProcessGroupGloo::createDefaultDevice();
}
#endif

template <class PG>
class C10dGroup final : public ProcessGroup {
 public:
  // `comm_device`: where the backend needs tensors (NCCL: the rank's GPU; Gloo: wherever they are).
  C10dGroup(DistEnv env, std::string backend, c10::intrusive_ptr<PG> pg, std::chrono::seconds timeout,
            std::optional<c10::Device> comm_device = std::nullopt)
      : ProcessGroup(std::move(env), std::move(backend)),
        pg_(std::move(pg)),
        timeout_(timeout),
        comm_device_(comm_device) {}

  void all_reduce_sum(std::vector<at::Tensor>& tensors, int64_t bucket_bytes) override {
    guarded("all_reduce", [&] {
      const auto buckets = plan_buckets(tensors, bucket_bytes);
      std::vector<at::Tensor> flats;
      std::vector<c10::intrusive_ptr<c10d::Work>> works;
      for (auto& b : buckets) {
        std::vector<at::Tensor> parts;
        for (size_t i : b) parts.push_back(tensors[i].detach().reshape({-1}));
        std::vector<at::Tensor> one{on_comm_device(parts.size() == 1 ? parts[0].clone() : torch::cat(parts))};
        flats.push_back(one[0]);
        works.push_back(pg_->allreduce(one));
      }
      for (auto& w : works) wait(*w);
      for (size_t k = 0; k < buckets.size(); ++k) {
        int64_t off = 0;
        at::NoGradGuard ng;
        for (size_t i : buckets[k]) {
          auto& t = tensors[i];
          t.detach().copy_(flats[k].narrow(0, off, t.numel()).view(t.sizes()));
          off += t.numel();
        }
      }
    });
  }

  std::unique_ptr<Work> start_all_reduce_sum(at::Tensor flat) override {
    KG_ASSERT(flat.is_contiguous(), "start_all_reduce_sum needs a contiguous tensor");
    std::unique_ptr<Work> w;
    guarded("all_reduce", [&] {
      std::vector<at::Tensor> one{on_comm_device(flat)};
      auto work = pg_->allreduce(one);
      w = std::make_unique<Pending>(this, std::move(work), std::move(flat), one[0]);
    });
    return w;
  }

  void broadcast(std::vector<at::Tensor>& tensors, int root) override {
    guarded("broadcast", [&] {
      c10d::BroadcastOptions o;
      o.rootRank = root;
      for (auto& t : tensors) {
        if (!t.defined() || t.numel() == 0) continue;
        std::vector<at::Tensor> one{on_comm_device(t.detach().is_contiguous() ? t.detach() : t.detach().contiguous())};
        wait(*pg_->broadcast(one, o));
        if (!one[0].is_same(t)) {
          at::NoGradGuard ng;
          t.detach().copy_(one[0]);
        }
      }
    });
  }

  void barrier() override {
    guarded("barrier", [&] { wait(*pg_->barrier()); });
  }

 private:
  at::Tensor on_comm_device(const at::Tensor& t) const {
    return comm_device_ && t.device() != *comm_device_ ? t.to(*comm_device_) : t;
  }
  void wait(c10d::Work& w) { w.wait(std::chrono::duration_cast<std::chrono::milliseconds>(timeout_)); }

  template <class F>
  void guarded(const char* op, F&& f) {
    try {
      f();
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw DeviceError("distributed " + std::string(op) + " failed on rank " + std::to_string(rank()) + " of " +
                        std::to_string(world_size()) + " (" + backend_ + "): " + first_line(e.what()) +
                        ". Another rank stopped (its error is in its own output) or did not answer within "
                        "device.dist_timeout_s = " +
                        std::to_string(timeout_.count()));
    }
  }

  // A started all-reduce; the result goes back to `dst` when the backend needed a copy elsewhere.
  struct Pending final : Work {
    Pending(C10dGroup* g, c10::intrusive_ptr<c10d::Work> w, at::Tensor dst, at::Tensor buf)
        : g_(g), w_(std::move(w)), dst_(std::move(dst)), buf_(std::move(buf)) {}
    void wait() override {
      if (!w_) return;
      g_->guarded("all_reduce", [&] {
        g_->wait(*w_);
        if (!buf_.is_same(dst_)) dst_.copy_(buf_);
      });
      w_.reset();
    }
    C10dGroup* g_;
    c10::intrusive_ptr<c10d::Work> w_;
    at::Tensor dst_, buf_;
  };

  c10::intrusive_ptr<PG> pg_;
  std::chrono::seconds timeout_;
  std::optional<c10::Device> comm_device_;
};

// y = sum over ranks of x; dy/dx_r sums the gradients of every rank's loss (SyncBatchNorm).
struct AllReduceSumFn : torch::autograd::Function<AllReduceSumFn> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, int64_t group) {
    ctx->saved_data["group"] = group;
    std::vector<at::Tensor> t{x.detach().clone()};
    reinterpret_cast<ProcessGroup*>(group)->all_reduce_sum(t);
    return t[0];
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list g) {
    auto* group = reinterpret_cast<ProcessGroup*>(ctx->saved_data["group"].toInt());
    std::vector<at::Tensor> t{g[0].contiguous().clone()};
    group->all_reduce_sum(t);
    return {t[0], at::Tensor()};
  }
};

}  // namespace

std::vector<std::vector<size_t>> plan_buckets(const std::vector<at::Tensor>& tensors, int64_t bucket_bytes) {
  std::vector<std::vector<size_t>> buckets;
  std::vector<int64_t> bytes;
  std::map<std::tuple<int, int, int>, size_t> open;  // (dtype, device type, device index) -> bucket being filled
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    if (!t.defined() || t.numel() == 0) continue;
    const auto key = std::make_tuple(static_cast<int>(t.scalar_type()), static_cast<int>(t.device().type()),
                                     static_cast<int>(t.device().index()));
    const int64_t nb = t.numel() * static_cast<int64_t>(t.element_size());
    auto it = open.find(key);
    if (it == open.end() || bytes[it->second] + nb > bucket_bytes) {
      buckets.emplace_back();
      bytes.push_back(0);
      it = open.insert_or_assign(key, buckets.size() - 1).first;
    }
    buckets[it->second].push_back(i);
    bytes[it->second] += nb;
  }
  return buckets;
}

namespace detail {
int env_int(const std::map<std::string, std::string>& environ, const std::string& name, int lo, int hi,
            const char* what) {
  auto it = environ.find(name);
  if (it == environ.end() || it->second.empty())
    throw UsageError(name +
                     " is not set: a multi-process launch (WORLD_SIZE > 1) needs RANK, LOCAL_RANK, MASTER_ADDR and "
                     "MASTER_PORT too (torchrun --no-python and kgtrain fit --nproc set them)");
  size_t used = 0;
  long v = 0;
  try {
    v = std::stol(it->second, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != it->second.size() || v < lo || v > hi)
    throw UsageError(name + "=" + it->second + ": expected " + what + " (" + std::to_string(lo) + ".." +
                     std::to_string(hi) + ")");
  return static_cast<int>(v);
}

const std::string* env_value(const std::map<std::string, std::string>& environ, const std::string& name) {
  auto it = environ.find(name);
  return it == environ.end() || it->second.empty() ? nullptr : &it->second;
}
}  // namespace detail

using detail::env_int;
using detail::env_value;

DistEnv dist_env_from(const std::map<std::string, std::string>& environ) {
  DistEnv e;
  auto ws = environ.find("WORLD_SIZE");
  if (ws == environ.end() || ws->second.empty()) {  // not torchrun's (nor --nproc's): srun's tasks, or one process
    const std::string* tasks = env_value(environ, "SLURM_STEP_NUM_TASKS");
    if (tasks && *tasks != "1" && env_value(environ, "SLURM_PROCID")) return slurm_env(environ);
    return e;
  }
  if (ws->second == "1") return e;
  e.launcher = "torchrun";
  e.world_size = env_int(environ, "WORLD_SIZE", 1, 65536, "the number of processes");
  e.rank = env_int(environ, "RANK", 0, e.world_size - 1, "this process's rank, below WORLD_SIZE");
  e.local_rank = env_int(environ, "LOCAL_RANK", 0, e.world_size - 1, "this process's rank on its machine");
  e.local_world_size = environ.count("LOCAL_WORLD_SIZE") ? env_int(environ, "LOCAL_WORLD_SIZE", e.local_rank + 1,
                                                                   e.world_size, "the ranks on this machine")
                                                         : e.world_size;
  auto addr = environ.find("MASTER_ADDR");
  if (addr == environ.end() || addr->second.empty())
    throw UsageError("MASTER_ADDR is not set: a multi-process launch (WORLD_SIZE > 1) needs rank 0's address");
  e.master_addr = addr->second;
  e.master_port = env_int(environ, "MASTER_PORT", 1, 65535, "a TCP port");
  const std::string* agent = env_value(environ, "TORCHELASTIC_USE_AGENT_STORE");
  e.agent_store = agent && (*agent == "True" || *agent == "true" || *agent == "1");
  if (env_value(environ, "TORCHELASTIC_RESTART_COUNT"))
    e.restart = env_int(environ, "TORCHELASTIC_RESTART_COUNT", 0, 1 << 20, "torchrun's restart count");
  return e;
}

void ProcessGroup::broadcast_strings(std::vector<std::string>& values, int root) {
  at::Tensor lengths = torch::zeros({static_cast<int64_t>(values.size())}, torch::kLong);
  for (size_t i = 0; i < values.size(); ++i) lengths[static_cast<int64_t>(i)] = static_cast<int64_t>(values[i].size());
  std::vector<at::Tensor> t{lengths};
  broadcast(t, root);
  int64_t total = lengths.sum().item<int64_t>();
  at::Tensor bytes = torch::zeros({std::max<int64_t>(1, total)}, torch::kByte);
  if (rank() == root) {
    int64_t off = 0;
    for (auto& v : values) {
      std::memcpy(bytes.data_ptr<uint8_t>() + off, v.data(), v.size());
      off += static_cast<int64_t>(v.size());
    }
  }
  t = {bytes};
  broadcast(t, root);
  int64_t off = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    const int64_t n = lengths[static_cast<int64_t>(i)].item<int64_t>();
    values[i].assign(reinterpret_cast<const char*>(bytes.data_ptr<uint8_t>()) + off, static_cast<size_t>(n));
    off += n;
  }
}

at::Tensor ProcessGroup::differentiable_sum(const at::Tensor& t) {
  return AllReduceSumFn::apply(t, static_cast<int64_t>(reinterpret_cast<intptr_t>(this)));
}

std::shared_ptr<ProcessGroup> ProcessGroup::connect(const DistEnv& env, const c10::Device& device,
                                                    std::chrono::seconds timeout) {
  KG_ASSERT(env.active(), "ProcessGroup::connect for a single process");
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  const auto started = std::chrono::steady_clock::now();
  auto rendezvous_failed = [&](const std::string& what) {
    // Gloo names the address it could not reach: a loopback one across machines is a rank's own hostname address.
    const bool loopback_peer = !is_loopback(env.master_addr) && what.find("[127.") != std::string::npos;
    const std::string hint =
        loopback_peer
            ? std::string("a rank offered other machines a loopback address") +
                  (std::getenv("GLOO_SOCKET_IFNAME") ? " (GLOO_SOCKET_IFNAME names a loopback interface)" : "") +
                  ": set GLOO_SOCKET_IFNAME to the interface the nodes reach each other on, on every node"
        : env.agent_store ? "torchrun's agent serves this store: is it the torchrun of the PyTorch kgtrain was built "
                            "with, " +
                                std::string(TORCH_VERSION) + "? Another version's store may not answer this client"
                          : "did every rank start, and is MASTER_PORT free on rank 0's machine?";
    const auto waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return DeviceError("distributed rendezvous at " + env.master_addr + ":" + std::to_string(env.master_port) +
                       " failed on rank " + std::to_string(env.rank) + " of " + std::to_string(env.world_size) + ": " +
                       first_line(what) + " (" + hint + "; device.dist_timeout_s = " + std::to_string(timeout.count()) +
                       " s, waited " + std::to_string(static_cast<int64_t>(waited + 0.5)) + " s)");
  };
  // The rendezvous polls in short steps: a stop signal ends it at once (TCPStore's own wait ignored SIGTERM),
  // and the whole wait, connecting and meeting every rank, is one device.dist_timeout_s.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const auto left = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  };
  const auto check_stop = [&] {
    if (const int sig = stop_signal().load())
      throw Interrupted(sig == SIGTERM ? kExitSigterm : kExitSigint,
                        "stopped by signal " + std::to_string(sig) + " while waiting for the other ranks");
  };
  c10::intrusive_ptr<c10d::Store> store;
  for (;;) {
    try {
      c10d::TCPStoreOptions so;
      so.port = static_cast<std::uint16_t>(env.master_port);
      so.isServer = env.rank == 0 && !env.agent_store;
      so.numWorkers = static_cast<size_t>(env.world_size);
      so.waitWorkers = false;  // the ranks are counted below
      so.timeout = std::clamp(left(), std::chrono::milliseconds(100), std::chrono::milliseconds(1000));
      store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, so);
      if (env.agent_store)
        store = c10::make_intrusive<c10d::PrefixStore>("/worker/attempt_" + std::to_string(env.restart), store);
      break;
    } catch (const std::exception& e) {
      check_stop();
      // Rank 0's server fails at once (a port in use); the others retry until rank 0 (or the agent) is up.
      if ((env.rank == 0 && !env.agent_store) || left().count() <= 0) throw rendezvous_failed(e.what());
    }
  }
  try {
    store->setTimeout(ms);
    store->add("kgtrain/joined", 1);
    for (int64_t joined; (joined = store->add("kgtrain/joined", 0)) < env.world_size;) {
      check_stop();
      if (left().count() <= 0)
        throw rendezvous_failed("only " + std::to_string(joined) + " of " + std::to_string(env.world_size) +
                                " ranks came");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw rendezvous_failed(e.what());
  }
  try {
#if defined(KG_WITH_CUDA) && defined(USE_C10D_NCCL)
    if (device.is_cuda()) {
      auto o = c10d::ProcessGroupNCCL::Options::create();
      o->timeout = ms;
      auto pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, env.rank, env.world_size, o);
      return std::make_shared<C10dGroup<c10d::ProcessGroupNCCL>>(env, "nccl", pg, timeout, device);
    }
#endif
    if (device.is_cuda())
      throw DeviceError(
          "multi-process training on CUDA needs a LibTorch built with NCCL (USE_C10D_NCCL); this build has Gloo only");
#ifdef KG_HAVE_GLOO
    auto o = c10d::ProcessGroupGloo::Options::create(ms);
    o->devices.push_back(gloo_device(env));
    auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(c10::make_intrusive<c10d::PrefixStore>("kgtrain", store),
                                                          env.rank, env.world_size, o);
    return std::make_shared<C10dGroup<c10d::ProcessGroupGloo>>(env, "gloo", pg, timeout);
#else
    throw DeviceError(
        "multi-process training on the CPU needs LibTorch's Gloo backend and its headers (Debian: libgloo-dev); "
        "this build has neither");
#endif
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw rendezvous_failed(e.what());  // the group connects to every other rank: a missing one times out here
  }
}

}  // namespace kg::device
