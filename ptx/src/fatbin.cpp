// Fatbin / ELF readers. Layouts are described in docs/ptx.md ("Fatbin format as implemented").
#include "kfuse/ptx/fatbin.h"

#include <lz4.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace kfuse::ptx {
namespace {

constexpr uint32_t kFatbinMagic = 0xBA55ED50u;
constexpr uint16_t kEntryPtx = 1;
constexpr uint16_t kEntryElf = 2;
constexpr uint64_t kFlagLz4 = 0x2000;
constexpr uint64_t kFlagZstd = 0x8000;
constexpr uint64_t kMaxPayload = uint64_t{1} << 30;  // refuse to inflate beyond 1 GiB
constexpr uint16_t kEmCuda = 190;

std::string hex(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

// Bounds-checked little-endian reader.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> d) : d_(d) {}
  bool has(uint64_t off, uint64_t n) const { return off <= d_.size() && n <= d_.size() - off; }
  template <typename T>
  T get(uint64_t off) const {
    T v{};
    std::memcpy(&v, d_.data() + off, sizeof(T));
    return v;
  }
  std::span<const uint8_t> data() const { return d_; }

 private:
  std::span<const uint8_t> d_;
};

struct ElfSection {
  std::string name;
  uint32_t type = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
};

bool isElf(std::span<const uint8_t> d) {
  return d.size() >= 4 && d[0] == 0x7f && d[1] == 'E' && d[2] == 'L' && d[3] == 'F';
}

Expected<std::vector<ElfSection>> readSections(std::span<const uint8_t> d, uint16_t* machine, uint32_t* eflags) {
  Reader r(d);
  if (!r.has(0, 64)) return badFormat("ELF header truncated (" + std::to_string(d.size()) + " bytes)");
  if (d[4] != 2) return unsupported("only 64-bit ELF files are supported");
  if (d[5] != 1) return unsupported("only little-endian ELF files are supported");
  if (machine) *machine = r.get<uint16_t>(18);
  if (eflags) *eflags = r.get<uint32_t>(48);
  const uint64_t shoff = r.get<uint64_t>(0x28);
  const uint16_t shentsize = r.get<uint16_t>(0x3a);
  const uint16_t shnum = r.get<uint16_t>(0x3c);
  const uint16_t shstrndx = r.get<uint16_t>(0x3e);
  if (shnum == 0) return std::vector<ElfSection>{};
  if (shentsize < 64) return badFormat("ELF section header size " + std::to_string(shentsize) + " is too small");
  if (!r.has(shoff, uint64_t{shnum} * shentsize))
    return badFormat("ELF section headers at " + hex(shoff) + " extend past the end of the file (truncated?)");
  std::vector<ElfSection> secs(shnum);
  for (uint16_t i = 0; i < shnum; ++i) {
    const uint64_t h = shoff + uint64_t{i} * shentsize;
    secs[i].type = r.get<uint32_t>(h + 4);
    secs[i].offset = r.get<uint64_t>(h + 24);
    secs[i].size = r.get<uint64_t>(h + 32);
  }
  if (shstrndx >= shnum) return badFormat("ELF section-name table index out of range");
  const ElfSection& strtab = secs[shstrndx];
  if (!r.has(strtab.offset, strtab.size)) return badFormat("ELF section-name table extends past the end of the file");
  for (uint16_t i = 0; i < shnum; ++i) {
    const uint64_t h = shoff + uint64_t{i} * shentsize;
    const uint32_t n = r.get<uint32_t>(h);
    if (n >= strtab.size) continue;
    const char* s = reinterpret_cast<const char*>(d.data() + strtab.offset + n);
    secs[i].name.assign(s, strnlen(s, strtab.size - n));
  }
  return secs;
}

// Kernel names in PTX text: the identifier after each ".entry".
std::vector<std::string> ptxKernelNames(std::string_view t) {
  std::vector<std::string> out;
  size_t pos = 0;
  while ((pos = t.find(".entry", pos)) != std::string_view::npos) {
    pos += 6;
    if (pos >= t.size() || (t[pos] != ' ' && t[pos] != '\t')) continue;
    while (pos < t.size() && (t[pos] == ' ' || t[pos] == '\t')) ++pos;
    size_t end = pos;
    while (end < t.size() && (isalnum(static_cast<unsigned char>(t[end])) || t[end] == '_' || t[end] == '$')) ++end;
    if (end > pos) out.emplace_back(t.substr(pos, end - pos));
  }
  return out;
}

std::vector<std::string> cubinKernelNames(std::span<const uint8_t> d) {
  std::vector<std::string> out;
  auto secs = readSections(d, nullptr, nullptr);
  if (!secs.ok()) return out;
  for (const auto& s : *secs) {
    if (s.name.rfind(".nv.info.", 0) == 0) out.push_back(s.name.substr(9));
  }
  std::sort(out.begin(), out.end());
  return out;
}

Status parseFatbins(std::span<const uint8_t> d, uint64_t base, uint64_t size, const std::string& container,
                    std::vector<FatbinEntry>* out) {
  Reader r(d);
  uint64_t off = base;
  const uint64_t end = base + size;
  size_t index = 0;
  while (off < end) {
    // fatbins are 8-byte aligned one after another; trailing zero padding ends the list
    if (!r.has(off, 16) || off + 16 > end) {
      if (r.has(off, end - off) && std::all_of(d.begin() + static_cast<long>(off), d.begin() + static_cast<long>(end),
                                               [](uint8_t b) { return b == 0; }))
        break;
      return badFormat(container + ": fatbin header at " + hex(off) + " is truncated");
    }
    const uint32_t magic = r.get<uint32_t>(off);
    if (magic == 0) break;
    if (magic != kFatbinMagic)
      return badFormat(container + ": bad fatbin magic " + hex(magic) + " at " + hex(off) + " (expected 0xba55ed50)");
    const uint16_t hsize = r.get<uint16_t>(off + 6);
    const uint64_t fsize = r.get<uint64_t>(off + 8);
    if (hsize < 16 || !r.has(off, uint64_t{hsize}) || fsize > end - off || hsize > end - off - fsize)
      return badFormat(container + ": fatbin at " + hex(off) + " claims " + std::to_string(fsize) +
                       " bytes but the section ends at " + hex(end) + " (truncated?)");
    uint64_t e = off + hsize;
    const uint64_t fend = off + hsize + fsize;
    size_t eindex = 0;
    while (e < fend) {
      if (fend - e < 64) return badFormat(container + ": entry header at " + hex(e) + " is truncated");
      FatbinEntry fe;
      const uint16_t kind = r.get<uint16_t>(e);
      const uint32_t ehsize = r.get<uint32_t>(e + 4);
      const uint64_t padded = r.get<uint64_t>(e + 8);
      const uint32_t csize = r.get<uint32_t>(e + 16);
      const uint32_t isa = r.get<uint32_t>(e + 24);
      fe.arch = r.get<uint32_t>(e + 28);
      fe.flags = r.get<uint64_t>(e + 40);
      const uint64_t usize = r.get<uint64_t>(e + 56);
      if (ehsize < 64 || ehsize > fend - e || padded > fend - e - ehsize)
        return badFormat(container + ": entry at " + hex(e) + " (header " + std::to_string(ehsize) + ", payload " +
                         std::to_string(padded) + " bytes) runs past its fatbin ending at " + hex(fend));
      fe.kind = kind == kEntryPtx ? EntryKind::kPtx : kind == kEntryElf ? EntryKind::kCubin : EntryKind::kUnknown;
      if (fe.kind == EntryKind::kPtx) {
        fe.ptx_major = isa >> 16;
        fe.ptx_minor = isa & 0xffff;
      }
      fe.compression = (fe.flags & kFlagZstd)  ? Compression::kZstd
                       : (fe.flags & kFlagLz4) ? Compression::kLz4
                                               : Compression::kNone;
      fe.container = container;
      fe.fatbin_index = index;
      fe.entry_index = eindex++;
      fe.offset = e + ehsize;
      if (fe.compression == Compression::kNone) {
        fe.stored_size = usize && usize <= padded ? usize : padded;
        fe.size = fe.stored_size;
      } else {
        if (csize == 0 || csize > padded)
          return badFormat(container + ": compressed entry at " + hex(e) + " has size " + std::to_string(csize) +
                           " outside its payload of " + std::to_string(padded));
        fe.stored_size = csize;
        fe.size = usize;
      }
      out->push_back(std::move(fe));
      e += ehsize + padded;
    }
    ++index;
    off = (fend + 7) & ~uint64_t{7};
  }
  return {};
}

Expected<std::string> decompress(std::span<const uint8_t> src, const FatbinEntry& e) {
  if (e.size == 0 || e.size > kMaxPayload)
    return badFormat("entry at " + hex(e.offset) + " declares an uncompressed size of " + std::to_string(e.size));
  std::string out(e.size, '\0');
  if (e.compression == Compression::kZstd) {
    const size_t n = ZSTD_decompress(out.data(), out.size(), src.data(), src.size());
    if (ZSTD_isError(n)) return badFormat("zstd payload at " + hex(e.offset) + " is corrupt: " + ZSTD_getErrorName(n));
    out.resize(n);
  } else {
    if (src.size() > static_cast<size_t>(LZ4_MAX_INPUT_SIZE)) return badFormat("LZ4 payload too large");
    const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(src.data()), out.data(),
                                      static_cast<int>(src.size()), static_cast<int>(out.size()));
    if (n < 0) return badFormat("LZ4 payload at " + hex(e.offset) + " is corrupt");
    out.resize(static_cast<size_t>(n));
  }
  return out;
}

}  // namespace

const char* entryKindName(EntryKind k) {
  switch (k) {
    case EntryKind::kPtx: return "ptx";
    case EntryKind::kCubin: return "cubin";
    default: return "unknown";
  }
}

const char* compressionName(Compression c) {
  switch (c) {
    case Compression::kZstd: return "zstd";
    case Compression::kLz4: return "lz4";
    default: return "none";
  }
}

Expected<std::vector<FatbinEntry>> listEntries(std::span<const uint8_t> input) {
  std::vector<FatbinEntry> out;
  Reader r(input);
  if (input.empty()) return badFormat("empty input");
  if (isElf(input)) {
    uint16_t machine = 0;
    uint32_t eflags = 0;
    auto secs = readSections(input, &machine, &eflags);
    if (!secs.ok()) return secs.status();
    if (machine == kEmCuda) {
      FatbinEntry e;
      e.kind = EntryKind::kCubin;
      e.container = "cubin";
      e.arch = (eflags >> 8) & 0xff;
      e.stored_size = e.size = input.size();
      e.kernels = cubinKernelNames(input);
      out.push_back(std::move(e));
      return out;
    }
    bool found = false;
    for (const auto& s : *secs) {
      if (s.name != ".nv_fatbin" && s.name != "__nv_relfatbin") continue;
      found = true;
      if (s.type == 8 /*SHT_NOBITS*/) continue;
      if (!r.has(s.offset, s.size))
        return badFormat("section " + s.name + " at " + hex(s.offset) +
                         " extends past the end of the file (truncated?)");
      KFUSE_RETURN_IF_ERROR(parseFatbins(input, s.offset, s.size, s.name, &out));
    }
    if (!found) return notFound("no .nv_fatbin or __nv_relfatbin section: the file contains no CUDA device code");
  } else if (r.has(0, 4) && r.get<uint32_t>(0) == kFatbinMagic) {
    KFUSE_RETURN_IF_ERROR(parseFatbins(input, 0, input.size(), "fatbin", &out));
  } else {
    const std::string_view text(reinterpret_cast<const char*>(input.data()), input.size());
    if (text.find(".version") == std::string_view::npos)
      return badFormat("not an ELF file, a fatbin (magic 0xba55ed50) or PTX text");
    FatbinEntry e;
    e.kind = EntryKind::kPtx;
    e.container = "ptx";
    e.stored_size = e.size = input.size();
    e.kernels = ptxKernelNames(text);
    out.push_back(std::move(e));
    return out;
  }
  for (auto& e : out) {
    if (e.kind == EntryKind::kUnknown) continue;
    auto payload = extractEntry(input, e);
    if (!payload.ok()) return payload.status();
    if (e.size == 0) e.size = payload->size();
    if (e.kind == EntryKind::kPtx) {
      e.kernels = ptxKernelNames(*payload);
    } else {
      e.kernels = cubinKernelNames(
          std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(payload->data()), payload->size()));
    }
  }
  return out;
}

Expected<std::string> extractEntry(std::span<const uint8_t> input, const FatbinEntry& e) {
  Reader r(input);
  if (!r.has(e.offset, e.stored_size))
    return badFormat("entry payload at " + hex(e.offset) + " (" + std::to_string(e.stored_size) +
                     " bytes) extends past the end of the input");
  const auto src = input.subspan(e.offset, e.stored_size);
  std::string out;
  if (e.compression == Compression::kNone) {
    out.assign(reinterpret_cast<const char*>(src.data()), src.size());
  } else {
    auto d = decompress(src, e);
    if (!d.ok()) return d.status();
    out = std::move(d).value();
  }
  if (e.kind == EntryKind::kPtx) {
    while (!out.empty() && out.back() == '\0') out.pop_back();
  }
  return out;
}

std::string entryFileName(const FatbinEntry& e, std::string_view stem) {
  std::string s(stem);
  s += "." + std::to_string(e.fatbin_index) + "." + std::to_string(e.entry_index);
  if (e.arch) s += ".sm_" + std::to_string(e.arch);
  s += e.kind == EntryKind::kPtx ? ".ptx" : e.kind == EntryKind::kCubin ? ".cubin" : ".bin";
  return s;
}

std::string fatbinaryCompactPtx(std::string_view ptx) {
  std::string out;
  out.reserve(ptx.size());
  size_t pos = 0;
  while (pos <= ptx.size()) {
    size_t nl = ptx.find('\n', pos);
    const bool last = nl == std::string_view::npos;
    std::string_view line = ptx.substr(pos, last ? std::string_view::npos : nl - pos);
    if (size_t c = line.find("//"); c != std::string_view::npos) line = line.substr(0, c);
    size_t b = 0;
    while (b < line.size() && (line[b] == ' ' || line[b] == '\t')) ++b;
    // a run of blanks keeps only its first character; trailing blanks stay
    for (size_t i = b; i < line.size(); ++i) {
      const char c = line[i];
      const bool blank = c == ' ' || c == '\t';
      if (blank && i > b && (line[i - 1] == ' ' || line[i - 1] == '\t')) continue;
      out += c;
    }
    if (last) break;
    out += '\n';
    pos = nl + 1;
  }
  return out;
}

Expected<CubinInfo> readCubin(std::span<const uint8_t> d) {
  if (!isElf(d)) return badFormat("not a cubin: no ELF magic");
  uint16_t machine = 0;
  uint32_t eflags = 0;
  auto secs = readSections(d, &machine, &eflags);
  if (!secs.ok()) return secs.status();
  if (machine != kEmCuda)
    return badFormat("not a cubin: ELF machine " + std::to_string(machine) + " is not NVIDIA CUDA (190)");
  CubinInfo info;
  info.sm = (eflags >> 8) & 0xff;
  Reader r(d);
  for (const auto& s : *secs) {
    if (s.name.rfind(".nv.info.", 0) != 0) continue;
    if (!r.has(s.offset, s.size)) return badFormat("section " + s.name + " extends past the end of the cubin");
    CubinKernel k;
    k.name = s.name.substr(9);
    uint64_t p = s.offset;
    const uint64_t end = s.offset + s.size;
    while (p + 4 <= end) {
      const uint8_t fmt = d[p];
      const uint8_t attr = d[p + 1];
      if (fmt == 0x04) {  // EIFMT_SVAL: u16 size, then the value
        const uint16_t n = r.get<uint16_t>(p + 2);
        if (n > end - p - 4) return badFormat(s.name + ": attribute " + hex(attr) + " at " + hex(p) + " is truncated");
        const uint64_t v = p + 4;
        if (attr == 0x17 && n >= 12) {  // EIATTR_KPARAM_INFO
          CubinParam cp;
          cp.ordinal = r.get<uint16_t>(v + 4);
          cp.offset = r.get<uint16_t>(v + 6);
          const uint32_t bits = r.get<uint32_t>(v + 8);
          cp.log_align = bits & 0xff;
          cp.size = bits >> 18;
          k.params.push_back(cp);
        } else if (attr == 0x0a && n >= 8) {  // EIATTR_PARAM_CBANK: sym, u16 offset, u16 size
          k.param_bytes = r.get<uint16_t>(v + 6);
        }
        p += 4 + n;
      } else {
        if (fmt == 0x03 && attr == 0x19) k.param_bytes = r.get<uint16_t>(p + 2);    // EIATTR_CBANK_PARAM_SIZE
        if (fmt == 0x03 && attr == 0x1b) k.max_registers = r.get<uint16_t>(p + 2);  // EIATTR_MAXREG_COUNT
        if (fmt < 0x01 || fmt > 0x04)
          return badFormat(s.name + ": unknown attribute format " + hex(fmt) + " at " + hex(p));
        p += 4;
      }
    }
    std::sort(k.params.begin(), k.params.end(),
              [](const CubinParam& a, const CubinParam& b) { return a.ordinal < b.ordinal; });
    info.kernels.push_back(std::move(k));
  }
  std::sort(info.kernels.begin(), info.kernels.end(),
            [](const CubinKernel& a, const CubinKernel& b) { return a.name < b.name; });
  return info;
}

Expected<std::vector<uint8_t>> readBinaryFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return ioError(path + ": cannot open: " + std::strerror(errno));
  const std::streamoff size = in.tellg();
  if (size < 0) return ioError(path + ": cannot determine the size");
  if (size > (std::streamoff{1} << 31)) return unsupported(path + ": larger than 2 GiB");
  std::vector<uint8_t> data(static_cast<size_t>(size));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(data.data()), size);
  if (!in) return ioError(path + ": read failed");
  return data;
}

}  // namespace kfuse::ptx
