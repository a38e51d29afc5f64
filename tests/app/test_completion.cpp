// `kgtrain completion bash`: the generated script, sourced in a real bash, completes commands, each
// command's flags, recipe keys and component names (bash's default word breaks at '=' included).
#include <catch2/catch.hpp>

#include "support/fixtures.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

// COMPREPLY for a command line typed up to its end, split into words as bash would (`words`, cword).
std::string complete(const std::string& line, const std::string& words, int cword) {
  const std::string script = std::string("source <('") + KGTRAIN_BINARY + "' completion bash); COMP_LINE='" + line +
                             "'; COMP_POINT=${#COMP_LINE}; COMP_WORDS=(" + words +
                             "); COMP_CWORD=" + std::to_string(cword) +
                             "; _kgtrain; printf '%s\\n' \"${COMPREPLY[@]}\"";
  auto r = kg::test::run_shell("cd /tmp && bash -c \"$(cat <<'KG_EOF'\n" + script + "\nKG_EOF\n)\"");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return "\n" + r.output;
}

}  // namespace

TEST_CASE("bash completion: commands, flags, recipe keys and names", "[integration][app]") {
  CHECK(complete("kgtrain fi", "kgtrain fi", 1) == "\nfit\n");
  const auto inter = complete("kgtrain interpret --ca", "kgtrain interpret --ca", 2);
  CHECK(inter.find("\n--cam\n") != std::string::npos);
  CHECK(inter.find("\n--cam-n\n") != std::string::npos);
  CHECK(complete("kgtrain fit --mul", "kgtrain fit --mul", 2) == "\n--multirun\n");
  CHECK(complete("kgtrain fit r.toml optim.nam", "kgtrain fit r.toml optim.nam", 3).find("\noptim.name=\n") !=
        std::string::npos);
  CHECK(complete("kgtrain fit r.toml log.log", "kgtrain fit r.toml log.log", 3).find("\nlog.loggers=\n") !=
        std::string::npos);
  // bash splits "optim.name=ad" into optim.name, =, ad: the reply is the value alone.
  const auto names = complete("kgtrain fit r.toml optim.name=ad", "kgtrain fit r.toml optim.name = ad", 5);
  CHECK(names.find("\nadamw\n") != std::string::npos);
  CHECK(names.find("optim.name") == std::string::npos);
  CHECK(complete("kgtrain fit r.toml device.precision=b", "kgtrain fit r.toml device.precision = b", 5) == "\nbf16\n");
}

TEST_CASE("completion: zsh loads the bash function, other shells exit 2", "[integration][app]") {
  auto zsh = kg::test::run_kgtrain({"completion", "zsh"});
  CHECK(zsh.exit_code == 0);
  CHECK(zsh.output.rfind("autoload -U +X bashcompinit && bashcompinit\n", 0) == 0);
  auto fish = kg::test::run_kgtrain({"completion", "fish"});
  CHECK(fish.exit_code == 2);
  CHECK(fish.output.find("expected bash or zsh") != std::string::npos);
}

}  // namespace KG_UNITY_ID
}  // namespace
