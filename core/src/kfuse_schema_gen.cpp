// kfuse_schema_gen: prints or writes the trace schemas generated from core/src/trace_fields.h.
//   kfuse_schema_gen --sql            schemas/trace.sql to stdout
//   kfuse_schema_gen --json           schemas/trace.schema.json to stdout
//   kfuse_schema_gen --write SOURCE   both, into SOURCE/schemas/
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>

#include "trace_schema.h"

namespace {

bool writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.flush();
  if (!out) {
    std::fprintf(stderr, "kfuse_schema_gen: %s: cannot write\n", path.c_str());
    return false;
  }
  std::printf("wrote %s\n", path.c_str());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kfuse::core::detail;
  const std::string_view mode = argc > 1 ? argv[1] : "";
  if (argc == 2 && mode == "--sql") {
    std::cout << traceSql();
    return 0;
  }
  if (argc == 2 && mode == "--json") {
    std::cout << traceJsonSchema();
    return 0;
  }
  if (argc == 3 && mode == "--write") {
    const std::string dir = std::string(argv[2]) + "/schemas/";
    return writeFile(dir + "trace.sql", traceSql()) && writeFile(dir + "trace.schema.json", traceJsonSchema()) ? 0 : 1;
  }
  std::fprintf(stderr, "usage: kfuse_schema_gen --sql | --json | --write SOURCE_DIR\n");
  return 2;
}
