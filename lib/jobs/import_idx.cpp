#include "jobs/import_idx.h"

#include <iostream>

#include "core/error.h"

namespace kg::jobs {

int run_import_idx(const data::IdxImportOptions& o) {
  const auto r = data::import_idx(o);
  std::cout << "imported " << r.train << " training and " << r.test << " test images (" << r.height << "x" << r.width
            << ") into " << o.out_dir << "\n";
  return kExitOk;
}

}  // namespace kg::jobs
