// kfuse: profiling-guided kernel fusion advisor. Each verb lives in its own *_verbs.cpp.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <new>
#include <string>

#include "verbs.h"

namespace kfuse::cli {

int reportError(const Status& status, int code) {
  std::fprintf(stderr, "kfuse: %s\n", status.message().c_str());
  return code;
}

namespace {

// The files a command line names (its arguments that exist on disk), for a message about an error no verb
// anticipated: "kfuse: trace.sqlite: ...".
std::string filesNamed(int argc, char** argv) {
  std::string files;
  for (int i = 2; i < argc; ++i) {
    std::error_code ec;
    if (argv[i][0] == '-' || !std::filesystem::exists(argv[i], ec)) continue;
    files += (files.empty() ? "" : ", ") + std::string(argv[i]);
  }
  return files.empty() ? std::string(argc > 1 ? argv[1] : "kfuse") : files;
}

}  // namespace

}  // namespace kfuse::cli

int main(int argc, char** argv) {
  using namespace kfuse::cli;
  CLI::App app{
      "kfuse " KFUSE_VERSION_STRING
      " - profiling-guided kernel fusion advisor for CUDA applications.\n"
      "Record an application, analyze the trace for kernels worth fusing, rewrite and validate fused kernels,\n"
      "and inject them into the unmodified application.",
      "kfuse"};
  app.set_version_flag("--version", "kfuse " KFUSE_VERSION_STRING);
  app.require_subcommand(1);
  app.fallthrough(false);
  VerbContext ctx;
  app.add_flag("-q,--quiet", ctx.quiet, "Print only results and errors, no progress");
  registerTraceVerbs(app, ctx);
  registerGpuVerbs(app, ctx);
  registerRecordVerbs(app, ctx);
  registerMetricVerbs(app, ctx);
  registerAnalyzeVerbs(app, ctx);
  registerPtxVerbs(app, ctx);
  registerValidateVerbs(app, ctx);
  registerRewriteVerbs(app, ctx);
  registerRunVerbs(app, ctx);
  registerDemoVerbs(app, ctx);
  registerHelpVerbs(app, ctx);
  // CLI11 would report an unknown verb as "a subcommand is required"; name it instead.
  if (argc > 1 && argv[1][0] != '-') {
    try {
      (void)app.get_subcommand(argv[1]);
    } catch (const CLI::OptionNotFound&) {
      std::fprintf(stderr, "kfuse: unknown verb '%s'; `kfuse --help` lists the verbs\n", argv[1]);
      return kExitBadInput;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Usage errors: CLI11 prints the message; kfuse's convention is exit code 2 for bad input.
    app.exit(e);
    return kExitBadInput;
  } catch (const std::bad_alloc&) {
    // Verbs check sizes before they allocate; this is the last line for an input that still asks too much.
    std::fprintf(stderr, "kfuse: %s: out of memory reading the input (too large or damaged?)\n",
                 filesNamed(argc, argv).c_str());
    return kExitBadInput;
  } catch (const std::exception& e) {
    // Verbs return Status for the errors they know; a library exception reaching this point is a bug to fix in
    // the verb, but the user still gets a message and exit 2, never an abort.
    std::fprintf(stderr, "kfuse: %s: unexpected error (a damaged input?): %s\n", filesNamed(argc, argv).c_str(),
                 e.what());
    return kExitBadInput;
  }
  return ctx.exit_code;
}
