#include "kfuse/hooks/module_image.h"

#include <elf.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>
#include <string_view>

namespace kfuse::hooks {
namespace {

using Counts = std::unordered_map<std::string, uint32_t>;

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

bool identifierChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$';
}

// PTX text: `.entry NAME ( .param ..., .param ... )`; comments and quoted strings (`.file`) are skipped.
void ptxCounts(std::string_view t, Counts& out) {
  size_t i = 0;
  auto skipBlankAndComments = [&] {
    while (i < t.size()) {
      if (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r') {
        ++i;
      } else if (t.compare(i, 2, "//") == 0) {
        i = std::min(t.find('\n', i), t.size());
      } else if (t.compare(i, 2, "/*") == 0) {
        const size_t end = t.find("*/", i + 2);
        i = end == std::string_view::npos ? t.size() : end + 2;
      } else {
        return;
      }
    }
  };
  while (i < t.size()) {
    skipBlankAndComments();
    if (i >= t.size()) break;
    if (t[i] == '"') {
      const size_t end = t.find('"', i + 1);
      i = end == std::string_view::npos ? t.size() : end + 1;
      continue;
    }
    if (t[i] != '.' || t.compare(i, 6, ".entry") != 0 || (i + 6 < t.size() && identifierChar(t[i + 6]))) {
      do {
        ++i;
      } while (i < t.size() && identifierChar(t[i]));
      continue;
    }
    i += 6;
    skipBlankAndComments();
    const size_t name_start = i;
    while (i < t.size() && identifierChar(t[i])) ++i;
    if (i == name_start) continue;
    const std::string_view name = t.substr(name_start, i - name_start);
    skipBlankAndComments();
    uint32_t params = 0;
    if (i < t.size() && t[i] == '(') {
      ++i;
      bool closed = false;
      while (i < t.size()) {
        skipBlankAndComments();
        if (i >= t.size()) break;
        if (t[i] == ')') {
          closed = true;
          ++i;
          break;
        }
        if (t.compare(i, 6, ".param") == 0 && (i + 6 >= t.size() || !identifierChar(t[i + 6]))) ++params;
        do {
          ++i;
        } while (i < t.size() && identifierChar(t[i]));
      }
      if (!closed) return;  // truncated: no count for this kernel or any after it
    }
    out.emplace(std::string(name), params);
  }
}

// An ELF cubin: each `.nv.info.<kernel>` section is a list of attribute records (`u8 format, u8 attribute`, then
// for format 0x04 a `u16 size` and that many bytes, else a 2-byte value). One EIATTR_KPARAM_INFO (0x17) per
// parameter. A kernel whose section holds parameter bytes (EIATTR_PARAM_CBANK 0x0a, EIATTR_CBANK_PARAM_SIZE 0x19)
// but no KPARAM_INFO, or any record this reader does not know the shape of, is left out.
void cubinCounts(const uint8_t* d, uint64_t size, Counts& out) {
  if (size < sizeof(Elf64_Ehdr) || std::memcmp(d, ELFMAG, SELFMAG) != 0 || d[EI_CLASS] != ELFCLASS64) return;
  const auto eh = load<Elf64_Ehdr>(d);
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > size ||
      uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr) > size - eh.e_shoff || eh.e_shstrndx >= eh.e_shnum)
    return;
  auto section = [&](uint16_t i) { return load<Elf64_Shdr>(d + eh.e_shoff + uint64_t{i} * sizeof(Elf64_Shdr)); };
  auto inside = [&](const Elf64_Shdr& sh) { return sh.sh_offset <= size && sh.sh_size <= size - sh.sh_offset; };
  const Elf64_Shdr names = section(eh.e_shstrndx);
  if (!inside(names)) return;
  constexpr std::string_view kInfo = ".nv.info.";
  for (uint16_t i = 0; i < eh.e_shnum; ++i) {
    const Elf64_Shdr sh = section(i);
    if (sh.sh_name >= names.sh_size || !inside(sh)) continue;
    const char* n = reinterpret_cast<const char*>(d + names.sh_offset + sh.sh_name);
    const std::string_view name(n, strnlen(n, names.sh_size - sh.sh_name));
    if (name.size() <= kInfo.size() || name.substr(0, kInfo.size()) != kInfo) continue;
    uint32_t params = 0;
    bool param_bytes = false, known = true;
    for (uint64_t p = sh.sh_offset, end = sh.sh_offset + sh.sh_size; p + 4 <= end && known;) {
      const uint8_t format = d[p], attribute = d[p + 1];
      if (format == 0x04) {
        const uint16_t n_bytes = load<uint16_t>(d + p + 2);
        if (n_bytes > end - p - 4) known = false;
        if (attribute == 0x17) ++params;
        if (attribute == 0x0a && n_bytes >= 8 && load<uint16_t>(d + p + 4 + 6) > 0) param_bytes = true;
        p += 4 + uint64_t{n_bytes};
      } else if (format >= 0x01 && format <= 0x03) {
        if (attribute == 0x19 && load<uint16_t>(d + p + 2) > 0) param_bytes = true;
        p += 4;
      } else {
        known = false;
      }
    }
    if (known && (params > 0 || !param_bytes)) out.emplace(std::string(name.substr(kInfo.size())), params);
  }
}

// A fatbin: a 16-byte header (u32 magic, u16 version, u16 header size, u64 payload size), then entries, each a
// header (u16 kind: 1 PTX, 2 ELF; u32 header size at +4; u64 padded payload size at +8; u64 flags at +40: 0x2000
// LZ4, 0x8000 zstd; u64 uncompressed size at +56, 0 when stored raw) and its payload.
void fatbinCounts(const uint8_t* d, uint64_t size, Counts& out) {
  if (size < 16) return;
  const uint16_t header = load<uint16_t>(d + 6);
  const uint64_t end = std::min<uint64_t>(size, header + load<uint64_t>(d + 8));
  for (uint64_t e = header; e < end && end - e >= 64;) {
    const uint16_t kind = load<uint16_t>(d + e);
    const uint32_t entry_header = load<uint32_t>(d + e + 4);
    const uint64_t padded = load<uint64_t>(d + e + 8);
    const uint64_t flags = load<uint64_t>(d + e + 40);
    const uint64_t raw = load<uint64_t>(d + e + 56);
    if (entry_header < 64 || entry_header > end - e || padded > end - e - entry_header) return;
    const uint8_t* payload = d + e + entry_header;
    const uint64_t n = raw && raw <= padded ? raw : padded;
    if ((flags & (0x2000 | 0x8000)) == 0) {
      if (kind == 1)
        ptxCounts(std::string_view(reinterpret_cast<const char*>(payload),
                                   strnlen(reinterpret_cast<const char*>(payload), n)),
                  out);
      if (kind == 2) cubinCounts(payload, n, out);
    }
    e += entry_header + padded;
  }
}

}  // namespace

std::unordered_map<std::string, uint32_t> kernelParamCounts(const ImageInfo& image) {
  Counts out;
  if (!image.data || image.size == 0) return out;
  try {
    switch (image.kind) {
      case core::ImageKind::kPtx:
        ptxCounts(std::string_view(reinterpret_cast<const char*>(image.data),
                                   strnlen(reinterpret_cast<const char*>(image.data), image.size)),
                  out);
        break;
      case core::ImageKind::kCubin: cubinCounts(image.data, image.size, out); break;
      case core::ImageKind::kFatbin: fatbinCounts(image.data, image.size, out); break;
      default: break;
    }
  } catch (const std::bad_alloc&) {
    out.clear();
  }
  return out;
}

ImageInfo inspectModuleImage(const void* image) {
  ImageInfo info;
  if (!image) return info;
  const auto* p = static_cast<const uint8_t*>(image);
  uint32_t magic;
  std::memcpy(&magic, p, 4);
  if (magic == 0x466243B1u) {  // __fatBinC_Wrapper_t { int magic; int version; const u64* data; void* }
    const uint8_t* data;
    std::memcpy(&data, p + 8, sizeof data);
    return data ? inspectModuleImage(data) : info;
  }
  if (magic == 0xBA55ED50u) {  // fatbin header: u32 magic, u16 version, u16 header size, u64 payload size
    uint16_t header_size;
    uint64_t fat_size;
    std::memcpy(&header_size, p + 6, 2);
    std::memcpy(&fat_size, p + 8, 8);
    info.kind = core::ImageKind::kFatbin;
    info.data = p;
    info.size = header_size + fat_size;
    return info;
  }
  if (std::memcmp(p, ELFMAG, SELFMAG) == 0 && p[EI_CLASS] == ELFCLASS64) {
    Elf64_Ehdr eh;
    std::memcpy(&eh, p, sizeof eh);
    uint64_t end = sizeof eh;
    end = std::max<uint64_t>(end, eh.e_shoff + uint64_t{eh.e_shnum} * eh.e_shentsize);
    end = std::max<uint64_t>(end, eh.e_phoff + uint64_t{eh.e_phnum} * eh.e_phentsize);
    // Section contents may follow the header table: take the furthest section end.
    for (uint16_t i = 0; i < eh.e_shnum && eh.e_shentsize == sizeof(Elf64_Shdr); ++i) {
      Elf64_Shdr sh;
      std::memcpy(&sh, p + eh.e_shoff + uint64_t{i} * sizeof sh, sizeof sh);
      if (sh.sh_type != SHT_NOBITS) end = std::max<uint64_t>(end, sh.sh_offset + sh.sh_size);
    }
    info.kind = core::ImageKind::kCubin;
    info.data = p;
    info.size = end;
    return info;
  }
  // NUL-terminated PTX text.
  const size_t n = strnlen(reinterpret_cast<const char*>(p), size_t{1} << 30);
  info.kind = core::ImageKind::kPtx;
  info.data = p;
  info.size = n + 1;
  return info;
}

std::vector<uint8_t> readModuleFile(const char* path, uint64_t max_bytes) {
  std::vector<uint8_t> bytes;
  if (!path) return bytes;
  FILE* f = std::fopen(path, "rb");
  if (!f) return bytes;
  try {
    uint8_t chunk[1 << 16];
    for (size_t n; (n = std::fread(chunk, 1, sizeof chunk, f)) > 0;) {
      if (bytes.size() + n > max_bytes) {
        bytes.clear();
        break;
      }
      bytes.insert(bytes.end(), chunk, chunk + n);
    }
    if (!bytes.empty() && !std::ferror(f)) bytes.push_back(0);
    if (std::ferror(f)) bytes.clear();
  } catch (const std::bad_alloc&) {
    bytes.clear();
  }
  std::fclose(f);
  return bytes;
}

}  // namespace kfuse::hooks
