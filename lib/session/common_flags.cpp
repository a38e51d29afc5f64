#include "session/common_flags.h"

namespace kg::session {

const config::Fields<CommonFlags>& common_flags() {
  static const config::Fields<CommonFlags> f = [] {
    using F = CommonFlags;
    config::Fields<F> t;
    t.field("run_dir", &F::run_dir, "write every output exactly into DIR");
    t.field("device", &F::device, "auto | cpu | cuda | cuda:N (same as device.name=...)");
    t.field("seed", &F::seed, "same as run.seed=N").min(0);
    t.field("dry_run", &F::dry_run,
            "resolve, validate, build every component, check the data, print the plan; train nothing, write nothing");
    t.field("smoke", &F::smoke,
            "the real recipe on a few batches, for CI smoke tests: fit 2 training, 2 validation and 2 prediction "
            "batches; tta-predict and pseudo-label 2 batches; lr-find at most 20 updates");
    t.field("check_data", &F::check_data,
            "load the table and decode every image with the loader's threads; list bad rows (exit 3 unless "
            "data.on_bad_row = skip); no training");
    t.field("quiet", &F::quiet, "no progress output").alias('q');
    return t;
  }();
  return f;
}

}  // namespace kg::session
