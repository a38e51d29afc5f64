// Precompiled for every lib/ translation unit: LibTorch's headers dominate build time on 2 cores.
#pragma once
#include <torch/torch.h>
#if KG_WITH_OPENCV
#include <opencv2/core.hpp>
#endif
#include <nlohmann/json.hpp>
#include <toml++/toml.h>
#include <map>
#include <string>
#include <vector>
