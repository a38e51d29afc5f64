// Precompiled for kgtrain_torch's files (lib/ with LibTorch), app/ and the tests: LibTorch's headers dominate build
// time on 2 cores. Only what most of its users include: toml++ (3 files) and the codecs' C libraries stay out.
#pragma once
#include <torch/torch.h>

#include "pch_base.h"
