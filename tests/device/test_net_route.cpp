#include <catch2/catch.hpp>

#include "device/net_route.h"

TEST_CASE("the local address towards a host: the kernel's route, loopback told apart", "[unit][device][dist]") {
  using kg::device::is_loopback;
  using kg::device::local_address_towards;
  CHECK(local_address_towards("127.0.0.1") == "127.0.0.1");
  CHECK(is_loopback(local_address_towards("localhost")));
  CHECK(local_address_towards("no-such-host.invalid").empty());
  CHECK(local_address_towards("").empty());
  CHECK(is_loopback("127.0.1.1"));
  CHECK(is_loopback("::1"));
  CHECK_FALSE(is_loopback("10.77.0.1"));
  CHECK_FALSE(is_loopback("gpu07"));
}
