// What an exception of type E says when `f` throws it, or "(no error)" when f returns: a test then checks the
// message with one assertion, and a missing error fails that assertion naming what was expected.
#pragma once
#include <functional>
#include <string>

namespace kg::test {

template <class E>
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace kg::test
