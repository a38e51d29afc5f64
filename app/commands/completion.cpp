// `kgtrain completion bash|zsh`
#include <iostream>

#include "command.h"
#include "completion.h"

namespace kg::app {
namespace {

class CompletionCommand : public Command {
 public:
  void add_flags(CLI::App& cmd) override { cmd.add_option("SHELL", shell_, "bash or zsh")->required(); }
  int run() override {
    std::cout << completion_script(shell_);
    return 0;
  }

 private:
  std::string shell_;
};

}  // namespace

KG_COMMAND(CompletionCommand, "completion", 120,
           "print a shell completion script (bash, zsh): commands, flags, recipe keys and component names; "
           "e.g. source <(kgtrain completion bash)");

}  // namespace kg::app
