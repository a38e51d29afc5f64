// Error hierarchy: every user-facing failure is an exception carrying its exit code.
// main() alone maps them to process exit codes (docs/commands.md "Exit codes").
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace kg {

enum ExitCode : int {
  kExitOk = 0,
  kExitInternal = 1,
  kExitConfig = 2,    // usage or recipe problems, impossible requests
  kExitData = 3,      // missing/damaged inputs, images, CSVs, weight and checkpoint files
  kExitDevice = 4,    // device or runtime failures (out of memory, ...)
  kExitDiverged = 5,  // training diverged: non-finite loss/gradients (train.nan_policy = "abort")
  kExitSigint = 130,
  kExitSigterm = 143,
};

class Error : public std::runtime_error {
 public:
  Error(int exit_code, const std::string& what) : std::runtime_error(what), code_(exit_code) {}
  int exit_code() const { return code_; }

 private:
  int code_;
};

struct InternalError : Error {
  explicit InternalError(const std::string& m) : Error(kExitInternal, m) {}
};
struct UsageError : Error {
  explicit UsageError(const std::string& m) : Error(kExitConfig, m) {}
};
struct DataError : Error {
  explicit DataError(const std::string& m) : Error(kExitData, m) {}
};
struct CheckpointError : Error {
  explicit CheckpointError(const std::string& m) : Error(kExitData, m) {}
};
struct DivergedError : Error {
  explicit DivergedError(const std::string& m) : Error(kExitDiverged, m) {}
};
struct DeviceError : Error {
  explicit DeviceError(const std::string& m) : Error(kExitDevice, m) {}
};

// A signal stopped the job at a step boundary after its state was saved.
struct Interrupted : Error {
  explicit Interrupted(int signal_exit_code, const std::string& m) : Error(signal_exit_code, m) {}
};

// A recipe problem. Collects every problem found so the user fixes them all in one go.
class ConfigError : public Error {
 public:
  explicit ConfigError(std::vector<std::string> problems)
      : Error(kExitConfig, format(problems)), problems_(std::move(problems)) {}
  explicit ConfigError(const std::string& problem) : ConfigError(std::vector<std::string>{problem}) {}
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  static std::string format(const std::vector<std::string>& p) {
    if (p.size() == 1) return "recipe error: " + p[0];
    std::string s = std::to_string(p.size()) + " recipe errors:";
    for (const auto& x : p) s += "\n  - " + x;
    return s;
  }
  std::vector<std::string> problems_;
};

// Adds context as an error climbs ("while building data.augment[2] (pad_crop): ...").
template <class F>
auto with_context(const std::string& context, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const ConfigError& e) {
    std::vector<std::string> p;
    for (const auto& x : e.problems()) p.push_back(context + ": " + x);
    throw ConfigError(p);
  } catch (const Interrupted&) {
    throw;
  } catch (const DataError& e) {  // keep the type: callers and tests catch by it
    throw DataError(context + ": " + e.what());
  } catch (const CheckpointError& e) {
    throw CheckpointError(context + ": " + e.what());
  } catch (const DeviceError& e) {
    throw DeviceError(context + ": " + e.what());
  } catch (const UsageError& e) {
    throw UsageError(context + ": " + e.what());
  } catch (const Error& e) {
    throw Error(e.exit_code(), context + ": " + e.what());
  }
}

namespace detail {
template <class... A>
std::string cat(const A&... a) {
  std::ostringstream os;
  (os << ... << a);
  return os.str();
}
}  // namespace detail
}  // namespace kg

// User errors: KG_CHECK(cond, DataError, "image ", path, " is empty").
#define KG_CHECK(cond, ErrorType, ...)                            \
  do {                                                            \
    if (!(cond)) throw ErrorType(::kg::detail::cat(__VA_ARGS__)); \
  } while (0)

// Internal invariants: a failure is a kgtrain bug (exit 1).
#define KG_ASSERT(cond, ...)                                                                                  \
  do {                                                                                                        \
    if (!(cond))                                                                                              \
      throw ::kg::InternalError(                                                                              \
          ::kg::detail::cat("internal error at ", __FILE__, ":", __LINE__, ": ", #cond, " ", ##__VA_ARGS__)); \
  } while (0)
