#include "kfuse/hooks/module_image.h"

#include <elf.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>

namespace kfuse::hooks {

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
