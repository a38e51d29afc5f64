// Flags declared as recipe keys are (config/flags.h): names, --help's default text, and the one check.
#include <catch2/catch.hpp>

#include "config/flags.h"
#include "core/error.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::config::json;

struct Demo {
  int64_t steps = 5;
  double scale = 0.5;
  std::vector<std::string> layouts{"nchw", "channels_last"};
  std::vector<std::string> models;
  bool dry = false;
  std::string out;
};

kg::config::Fields<Demo> demo_fields() {
  kg::config::Fields<Demo> f;
  f.field("steps", &Demo::steps, "timed steps").min(1);
  f.field("scale", &Demo::scale, "a factor").positive();
  f.field("layouts", &Demo::layouts, "layouts").choices({"nchw", "channels_last"});
  f.field("models", &Demo::models, "models");
  f.field("dry_run", &Demo::dry, "time nothing");
  f.field("out", &Demo::out, "a file");
  return f;
}

std::string problem(const Demo& d) {
  try {
    kg::config::check_flags(demo_fields(), d);
  } catch (const kg::UsageError& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("a flag's name and default text come from its key", "[unit][config]") {
  CHECK(kg::config::flag_name("grad_checkpointing") == "--grad-checkpointing");
  CHECK(kg::config::flag_name("steps") == "--steps");
  const auto f = demo_fields();
  const auto& s = f.schema();
  CHECK(kg::config::flag_default_text(s[0]) == "5");
  CHECK(kg::config::flag_default_text(s[1]) == "0.5");
  CHECK(kg::config::flag_default_text(s[2]) == "nchw,channels_last");
  CHECK(kg::config::flag_default_text(s[3]).empty());  // an empty list shows no default
  CHECK(kg::config::flag_default_text(s[4]).empty());  // a bool is a switch
  CHECK(kg::config::flag_default_text(s[5]).empty());
}

TEST_CASE("check_flags refuses a value its key refuses, naming the flag", "[unit][config]") {
  CHECK(problem(Demo{}).empty());
  Demo d;
  d.steps = 0;
  CHECK(problem(d) == "--steps: expected an integer >= 1, got 0");
  d = Demo{};
  d.scale = 0;
  CHECK(problem(d).rfind("--scale: expected a number > 0", 0) == 0);
  d = Demo{};
  d.layouts = {"nchw", "nhcw"};  // each value of a list meets the choices
  CHECK(problem(d).rfind("--layouts: expected one of nchw, channels_last, got \"nhcw\"", 0) == 0);
}

TEST_CASE("values_of reads each key's value back from the struct", "[unit][config]") {
  Demo d;
  d.steps = 7;
  d.models = {"resnet9"};
  const json v = demo_fields().values_of(d);
  CHECK(v["steps"] == 7);
  CHECK(v["models"] == json::array({"resnet9"}));
  CHECK(v["dry_run"] == false);
  CHECK(demo_fields().load(kg::config::Options(v, "test")).models == d.models);
}

}  // namespace KG_UNITY_ID
}  // namespace
