#include <filesystem>

#include "config/resolve.h"

namespace kg::config {

std::string detect_environment(const std::map<std::string, std::string>& environ,
                               const std::function<bool(const std::string&)>& path_exists) {
  if (environ.count("KAGGLE_KERNEL_RUN_TYPE")) return "kaggle";
  bool kaggle_input = path_exists ? path_exists("/kaggle/input") : [] {
    std::error_code ec;
    return std::filesystem::exists("/kaggle/input", ec);
  }();
  if (kaggle_input) return "kaggle";
  // Older Colab runtimes set only COLAB_GPU.
  if (environ.count("COLAB_RELEASE_TAG") || environ.count("COLAB_GPU")) return "colab";
  return "local";
}

}  // namespace kg::config
