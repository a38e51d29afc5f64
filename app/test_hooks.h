// The test hooks' environment variables (device/test_hooks.h says what each does), read for every command.
#pragma once
#include <map>
#include <string>

namespace kg::app {

// Sets device::test_hooks() from `environ` (all off when unset); UsageError for a malformed value.
void read_test_hooks(const std::map<std::string, std::string>& environ);

}  // namespace kg::app
