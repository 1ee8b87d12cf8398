// Grid-stride kernels as one element per thread, for the element-remapped fusions (epilogue, prologue).
//
// A grid-stride kernel (ptx::GridStrideLoop) launched on G blocks of B threads runs its loop body once for each
// i in [0, n), thread i mod (G * B) taking the i's of its residue class one after the other. The same body run
// once per thread with i = the thread's index (KernelFacts::element_view) on ceil(n / B) blocks of B threads does
// the same work, provided no two iterations touch a common byte with one of them writing: then their order does not
// matter. elementPart checks that for one launch's arguments, with the thread-locality proof over the element view's
// access forms (two different i's are two different threads there), and that n and G * B keep i below 2^31, where
// the index arithmetic is exact; it returns the part the epilogue and prologue checks then judge as they judge any
// element-wise kernel.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "legality/epilogue.h"

namespace kfuse::analyzer::gridstride {

struct ElementPart {
  std::optional<epilogue::Part> part;  // the element view on its launch; empty when `why` says why not
  std::string why;                     // empty when the kernel is not a grid-stride kernel at all
};

// `p` as one element per thread when its kernel is a grid-stride loop (KernelFacts::element_view).
ElementPart elementPart(const epilogue::Part& p);

// The loop's bound n for a launch's argument values (the product of the view's bound parameters); nullopt when an
// argument is not known or the product leaves [0, 2^31).
std::optional<int64_t> boundValue(const KernelFacts::ElementView& v, const std::map<std::string, int64_t>& values);

// "argument 2", "arguments 2 and 3": the parameters n is made of.
std::string boundArguments(const KernelFacts::ElementView& v);

}  // namespace kfuse::analyzer::gridstride
