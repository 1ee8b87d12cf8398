// Getting PTX and cubins out of CUDA binaries without cuobjdump: host ELF executables and shared libraries
// (`.nv_fatbin` / `__nv_relfatbin` sections, several fatbins per section), raw fatbins, cubins, PTX text.
// Entries may be zstd- or LZ4-compressed (nvcc 12.8+/13 default: PTX compressed with zstd).
//
// All functions take the whole input as bytes, check every offset against it and return kBadFormat with the
// offset and what was expected on truncated or corrupt input; they never crash. Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kfuse/core/status.h"

namespace kfuse::ptx {

enum class EntryKind : uint8_t { kPtx, kCubin, kUnknown };
enum class Compression : uint8_t { kNone, kZstd, kLz4 };
const char* entryKindName(EntryKind k);      // "ptx", "cubin", "unknown"
const char* compressionName(Compression c);  // "none", "zstd", "lz4"

struct FatbinEntry {
  EntryKind kind = EntryKind::kUnknown;
  uint32_t arch = 0;       // SM number: 90 for sm_90 / compute_90
  uint32_t ptx_major = 0;  // PTX ISA version of a PTX entry (from the entry header)
  uint32_t ptx_minor = 0;
  Compression compression = Compression::kNone;
  uint64_t flags = 0;                // raw entry flags
  std::string container;             // ".nv_fatbin", "__nv_relfatbin", "fatbin", "cubin", "ptx"
  size_t fatbin_index = 0;           // which fatbin in the container
  size_t entry_index = 0;            // which entry in that fatbin
  uint64_t offset = 0;               // payload offset in the input
  uint64_t stored_size = 0;          // payload bytes as stored
  uint64_t size = 0;                 // payload bytes after decompression (0 if the header does not say)
  std::vector<std::string> kernels;  // kernel (.entry) names, filled by listEntries
};

// Lists the entries of `input` (host ELF, fatbin, cubin, or PTX text), with kernel names.
Expected<std::vector<FatbinEntry>> listEntries(std::span<const uint8_t> input);

// The payload of `entry` (as returned by listEntries on the same input), decompressed. PTX loses the NUL
// padding fatbinary appends.
Expected<std::string> extractEntry(std::span<const uint8_t> input, const FatbinEntry& entry);

// A file name for an extracted entry: "<stem>.<fatbin>.<entry>.sm_90.ptx" / ".cubin".
std::string entryFileName(const FatbinEntry& entry, std::string_view stem);

// fatbinary stores PTX compacted: `//` comments removed, leading blanks removed, each run of blanks reduced to
// its first character (trailing blanks stay), NUL padding appended (checked against nvcc 13.0 output). This applies the
// same transformation to `nvcc -ptx` output, so the two can be compared byte for byte.
std::string fatbinaryCompactPtx(std::string_view ptx);

// ---------------------------------------------------------------------------------------------------------------
// Cubin `.nv.info`: kernel parameter layout for kernels that ship without PTX.

struct CubinParam {
  uint32_t ordinal = 0;
  uint32_t offset = 0;  // byte offset in the parameter buffer
  uint32_t size = 0;    // bytes
  uint32_t log_align = 0;
};

struct CubinKernel {
  std::string name;
  uint32_t param_bytes = 0;        // EIATTR_PARAM_CBANK / CBANK_PARAM_SIZE total
  std::vector<CubinParam> params;  // sorted by ordinal
  int max_registers = -1;          // EIATTR_MAXREG_COUNT, -1 if absent
};

struct CubinInfo {
  uint32_t sm = 0;  // from e_flags
  std::vector<CubinKernel> kernels;
};

Expected<CubinInfo> readCubin(std::span<const uint8_t> cubin);

// Reads a whole file (bounded to 2 GiB).
Expected<std::vector<uint8_t>> readBinaryFile(const std::string& path);

}  // namespace kfuse::ptx
