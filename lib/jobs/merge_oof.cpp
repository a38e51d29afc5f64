#include "jobs/merge_oof.h"

#include <filesystem>
#include <iostream>

#include "config/flags.h"
#include "core/error.h"
#include "core/strings.h"
#include "session/oof.h"

namespace fs = std::filesystem;

namespace kg::jobs {

const config::Fields<MergeOofFlags>& merge_oof_flags() {
  static const config::Fields<MergeOofFlags> f = [] {
    config::Fields<MergeOofFlags> t;
    t.field("out", &MergeOofFlags::out, "folder for oof.csv and cv.json (required)");
    return t;
  }();
  return f;
}

int run_merge_oof(const std::vector<std::string>& dirs, const MergeOofFlags& flags) {
  config::check_flags(merge_oof_flags(), flags);
  KG_CHECK(!flags.out.empty(), UsageError, "merge-oof needs --out DIR, the folder for oof.csv and cv.json");
  KG_CHECK(!dirs.empty(), UsageError, "merge-oof needs the run or fold folders to merge");
  auto cv = session::merge_oof(dirs, flags.out);
  std::cout << "cv " << cv["metric"].get<std::string>() << ": oof " << format_significant(cv["oof"].get<double>(), 4)
            << ", mean " << format_significant(cv["mean"].get<double>(), 4) << " +- "
            << format_significant(cv["std"].get<double>(), 4) << " over " << cv["folds"].size() << " folds ("
            << cv["rows"].get<int64_t>() << " rows" << (cv["complete"].get<bool>() ? "" : "; not every fold present")
            << ")\n";
  for (auto& f : cv["folds"])
    std::cout << "  fold " << f["fold"].get<int64_t>() << ": " << format_significant(f["value"].get<double>(), 4)
              << "\n";
  std::cout << "wrote " << (fs::path(flags.out) / "oof.csv").string() << " and cv.json\n";
  return kExitOk;
}

}  // namespace kg::jobs
