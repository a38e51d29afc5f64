#include "cli.h"

#include <CLI/CLI.hpp>
#include <c10/util/Exception.h>

#include <cstdlib>
#include <iostream>

#include "build_info.h"
#include "cli_checks.h"
#include "command.h"
#include "config/registry.h"
#include "config/sections.h"
#include "core/error.h"
#include "data/image_io.h"
#include "device/compat.h"
#include "device/device.h"
#include "device/math_libs.h"

namespace kg::app {
namespace {

// The LibTorch this process loaded (a wheel runs on whatever torch its launcher found), and the one it was compiled
// against when they differ.
std::string libtorch_line() {
  const std::string built = compat::torch_version(), loaded = device::math_libs().torch_version;
  if (loaded.empty()) return "LibTorch " + built;
  if (loaded == built) return "LibTorch " + device::torch_build_name();  // "2.11.0+cu130": its CUDA build too
  return "LibTorch " + device::torch_build_name() + " (loaded at run time; built against " + built + ")";
}

std::string version_text() {
  const std::string cv = data::opencv_version();
  std::string s =
      std::string("kgtrain ") + KGTRAIN_VERSION + "\n" + libtorch_line() + "\n" +
      (cv.empty() ? "OpenCV: not built (no resizing/colour/warp transforms, no PNG charts)"
                  : "OpenCV " + cv + " (core, imgproc)") +
      "\nimage formats: " + data::image_formats() + "\n";
  std::string cuda = device::cuda_build_info();
  s += cuda.empty() ? "CUDA: not built (CPU-only LibTorch)\n" : cuda + "\n";
  s += device::math_libs_text();
  if (auto w = device::reference_blas_warning(); !w.empty()) s += w + "\n";
  return s;
}

int dispatch(int argc, char** argv) {
  set_process_args(argc, argv);
  CLI::App app{"kgtrain: train, predict and ensemble image models for Kaggle competitions"};
  app.require_subcommand(0, 1);
  bool version = false;
  app.add_flag("--version", version, "print kgtrain, LibTorch, OpenCV, CUDA, BLAS/LAPACK and oneDNN versions");
  // Every registered command (app/commands/*.cpp) with its flags.
  std::vector<std::pair<CLI::App*, std::unique_ptr<Command>>> cmds;
  for (const CommandSpec* spec : commands_in_order()) {
    auto cmd = spec->make();
    CLI::App* sub = app.add_subcommand(spec->name, spec->help);
    cmd->add_flags(*sub);
    cmds.emplace_back(sub, std::move(cmd));
  }
  one_value_per_flag(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitConfig;
  }
  if (version) {
    std::cout << version_text();
    return kExitOk;
  }
  RegistryBase::check_all();
  config::check_sections();
  for (auto& [sub, cmd] : cmds)
    if (*sub) return cmd->run();
  std::cout << app.help();
  return kExitConfig;
}

}  // namespace

// "[rank 1/2] " in a multi-process job, so each line says which process failed.
std::string rank_prefix() {
  const char* rank = std::getenv("RANK");
  const char* world = std::getenv("WORLD_SIZE");
  if (!rank || !world || std::string(world).empty() || std::string(world) == "1") return "";
  return std::string("[rank ") + rank + "/" + world + "] ";
}

int run(int argc, char** argv) {
  const std::string who = rank_prefix();
  try {
    return dispatch(argc, argv);
  } catch (const Interrupted& e) {
    // Rank 0 says where the run is saved; the other ranks' outputs were scratch.
    const char* rank = std::getenv("RANK");
    if (who.empty() || !rank || std::string(rank) == "0") std::cerr << who << "error: " << e.what() << "\n";
    return e.exit_code();
  } catch (const Error& e) {
    std::cerr << who << "error: " << e.what() << "\n";
    return e.exit_code();
  } catch (const c10::Error& e) {
    std::string msg = e.what_without_backtrace();
    bool oom = msg.find("out of memory") != std::string::npos;
    std::cerr << who << "error: " << (oom ? "out of memory: " : "LibTorch runtime error: ") << msg << "\n";
    return kExitDevice;
  } catch (const std::bad_alloc&) {
    std::cerr << who << "error: out of host memory\n";
    return kExitDevice;
  } catch (const std::filesystem::filesystem_error& e) {  // a path the OS refused (a file in the way, permissions)
    std::cerr << who << "error: " << e.what() << "\n";
    return kExitData;
  } catch (const std::exception& e) {
    std::cerr << who << "internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}

}  // namespace kg::app
