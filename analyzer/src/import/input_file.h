// Reading importer inputs: sniffing the first bytes of a file (gzip or not), and loading JSON text (inflating
// gzip) into a buffer padded for simdjson. Private to the analyzer. Every error Status names the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kfuse/analyzer/importer.h"
#include "kfuse/core/status.h"

namespace kfuse::analyzer::detail {

inline constexpr size_t kSniffBytes = 64 * 1024;

// A malloc'd byte buffer with spare capacity after size() (at least the padding asked for at load time).
// Move-only. Not thread-safe.
class TextBuffer {
 public:
  TextBuffer() = default;
  ~TextBuffer();
  TextBuffer(TextBuffer&& o) noexcept;
  TextBuffer& operator=(TextBuffer&& o) noexcept;
  TextBuffer(const TextBuffer&) = delete;
  TextBuffer& operator=(const TextBuffer&) = delete;

  const char* data() const { return data_; }
  char* data() { return data_; }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  std::string_view view() const { return {data_, size_}; }

  bool reserve(size_t capacity);  // false when out of memory; keeps the contents
  void setSize(size_t size) { size_ = size; }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

bool isGzip(const unsigned char* p, size_t n);
bool isSqlite(const unsigned char* p, size_t n);

// Fills path, gzip, sqlite and head (decompressed when gzip; a truncated or corrupt stream gives what could be
// inflated). Tables are not listed here. kNotFound for a missing file, kInvalidArgument for a directory.
Expected<SniffInput> readHead(const std::string& path);

// The whole content of `path` (through TextSource), with at least `padding` spare bytes after the text.
// `max_run_bytes` > 0: JSON text in which one string or one run of whitespace is longer is refused while it is
// read, so a small gzip bomb inflating to one huge string costs that much, not the whole inflated size.
Expected<TextBuffer> loadText(const std::string& path, uint64_t max_bytes, size_t padding, uint64_t max_run_bytes = 0);

// The text of a file read front to back in chunks, inflated on the fly when the file is gzip (several members are
// concatenated; trailing zero padding is ignored). Memory: one compressed chunk, whatever the file size.
// Not thread-safe.
class TextSource {
 public:
  virtual ~TextSource() = default;
  // Opens `path`; reading more than `max_bytes` of text is an error naming ImportOptions::max_json_bytes.
  static Expected<std::unique_ptr<TextSource>> open(const std::string& path, uint64_t max_bytes);
  // Copies up to `capacity` bytes of text to `dst`; 0 at the end. Errors name the file: read errors, truncated or
  // corrupt gzip, the size limit.
  virtual Expected<size_t> read(char* dst, size_t capacity) = 0;
  virtual bool compressed() const = 0;
  uint64_t textBytes() const { return text_bytes_; }  // handed out so far

  // Runs `inner` on a thread of its own, `depth` chunks of `chunk_bytes` ahead of the reader, so that inflating
  // and parsing overlap. The returned source is read from one thread; destroying it stops and joins the worker.
  static std::unique_ptr<TextSource> pipelined(std::unique_ptr<TextSource> inner, size_t chunk_bytes, size_t depth);

 protected:
  uint64_t text_bytes_ = 0;
};

}  // namespace kfuse::analyzer::detail
