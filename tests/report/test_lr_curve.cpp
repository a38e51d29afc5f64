// The lr-curve chart: the lr alone, the momentum below it or in its own file, from an optim::Schedule built
// through the recipe path or from anything else with lr_at / momentum_at (fit --plot-schedule draws a Plan).
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <utility>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/fs.h"
#include "optim/schedule.h"
#include "report/lr_curve.h"
#include "support/temp_dir.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

kg::optim::SchedulePtr build(const std::string& schedule_keys) {
  auto recipe = kg::config::Recipe::validate(
      kg::config::parse_toml_string("[optim]\nlr = 0.1\n[schedule]\n" + schedule_keys, "schedule.toml"));
  return kg::optim::build_schedule(recipe, {0.1, 100, 10});
}

// Width and height from the PNG's IHDR chunk (big-endian, at bytes 16..23).
std::pair<int, int> png_size(const std::string& path) {
  const std::string b = kg::read_file(path);
  REQUIRE(b.size() > 24);
  REQUIRE(b.compare(1, 3, "PNG") == 0);
  auto be32 = [&](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(b[at + i]);
    return static_cast<int>(v);
  };
  return {be32(16), be32(20)};
}

// Not an optim::Schedule: plot_lr_curve takes anything with lr_at and momentum_at (as train::Plan has).
struct Ramp {
  double lr_at(int64_t s) const { return 0.01 * static_cast<double>(s + 1); }
  std::optional<double> momentum_at(int64_t s) const { return s < 5 ? std::optional<double>(0.9) : std::nullopt; }
};

}  // namespace

TEST_CASE("plot_lr_curve draws the lr, and the momentum below it when cycled", "[unit][schedule]") {
  kg::test::TempDir d;
  auto cosine = build("name = \"cosine\"\nwarmup_steps = 10\n");
  auto a = kg::report::plot_lr_curve(d / "cosine.png", *cosine, 100, {10});
  CHECK(a.lr_png == d / "cosine.png");
  CHECK(a.momentum_png.empty());
  CHECK(a.peak_lr == Approx(0.1));
  CHECK(png_size(d / "cosine.png") == std::make_pair(900, 560));
  auto cyc = build("name = \"one_cycle\"\n");
  auto b = kg::report::plot_lr_curve(d / "sub/one_cycle.png", *cyc, 100, {10});
  CHECK(b.momentum_png.empty());
  CHECK(png_size(d / "sub/one_cycle.png") == std::make_pair(900, 560 + 360));
}

TEST_CASE("plot_lr_curve can write the momentum to <stem>_momentum.png", "[unit][schedule]") {
  kg::test::TempDir d;
  kg::report::LrCurveOptions o;
  o.steps_per_epoch = 4;
  o.title = "learning rate: a ramp";
  o.momentum_file = true;
  auto p = kg::report::plot_lr_curve(d / "lr.png", Ramp{}, 20, o);
  CHECK(p.momentum_png == d / "lr_momentum.png");
  CHECK(p.peak_lr == Approx(0.2));
  CHECK(png_size(d / "lr.png") == std::make_pair(900, 560));
  CHECK(png_size(d / "lr_momentum.png") == std::make_pair(900, 560));

  auto cosine = build("name = \"cosine\"\n");  // no momentum: no second file
  auto q = kg::report::plot_lr_curve(d / "cos.png", *cosine, 100, o);
  CHECK(q.momentum_png.empty());
  CHECK_FALSE(std::filesystem::exists(d / "cos_momentum.png"));
}

TEST_CASE("sample_lr_curve samples every update", "[unit][schedule]") {
  auto c = kg::report::sample_lr_curve(Ramp{}, 7);
  REQUIRE(c.lr.size() == 7);
  REQUIRE(c.momentum.size() == 7);
  CHECK(c.lr[6] == Approx(0.07));
  CHECK(c.momentum[4] == 0.9);
  CHECK_FALSE(c.momentum[5].has_value());
  kg::test::TempDir d;
  auto p = kg::report::plot_lr_curve(d / "ramp.png", c, kg::report::LrCurveOptions{});
  CHECK(p.peak_lr == Approx(0.07));
  CHECK(png_size(d / "ramp.png") == std::make_pair(900, 560 + 360));
}

}  // namespace KG_UNITY_ID
}  // namespace
