// Precompiled for kgtrain_tests: lib/'s LibTorch header, Catch2 (a second of parsing in each test file) and what
// most test files include. tests/main.cpp (Catch2's runner, CATCH_CONFIG_MAIN) compiles without it.
#pragma once
#include "pch.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <set>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/error.h"
#include "core/fs.h"
#include "support/fixtures.h"
