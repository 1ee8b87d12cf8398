// Running the user's program with a kfuse library preloaded: what `kfuse record` and `kfuse run` share.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kfuse/core/status.h"

namespace kfuse::collector {

// A kfuse library that goes into applications (`file`: "libkfuse_collector.so", "libkfuse_inject.so"):
// $`env_var`, <dir of this executable>/../lib/`file`, or `build_copy` (the build tree's).
Expected<std::string> findKfuseLibrary(const std::string& file, const char* env_var, const std::string& build_copy);

// LD_PRELOAD's value with `library` added to `current`: first, or right after an injector already there when
// `after_injector` (a recording collector then sees what the injector launches).
std::string preloadList(const std::string& library, const std::string& current, bool after_injector);

// The AddressSanitizer runtime this process runs on when it is a shared library (clang's -shared-libsan, as in
// kfuse's instrumented build, or GCC's default libasan), else "". kfuse's own libraries are then instrumented too,
// and need that runtime loaded first in any program they go into (ASan must come first in the initial library
// list; a program nvcc built is not instrumented and does not load it by itself).
std::string sanitizerRuntime();

// `preload` (an LD_PRELOAD value) with sanitizerRuntime() first, when there is one and it is not there already.
std::string withSanitizerRuntime(const std::string& preload);

struct ProgramRun {
  int exit_code = 0;  // the program's exit status, 128 + signal number if a signal ended it
  int64_t pid = 0;
};

// Runs `command` with `environment` set on top of this process's and waits for it. Ctrl-C reaches the program
// through the terminal; kfuse waits for it either way. `output_file`: where its stdout and stderr go (replaced);
// empty: this process's. Errors are about starting it (fork failed, the output file cannot be created); a
// program that cannot be executed exits 127. `inherit_fd`: a descriptor of this process (close-on-exec) that the
// program inherits open (-1: none). An LD_PRELOAD in `environment` gets the sanitizer runtime first
// (withSanitizerRuntime).
Expected<ProgramRun> runProgram(const std::vector<std::string>& command,
                                const std::vector<std::pair<std::string, std::string>>& environment,
                                const std::string& output_file = "", int inherit_fd = -1);

}  // namespace kfuse::collector
