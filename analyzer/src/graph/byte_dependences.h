// Data dependences between GPU operations, exact by byte range.
//
// Operations are added in issue order. For every byte an operation reads, it depends on the last operation that
// wrote the byte (RAW); for every byte it writes, on that last writer (WAW) and on every operation that read the
// byte since (WAR). A write retires exactly the bytes it covers: a partial overwrite leaves the older writer and
// readers of the other bytes in place. An operation never depends on itself; one that reads and writes a byte is
// that byte's last writer afterwards, not one of its readers. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "kfuse/analyzer/analysis.h"

namespace kfuse::analyzer {

class ByteDependences {
 public:
  // Adds operation `op` (ascending across calls) touching `uses` and appends its incoming data edges to `edges`,
  // each (from, op, kind, allocation, parameters) once. Uses with an unknown allocation are ignored.
  void add(size_t op, const std::vector<BufferUse>& uses, std::vector<Edge>& edges);

 private:
  struct Access {
    size_t op;
    int param;
    friend bool operator==(const Access&, const Access&) = default;
  };
  static constexpr size_t kNone = SIZE_MAX;
  // Bytes [lo, hi) of one allocation with one history: the last writer (op kNone: never written) and the readers
  // since. Segments of one allocation never overlap; bytes no operation touched have no segment.
  struct Segment {
    uint64_t hi = 0;
    Access writer{kNone, -1};
    std::vector<Access> readers;
  };
  using Segments = std::map<uint64_t, Segment>;  // by lo

  // Splits segments so that `at` is a boundary (no segment straddles it).
  static void split(Segments& s, uint64_t at);
  // Makes [lo, hi) exactly covered by segments (gaps become never-written segments) and returns the first.
  static Segments::iterator cover(Segments& s, uint64_t lo, uint64_t hi);

  std::unordered_map<core::Id, Segments> allocations_;
};

}  // namespace kfuse::analyzer
