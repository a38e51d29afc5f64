#include "jobs/import_idx.h"

#include <iostream>

#include "config/flags.h"
#include "core/error.h"

namespace kg::jobs {

const config::Fields<data::IdxImportOptions>& import_idx_flags() {
  static const config::Fields<data::IdxImportOptions> f = [] {
    using F = data::IdxImportOptions;
    config::Fields<F> t;
    const auto required = [](const config::json& v) {
      return v.get<std::string>().empty() ? std::string("required: give the path") : std::string();
    };
    t.field("train_images", &F::train_images, "training images IDX file (.gz or raw)").check(required);
    t.field("train_labels", &F::train_labels, "training labels IDX file").check(required);
    t.field("test_images", &F::test_images, "test images IDX file").check(required);
    t.field("test_labels", &F::test_labels, "test labels IDX file").check(required);
    t.field("out", &F::out_dir, "output folder (DATA)").check(required);
    t.field("threads", &F::threads, "PNG encoding threads").min(1);
    t.field("packs", &F::packs,
            "write raw packs DATA/train.kgpack + DATA/test.kgpack (tables inside) instead of PNG folders and "
            "train/test CSVs: no decoding when training");
    return t;
  }();
  return f;
}

int run_import_idx(const data::IdxImportOptions& o) {
  config::check_flags(import_idx_flags(), o);
  const auto r = data::import_idx(o);
  std::cout << "imported " << r.train << " training and " << r.test << " test images (" << r.height << "x" << r.width
            << ") into " << o.out_dir << "\n";
  return kExitOk;
}

}  // namespace kg::jobs
