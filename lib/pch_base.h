// Precompiled for kgtrain_base (lib/ without LibTorch): what most of its files include. lib/pch.h adds LibTorch.
#pragma once
#if KG_WITH_OPENCV
#include <opencv2/core.hpp>
#endif
#include <nlohmann/json.hpp>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>
