// kfuse_schema_gen: prints or writes the schemas generated from kfuse's field lists, which the committed files
// under schemas/ must equal (tests/schemas/check_generated.py):
//   trace.sql, trace.schema.json   core/src/trace_fields.h
//   plan.schema.json               rewriter/src/plan.cpp
//   report.schema.json             analyzer/src/report/report_json.cpp
//
//   kfuse_schema_gen --list            their names, one a line
//   kfuse_schema_gen --print NAME      one of them to stdout
//   kfuse_schema_gen --write SOURCE    all of them, into SOURCE/schemas/
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>

#include "kfuse/analyzer/analysis.h"
#include "kfuse/core/trace_json.h"
#include "kfuse/core/trace_store.h"
#include "kfuse/rewriter/plan.h"

namespace {

struct Schema {
  const char* name;  // under schemas/
  std::string (*generate)();
};

constexpr Schema kSchemas[] = {
    {"trace.sql", kfuse::core::traceSqlSchema},
    {"trace.schema.json", kfuse::core::traceJsonSchema},
    {"plan.schema.json", kfuse::rewriter::planJsonSchema},
    {"report.schema.json", kfuse::analyzer::reportJsonSchema},
};

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
  const std::string_view mode = argc > 1 ? argv[1] : "";
  if (argc == 2 && mode == "--list") {
    for (const Schema& s : kSchemas) std::cout << s.name << "\n";
    return 0;
  }
  if (argc == 3 && mode == "--print") {
    for (const Schema& s : kSchemas) {
      if (argv[2] == std::string_view(s.name)) {
        std::cout << s.generate();
        return 0;
      }
    }
    std::fprintf(stderr, "kfuse_schema_gen: no schema named %s (see --list)\n", argv[2]);
    return 2;
  }
  if (argc == 3 && mode == "--write") {
    const std::string dir = std::string(argv[2]) + "/schemas/";
    bool ok = true;
    for (const Schema& s : kSchemas) ok = writeFile(dir + s.name, s.generate()) && ok;
    return ok ? 0 : 1;
  }
  std::fprintf(stderr, "usage: kfuse_schema_gen --list | --print NAME | --write SOURCE_DIR\n");
  return 2;
}
