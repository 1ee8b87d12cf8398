// Fuzz targets whose reader takes a path: the input is written to one file in a private directory, made once per
// process and removed at exit, so that the target exercises the same code the verbs run.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

namespace kfuse::fuzz {

class InputFile {
 public:
  explicit InputFile(const char* name) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kfuse_fuzz_XXXXXX").string();
    if (!mkdtemp(tmpl.data())) std::abort();
    dir_ = tmpl;
    path_ = dir_ + "/" + name;
  }
  ~InputFile() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  // Replaces the file's content (and removes what a previous run left beside it, such as a -wal file).
  const std::string& write(const uint8_t* data, size_t size) {
    for (const char* suffix : {"-wal", "-shm", "-journal"}) ::unlink((path_ + suffix).c_str());
    FILE* f = std::fopen(path_.c_str(), "wb");
    if (!f) std::abort();
    if (size && std::fwrite(data, 1, size, f) != size) std::abort();
    std::fclose(f);
    return path_;
  }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_, path_;
};

}  // namespace kfuse::fuzz
