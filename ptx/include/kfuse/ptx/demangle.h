// Kernel names: demangling (the C++ runtime's abi::__cxa_demangle) and parameter types read from the mangled
// name, a second source of access-mode hints (`PKf` -> pointer to const float -> the kernel should only read
// through it). Thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kfuse/core/status.h"
#include "kfuse/ptx/analysis.h"

namespace kfuse::ptx {

// The demangled name, or `mangled` unchanged when it is not a mangled C++ name (extern "C" kernels).
std::string demangle(std::string_view mangled);

struct ParamType {
  std::string text;            // as the demangler prints it: "float const*"
  bool is_pointer = false;     // T* (possibly T* const / T* __restrict)
  bool is_reference = false;   // T& / T&&
  bool pointee_const = false;  // pointer/reference to const
  std::string pointee;         // "float" (without const) for pointers and references, empty otherwise
};

struct KernelSignature {
  std::string demangled;  // "void stencil<float, 1>(float const*, float*, int)"
  std::string name;       // "stencil<float, 1>" (qualified, without return type and parameters)
  std::vector<ParamType> params;
};

// kNotFound when `mangled` is not a mangled C++ function name.
Expected<KernelSignature> parseMangledSignature(std::string_view mangled);

// What the declared type says about a parameter: kRead for pointers/references to const, nullopt otherwise
// (a non-const pointer may be read, written or both).
std::optional<AccessMode> accessHint(const ParamType& type);

}  // namespace kfuse::ptx
