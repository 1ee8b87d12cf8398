#include "import/input_file.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

namespace kfuse::analyzer::detail {

TextBuffer::~TextBuffer() {
  std::free(data_);
}

TextBuffer::TextBuffer(TextBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      capacity_(std::exchange(o.capacity_, 0)) {}

TextBuffer& TextBuffer::operator=(TextBuffer&& o) noexcept {
  if (this != &o) {
    std::free(data_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    capacity_ = std::exchange(o.capacity_, 0);
  }
  return *this;
}

bool TextBuffer::reserve(size_t capacity) {
  if (capacity <= capacity_) return true;
  // realloc lets glibc move large blocks with mremap instead of copying them.
  void* p = std::realloc(data_, capacity);
  if (!p) return false;
  data_ = static_cast<char*>(p);
  capacity_ = capacity;
  return true;
}

bool isGzip(const unsigned char* p, size_t n) {
  return n >= 2 && p[0] == 0x1f && p[1] == 0x8b;
}

bool isSqlite(const unsigned char* p, size_t n) {
  static constexpr char kMagic[] = "SQLite format 3";  // 16 bytes with its NUL
  return n >= 16 && std::memcmp(p, kMagic, 16) == 0;
}

namespace {

struct FileCloser {
  void operator()(std::FILE* f) const {
    if (f) std::fclose(f);
  }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

Status checkRegularFile(const std::string& path) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) return notFound(path + ": no such file");
  if (std::filesystem::is_directory(st)) return invalidArgument(path + ": is a directory, not a trace file");
  return {};
}

Expected<FilePtr> openFile(const std::string& path) {
  KFUSE_RETURN_IF_ERROR(checkRegularFile(path));
  FilePtr f(std::fopen(path.c_str(), "rb"));
  if (!f) return ioError(path + ": cannot open for reading: " + std::strerror(errno));
  return f;
}

std::string mib(uint64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

Expected<SniffInput> readHead(const std::string& path) {
  KFUSE_ASSIGN_OR_RETURN(FilePtr f, openFile(path));
  std::vector<unsigned char> raw(kSniffBytes);
  const size_t n = std::fread(raw.data(), 1, raw.size(), f.get());
  if (std::ferror(f.get())) return ioError(path + ": read error: " + std::strerror(errno));
  raw.resize(n);
  SniffInput in;
  in.path = path;
  in.gzip = isGzip(raw.data(), raw.size());
  in.sqlite = isSqlite(raw.data(), raw.size());
  if (!in.gzip) {
    in.head.assign(reinterpret_cast<const char*>(raw.data()), raw.size());
    return in;
  }
  // Inflate only as much as fits in the head; errors are left to the importer, which reads the whole stream.
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) return internalError(path + ": cannot initialise zlib");
  in.head.resize(kSniffBytes);
  zs.next_in = raw.data();
  zs.avail_in = static_cast<uInt>(raw.size());
  zs.next_out = reinterpret_cast<Bytef*>(in.head.data());
  zs.avail_out = static_cast<uInt>(in.head.size());
  while (zs.avail_out > 0) {
    const int rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK) break;  // end of stream, of the head's input, or an error
    if (zs.avail_in == 0) {
      const size_t more = std::fread(raw.data(), 1, raw.size(), f.get());
      if (more == 0) break;
      zs.next_in = raw.data();
      zs.avail_in = static_cast<uInt>(more);
    }
  }
  in.head.resize(in.head.size() - zs.avail_out);
  inflateEnd(&zs);
  return in;
}

namespace {

class PlainSource final : public TextSource {
 public:
  PlainSource(std::string path, FilePtr f, uint64_t max_bytes)
      : path_(std::move(path)), f_(std::move(f)), max_bytes_(max_bytes) {}
  bool compressed() const override { return false; }
  Expected<size_t> read(char* dst, size_t capacity) override {
    const size_t n = std::fread(dst, 1, capacity, f_.get());
    if (n == 0 && std::ferror(f_.get())) return ioError(path_ + ": read error: " + std::strerror(errno));
    text_bytes_ += n;
    if (text_bytes_ > max_bytes_) {
      return badFormat(path_ + ": more than " + mib(max_bytes_) + " of JSON (ImportOptions::max_json_bytes)");
    }
    return n;
  }

 private:
  std::string path_;
  FilePtr f_;
  uint64_t max_bytes_;
};

class GzipSource final : public TextSource {
 public:
  GzipSource(std::string path, FilePtr f, uint64_t max_bytes)
      : path_(std::move(path)), f_(std::move(f)), max_bytes_(max_bytes), in_(kChunk) {}
  ~GzipSource() override {
    if (initialised_) inflateEnd(&zs_);
  }
  bool compressed() const override { return true; }

  Status init() {
    if (inflateInit2(&zs_, 15 + 32) != Z_OK) return internalError(path_ + ": cannot initialise zlib");
    initialised_ = true;
    return {};
  }

  Expected<size_t> read(char* dst, size_t capacity) override {
    if (done_ || capacity == 0) return size_t{0};
    zs_.next_out = reinterpret_cast<Bytef*>(dst);
    zs_.avail_out = static_cast<uInt>(std::min<size_t>(capacity, 1u << 30));
    const uInt want = zs_.avail_out;
    while (zs_.avail_out > 0) {
      if (zs_.avail_in == 0 && !eof_) {
        const size_t n = std::fread(in_.data(), 1, in_.size(), f_.get());
        if (n == 0 && std::ferror(f_.get())) return ioError(path_ + ": read error: " + std::strerror(errno));
        if (n == 0) eof_ = true;
        zs_.next_in = in_.data();
        zs_.avail_in = static_cast<uInt>(n);
      }
      if (between_members_) {
        // After a complete member: skip zero padding; anything else must be another gzip member.
        while (zs_.avail_in > 0 && *zs_.next_in == 0) {
          ++zs_.next_in;
          --zs_.avail_in;
        }
        if (zs_.avail_in == 0) {
          if (eof_) {
            done_ = true;
            break;
          }
          continue;
        }
        if (zs_.avail_in < 2 && !eof_) {
          // Need two bytes to check the magic; pull the next chunk behind the one left.
          const unsigned char first = *zs_.next_in;
          in_[0] = first;
          const size_t n = std::fread(in_.data() + 1, 1, in_.size() - 1, f_.get());
          if (n == 0) eof_ = true;
          zs_.next_in = in_.data();
          zs_.avail_in = static_cast<uInt>(n + 1);
        }
        if (zs_.avail_in < 2 || !isGzip(zs_.next_in, zs_.avail_in)) {
          done_ = true;  // trailing garbage after a complete stream is ignored, as gzip -d warns and ignores it
          break;
        }
        inflateReset(&zs_);
        between_members_ = false;
      }
      const uInt before_in = zs_.avail_in;
      const uInt before_out = zs_.avail_out;
      const int rc = inflate(&zs_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        between_members_ = true;
        continue;
      }
      if (rc == Z_OK) continue;
      if (rc == Z_BUF_ERROR && zs_.avail_in == 0 && eof_ && before_in == 0 && before_out == zs_.avail_out) {
        const uint64_t total = text_bytes_ + (want - zs_.avail_out);
        return badFormat(path_ + ": truncated gzip stream: it ends after " + std::to_string(total) +
                         " inflated bytes without its end marker");
      }
      if (rc == Z_BUF_ERROR) continue;
      if (rc == Z_MEM_ERROR) return ioError(path_ + ": out of memory inflating gzip data");
      const uint64_t total = text_bytes_ + (want - zs_.avail_out);
      return badFormat(path_ + ": corrupt gzip data after " + std::to_string(total) +
                       " inflated bytes: " + (zs_.msg ? zs_.msg : "error " + std::to_string(rc)));
    }
    const size_t n = want - zs_.avail_out;
    text_bytes_ += n;
    if (text_bytes_ > max_bytes_) {
      return badFormat(path_ + ": decompresses to more than " + mib(max_bytes_) +
                       " (ImportOptions::max_json_bytes); refusing to load it");
    }
    return n;
  }

 private:
  static constexpr size_t kChunk = 256 * 1024;
  std::string path_;
  FilePtr f_;
  uint64_t max_bytes_;
  std::vector<unsigned char> in_;
  z_stream zs_{};
  bool initialised_ = false;
  bool eof_ = false;
  bool done_ = false;
  bool between_members_ = false;
};

class PipelinedSource final : public TextSource {
 public:
  PipelinedSource(std::unique_ptr<TextSource> inner, size_t chunk_bytes, size_t depth)
      : inner_(std::move(inner)), chunk_bytes_(chunk_bytes), depth_(std::max<size_t>(depth, 1)) {
    worker_ = std::thread([this] { produce(); });
  }
  ~PipelinedSource() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }
  bool compressed() const override { return inner_->compressed(); }

  Expected<size_t> read(char* dst, size_t capacity) override {
    size_t copied = 0;
    while (copied < capacity) {
      if (current_pos_ == current_.size()) {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return !ready_.empty() || finished_; });
        if (ready_.empty()) {
          if (!error_.ok()) return error_;
          break;  // the end
        }
        current_ = std::move(ready_.front());
        ready_.pop_front();
        current_pos_ = 0;
        lock.unlock();
        cv_.notify_all();
        if (current_.empty()) continue;
      }
      const size_t n = std::min(capacity - copied, current_.size() - current_pos_);
      std::memcpy(dst + copied, current_.data() + current_pos_, n);
      copied += n;
      current_pos_ += n;
      // One chunk per call is enough: the caller asks again.
      if (current_pos_ == current_.size()) break;
    }
    text_bytes_ += copied;
    return copied;
  }

 private:
  void produce() {
    while (true) {
      std::vector<char> chunk(chunk_bytes_);
      auto n = inner_->read(chunk.data(), chunk.size());
      std::unique_lock<std::mutex> lock(mu_);
      if (!n.ok() || *n == 0) {
        if (!n.ok()) error_ = n.status();
        finished_ = true;
        cv_.notify_all();
        return;
      }
      chunk.resize(*n);
      cv_.wait(lock, [&] { return ready_.size() < depth_ || stop_; });
      if (stop_) return;
      ready_.push_back(std::move(chunk));
      cv_.notify_all();
    }
  }

  std::unique_ptr<TextSource> inner_;
  size_t chunk_bytes_;
  size_t depth_;
  std::thread worker_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::vector<char>> ready_;  // guarded by mu_
  bool finished_ = false;                // guarded by mu_
  bool stop_ = false;                    // guarded by mu_
  Status error_;                         // guarded by mu_
  std::vector<char> current_;            // reader side only
  size_t current_pos_ = 0;
};

}  // namespace

std::unique_ptr<TextSource> TextSource::pipelined(std::unique_ptr<TextSource> inner, size_t chunk_bytes, size_t depth) {
  return std::make_unique<PipelinedSource>(std::move(inner), chunk_bytes, depth);
}

Expected<std::unique_ptr<TextSource>> TextSource::open(const std::string& path, uint64_t max_bytes) {
  KFUSE_ASSIGN_OR_RETURN(FilePtr f, openFile(path));
  unsigned char magic[2] = {};
  const size_t got = std::fread(magic, 1, 2, f.get());
  std::rewind(f.get());
  if (isGzip(magic, got)) {
    auto g = std::make_unique<GzipSource>(path, std::move(f), max_bytes);
    KFUSE_RETURN_IF_ERROR(g->init());
    return std::unique_ptr<TextSource>(std::move(g));
  }
  return std::unique_ptr<TextSource>(std::make_unique<PlainSource>(path, std::move(f), max_bytes));
}

namespace {
// Tracks the current JSON string or whitespace run across chunks (loadText's max_run_bytes).
struct RunScanner {
  bool in_string = false, escape = false;
  uint64_t run = 0;  // bytes of the current string, or of the current whitespace run
  // The offset (in the whole text) where a run first exceeds `limit`, or -1.
  int64_t scan(const char* p, size_t n, uint64_t offset, uint64_t limit) {
    for (size_t i = 0; i < n; ++i) {
      const char c = p[i];
      if (in_string) {
        if (escape) {
          escape = false;
        } else if (c == '\\') {
          escape = true;
        } else if (c == '"') {
          in_string = false;
          run = 0;
          continue;
        }
        if (++run > limit) return static_cast<int64_t>(offset + i);
      } else if (c == '"') {
        in_string = true;
        run = 0;
      } else if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
        if (++run > limit) return static_cast<int64_t>(offset + i);
      } else {
        run = 0;
      }
    }
    return -1;
  }
};
}  // namespace

Expected<TextBuffer> loadText(const std::string& path, uint64_t max_bytes, size_t padding, uint64_t max_run_bytes) {
  KFUSE_ASSIGN_OR_RETURN(std::unique_ptr<TextSource> source, TextSource::open(path, max_bytes));
  std::error_code ec;
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  // A first guess: the file's size, or four times that when it is compressed; the buffer doubles as needed.
  uint64_t guess = ec ? 1 << 16 : (source->compressed() ? file_size * 4 : file_size);
  guess = std::clamp<uint64_t>(guess, 4096, std::min<uint64_t>(max_bytes, uint64_t{1} << 40) + 1);
  TextBuffer out;
  if (!out.reserve(static_cast<size_t>(guess) + padding)) return ioError(path + ": out of memory loading the file");
  size_t size = 0;
  RunScanner runs;
  while (true) {
    if (out.capacity() - padding - size == 0 && !out.reserve(out.capacity() * 2)) {
      return ioError(path + ": out of memory loading the file (" + mib(size) + " so far)");
    }
    KFUSE_ASSIGN_OR_RETURN(size_t n, source->read(out.data() + size, out.capacity() - padding - size));
    if (n == 0) break;
    if (max_run_bytes) {
      if (const int64_t at = runs.scan(out.data() + size, n, size, max_run_bytes); at >= 0) {
        return badFormat(path + ": a JSON " + (runs.in_string ? "string" : "run of whitespace") + " longer than " +
                         mib(max_run_bytes) + " at byte " + std::to_string(at) +
                         ": refused (a damaged or hostile file; no field of a trace is that long)");
      }
    }
    size += n;
  }
  std::memset(out.data() + size, 0, padding);
  out.setSize(size);
  return out;
}

}  // namespace kfuse::analyzer::detail
