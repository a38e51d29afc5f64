// Catch2 v2 test runner for the whole suite (tests/ mirrors lib/).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
