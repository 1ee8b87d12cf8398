// What a module image handed to cuModuleLoadData & co is, and how long: the collector stores it, the injector
// hashes it (a kernel's identity is its mangled name and the SHA-256 of its module image). Part of the hooking
// layer; depends on nothing but the C library and the trace model's enums. Thread-safe (pure).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "kfuse/core/trace.h"

namespace kfuse::hooks {

// Classifies a module image given to cuModuleLoadData & co and finds its size (NUL-terminated PTX, ELF cubin,
// fatbin or fatbin wrapper). Size 0 if it cannot tell.
struct ImageInfo {
  core::ImageKind kind = core::ImageKind::kUnknown;
  const uint8_t* data = nullptr;
  uint64_t size = 0;
};
ImageInfo inspectModuleImage(const void* image);

// How many parameters each kernel of a module image takes, read from the image itself: CUDA 13.0's driver has no
// count query, so the recorder asks cuFuncGetParamInfo for exactly these indices instead of probing past the last
// one (a refused query shows as an API error in the user's program under compute-sanitizer). PTX: the `.param`s of
// each `.entry`; cubin: the EIATTR_KPARAM_INFO records of each `.nv.info.<kernel>` section; fatbin: those of its
// uncompressed entries (compressed ones are skipped). A kernel the image does not describe, or describes in a way
// this reader does not know, is absent. Reads only [image.data, image.data + image.size). Allocates; throws nothing
// (empty when memory runs out). Thread-safe (pure).
std::unordered_map<std::string, uint32_t> kernelParamCounts(const ImageInfo& image);

// The contents of a module file given to cuModuleLoad (PTX, cubin or fatbin), followed by a NUL so that a PTX
// image reads as the text cuModuleLoadData would have been given; empty when the file cannot be read or is larger
// than `max_bytes`. Allocates; throws nothing.
std::vector<uint8_t> readModuleFile(const char* path, uint64_t max_bytes);

}  // namespace kfuse::hooks
