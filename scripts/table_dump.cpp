// A small driver for scripts/check_table_readers.py: reads a table as kgtrain does (data::read_table) and prints
// it as JSON ({"header": [...], "rows": [[...]], "unusable": {"col": "why"}}), or {"error": "..."}. Built by that
// script from the few lib/ files it needs (no LibTorch, no CMake).
#include <iostream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "data/table_read.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: table_dump TABLE\n";
    return 2;
  }
  nlohmann::json out;
  try {
    const kg::data::CsvTable t = kg::data::read_table(argv[1]);
    out["header"] = t.header;
    out["rows"] = t.rows;
    out["unusable"] = nlohmann::json::object();
    for (const auto& [c, why] : t.unusable) out["unusable"][t.header[static_cast<size_t>(c)]] = why;
  } catch (const kg::Error& e) {
    out = {{"error", e.what()}};
  }
  std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  return 0;
}
