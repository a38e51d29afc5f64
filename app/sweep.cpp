#include "sweep.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <thread>

#include <torch/cuda.h>

#include "cli.h"
#include "config/sweep.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/run_lock.h"
#include "core/strings.h"
#include "jobs/sweep.h"
#include "launch.h"

namespace fs = std::filesystem;

namespace kg::app {
namespace {

volatile sig_atomic_t sweep_signal = 0;
void on_sweep_signal(int sig) { sweep_signal = sig; }

int cpu_count() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

// Starts this binary with `args`, stdout and stderr appended to `log`, in its own process group, with
// SIGTERM as its parent-death signal; `gpu` >= 0 pins it to that GPU.
pid_t start_run(const std::vector<std::string>& args, const std::string& log, int gpu) {
  const pid_t parent = ::getpid();
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  KG_CHECK(fd >= 0, DataError, "cannot open ", log, ": ", std::strerror(errno));
  std::vector<std::string> all{"kgtrain"};
  all.insert(all.end(), args.begin(), args.end());
  const std::vector<char*> argv = c_pointers(all);
  // The child's environment, built before fork: only async-signal-safe calls may follow it.
  std::vector<std::string> pinned;
  if (gpu >= 0) pinned.push_back("CUDA_VISIBLE_DEVICES=" + std::to_string(gpu));
  std::vector<std::string> env = environment_with(pinned);
  const std::vector<char*> envp = c_pointers(env);
  const char* exe = executable().c_str();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fd);
    throw DeviceError("sweep: fork failed: " + std::string(std::strerror(errno)));
  }
  if (pid == 0) {  // async-signal-safe calls only
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(kExitSigterm);  // the sweep died before prctl
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execve(exe, argv.data(), envp.data());
    ::_exit(kExitDevice);
  }
  ::setpgid(pid, pid);
  ::close(fd);
  return pid;
}

std::string describe(const jobs::SweepResult& r) {
  std::string s = r.status;
  if (r.value)
    s += ": " + r.metric + " " + format_significant(*r.value, 5) + " (epoch " + std::to_string(r.best_epoch) + ")";
  return s + ", " + format_significant(r.wall_s, 4) + " s";
}

// The manifest of a new sweep: the product of the swept words, every run validated first.
jobs::SweepManifest plan_sweep(const SweepRequest& r) {
  const config::SweepSpec spec = config::parse_sweep(r.words);
  jobs::SweepManifest m;
  m.fixed = spec.fixed;
  bool threads_given = false;
  for (auto& w : r.words) threads_given = threads_given || starts_with(w, "device.threads=");
  if (r.jobs > 1 && !threads_given)  // CPU threads split between the runs at once
    m.fixed.push_back("device.threads=" + std::to_string(std::max(1, cpu_count() / r.jobs)));
  const auto runs = spec.runs();
  for (size_t i = 0; i < runs.size(); ++i) {
    char dir[32];
    std::snprintf(dir, sizeof dir, "run_%03zu", i);
    m.runs.push_back({static_cast<int>(i), runs[i], dir});
  }
  return m;
}

std::vector<std::string> run_words(const jobs::SweepManifest& m, const jobs::SweepRun& run) {
  std::vector<std::string> w = m.fixed;
  w.insert(w.end(), run.overrides.begin(), run.overrides.end());
  return w;
}

// The fit command line of `run`: --resume where it has checkpoints, else a fresh start in its (emptied) folder.
std::vector<std::string> fit_args(const SweepRequest& r, const jobs::SweepManifest& m, const jobs::SweepRun& run,
                                  const std::string& run_dir) {
  std::vector<std::string> args{"fit"};
  const auto words = run_words(m, run);
  args.insert(args.end(), words.begin(), words.end());
  args.insert(args.end(), r.run_flags.begin(), r.run_flags.end());
  if (fs::exists(fs::path(run_dir) / "checkpoints")) {
    args.insert(args.end(), {"--resume", run_dir});
  } else {
    discard_directory(run_dir);  // a start killed before its first checkpoint: begin again
    args.insert(args.end(), {"--run-dir", run_dir});
  }
  make_directories(run_dir);
  return args;
}

}  // namespace

int run_sweep(const SweepRequest& r) {
  KG_CHECK(r.jobs >= 1, UsageError, "--jobs ", r.jobs, ": expected at least 1");
  jobs::SweepManifest m;
  std::string dir = r.resume.empty() ? r.sweep_dir : r.resume;
  if (!r.resume.empty()) {
    const std::string path = (fs::path(r.resume) / "sweep.json").string();
    KG_CHECK(fs::exists(path), UsageError, "--resume ", r.resume,
             ": not a sweep folder (no sweep.json); a single run continues with kgtrain fit --resume RUN_DIR");
    m = jobs::SweepManifest::from_json(nlohmann::json::parse(read_file(path), nullptr, false), path);
    lock_run_dir(r.resume, "fit -m");  // one sweep process per sweep folder
  } else {
    m = plan_sweep(r);
  }
  // Every run's recipe is checked before any starts: a typo in the third value fails now, not in an hour.
  session::Session first;
  for (auto& run : m.runs) {
    auto o = with_context("sweep run " + run.dir + " (" + join(run.overrides, " ") + ")",
                          [&] { return r.resolve(run_words(m, run)); });
    if (run.index == m.runs.front().index) first = o;
  }
  if (r.dry_run) {
    std::cout << "sweep: " << m.runs.size() << " runs (--jobs " << r.jobs << ")"
              << (m.fixed.empty() ? "" : "; every run: " + join(m.fixed, " ")) << "\n";
    for (auto& run : m.runs) std::cout << "  " << run.dir << "  " << join(run.overrides, " ") << "\n";
    return kExitOk;
  }
  if (r.resume.empty()) {
    if (dir.empty()) {
      first.command = "sweep";
      first.run_dir.clear();
      dir = session::prepare_run_dir(first);
    } else {
      KG_CHECK(!fs::exists(fs::path(dir) / "sweep.json"), UsageError, "--run-dir ", dir,
               " already holds a sweep: continue it with kgtrain fit -m --resume ", dir);
      make_directories(dir);
      lock_run_dir(dir, "fit -m");
    }
    write_file_atomic((fs::path(dir) / "sweep.json").string(), m.to_json().dump(2) + "\n");
  }
  const std::string csv = (fs::path(dir) / "sweep.csv").string();
  std::vector<jobs::SweepResult> results;
  for (auto& run : m.runs) results.push_back(jobs::read_sweep_result((fs::path(dir) / run.dir).string()));
  jobs::write_sweep_csv(csv, m, results);

  struct sigaction sa {};
  sa.sa_handler = on_sweep_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  const int gpus = static_cast<int>(torch::cuda::is_available() ? torch::cuda::device_count() : 0);
  std::vector<size_t> pending;
  for (size_t i = 0; i < m.runs.size(); ++i)
    if (!jobs::sweep_run_done(results[i])) pending.push_back(i);
  if (!r.quiet)
    std::cerr << "sweep " << dir << ": " << m.runs.size() << " runs, " << m.runs.size() - pending.size()
              << " already done, --jobs " << r.jobs << "\n";
  std::map<pid_t, std::pair<size_t, int>> running;  // pid -> (run, slot)
  std::vector<bool> slot_busy(static_cast<size_t>(r.jobs), false);
  size_t next = 0;
  int failure = 0;
  bool forwarded = false;
  const auto t0 = std::chrono::steady_clock::now();
  while (next < pending.size() || !running.empty()) {
    if (sweep_signal && !forwarded) {  // each run saves at its step boundary and exits 130/143
      for (auto& [pid, _] : running) ::kill(pid, sweep_signal);
      forwarded = true;
    }
    while (!sweep_signal && next < pending.size() && running.size() < static_cast<size_t>(r.jobs)) {
      const size_t i = pending[next++];
      const auto& run = m.runs[i];
      const std::string run_dir = (fs::path(dir) / run.dir).string();
      const auto args = fit_args(r, m, run, run_dir);
      int slot = 0;
      while (slot_busy[static_cast<size_t>(slot)]) ++slot;
      slot_busy[static_cast<size_t>(slot)] = true;
      const pid_t pid = start_run(args, (fs::path(run_dir) / "fit.log").string(), gpus > 1 ? slot % gpus : -1);
      running[pid] = {i, slot};
      if (!r.quiet) std::cerr << "  start " << run.dir << "  " << join(run.overrides, " ") << "\n";
    }
    int status = 0;
    const pid_t done = ::waitpid(-1, &status, WNOHANG);
    if (done <= 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    auto it = running.find(done);
    if (it == running.end()) continue;
    const auto [i, slot] = it->second;
    running.erase(it);
    slot_busy[static_cast<size_t>(slot)] = false;
    auto& res = results[i];
    res = jobs::read_sweep_result((fs::path(dir) / m.runs[i].dir).string());
    res.exit_code = exit_code_of(status);
    if (res.exit_code != kExitOk && res.status != "interrupted") {
      res.status = "failed";
      if (failure == 0) failure = res.exit_code;
    }
    jobs::write_sweep_csv(csv, m, results);
    if (!r.quiet)
      std::cerr << "  done  " << m.runs[i].dir << "  " << describe(res) << " (exit " << res.exit_code << ", log "
                << m.runs[i].dir << "/fit.log)\n";
  }
  std::cout << jobs::sweep_table(m, results);
  size_t completed = 0;
  for (auto& res : results) completed += jobs::sweep_run_done(res);
  std::cout << "sweep: " << completed << " of " << m.runs.size() << " runs completed in "
            << format_significant(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 4)
            << " s; sweep.csv in " << dir << "\n";
  if (sweep_signal) {
    std::cout << "stopped: continue with kgtrain fit -m --resume " << dir << "\n";
    return sweep_signal == SIGTERM ? kExitSigterm : kExitSigint;
  }
  return failure;
}

}  // namespace kg::app
