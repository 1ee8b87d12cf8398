// The fusion transforms behind the passes: each edits one ptx::Module in place and says how the fused kernel's
// parameters and launch shape map to the original launches. The rewrite driver (rewrite.h) and the passes of
// pass.h call these; both keep the result for the plan.
//
// Preconditions are the analyzer's: a vertical chain was proven thread-local for the launches it will replace,
// horizontal kernels are independent. The transforms check what they can see in the PTX (grid-wide sync, calls
// the fused kernel cannot keep, conflicting .reqntid) and refuse with a reason; they never weaken a proof.
// The transforms do not re-verify what they produce (a pass manager verifies after every pass, and so does the
// rewrite driver); tests verify explicitly. Pure functions of their inputs; thread-safe on distinct modules.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kfuse/core/enum_names.h"
#include "kfuse/core/status.h"
#include "kfuse/core/trace.h"
#include "kfuse/ptx/ir.h"

namespace kfuse::rewriter {

// Argument `param` of the `kernel`-th launch of a pattern (0-based, in launch order).
struct ArgRef {
  int kernel = 0;
  int param = 0;
  friend bool operator==(const ArgRef&, const ArgRef&) = default;
  friend auto operator<=>(const ArgRef&, const ArgRef&) = default;
};

// One parameter of a fused kernel: its PTX name and the original arguments whose value it takes (all equal at
// every launch the plan replaces; the first is the one the injector reads).
struct FusedParam {
  std::string name;
  std::vector<ArgRef> sources;
};

// What a fusion produced.
struct FusionResult {
  std::string fused_name;
  std::vector<FusedParam> params;  // in the fused kernel's parameter order
  core::LaunchShape shape;         // the fused launch (vertical: the originals' shape)
  // Horizontal layouts: where each original kernel runs inside the fused launch. Block-partitioned: blocks
  // [first_block, first_block + blocks); thread-partitioned: threads [first_thread, first_thread + threads) of
  // every block (blocks beyond the kernel's own grid skip its part).
  struct Part {
    int kernel = 0;
    uint64_t first_block = 0, blocks = 0;
    uint32_t first_thread = 0, threads = 0;
    int barrier_id = -1;  // named barrier the kernel's bar.sync became (-1: none)
  };
  std::vector<Part> parts;
  int forwarded_loads = 0;              // loads replaced by the register an earlier part stored
  int dropped_stores = 0;               // --aggressive: stores of intermediates removed
  std::vector<ArgRef> dropped_buffers;  // the intermediates whose stores were removed
  std::vector<std::string> notes;       // decisions worth showing (one line each)
};

// ---- vertical ----

struct VerticalFusion {
  std::vector<std::string> kernels;  // .entry names in the module, in launch order (2 or more)
  std::string fused_name;            // "" = "kfuse_vertical_" + the kernels' names joined
  // Arguments equal at every launch the plan replaces: each pair becomes one fused parameter.
  std::vector<std::pair<ArgRef, ArgRef>> equal_args;
  bool forward_stores = true;       // replace a later part's load of what an earlier part stored by the register
  bool params_disjoint = false;     // distinct pointer parameters never overlap (the plan's no_overlap predicate):
                                    // a store through one does not stop forwarding through another
  std::vector<ArgRef> drop_stores;  // --aggressive: intermediates whose stores are removed (all their loads must
                                    // have been forwarded, else the fusion is refused)
  // Block-level fusion (the analyzer proved no block's later part touches what another block's earlier part
  // touches): a block barrier (bar.sync 0) between the parts, which every thread reaches because the earlier parts'
  // returns branch to it and earlier parts may hold no barrier of their own. Store-to-load forwarding is off: a
  // later part's threads read what other threads of the block wrote.
  bool block_barrier = false;
};

// Adds the fused .entry to `module` (the originals stay). Each part runs for the same thread in order; a part's
// ret/exit becomes a branch to the next part; registers, labels and body-local variables are renamed apart;
// `.nc`/`ldu` loads of buffers the fused kernel writes become plain loads.
Expected<FusionResult> fuseVertical(ptx::Module& module, const VerticalFusion& spec);

// ---- epilogue (element-remapped vertical) ----

// A producer of any launch shape followed by element-wise 1-D consumers (analyzer::EpilogueMap gives the element
// map, proven for the launches the plan replaces). Element e of the intermediate is at the consumer's argument
// `consumer_param` + consumer_offset + e * element_bytes; the producer writes it with its one store through
// parameter `producer_param`.
struct EpilogueFusion {
  std::string producer;                // .entry names
  std::vector<std::string> consumers;  // in launch order
  std::string fused_name;              // "" = "kfuse_epilogue_" + the kernels' names joined
  std::vector<std::pair<ArgRef, ArgRef>> equal_args;
  int producer_param = -1;
  int consumer = 1;  // pattern position (1-based among all kernels: the producer is 0)
  int consumer_param = -1;
  int64_t consumer_offset = 0;
  uint32_t element_bytes = 0;
  core::LaunchShape consumer_shape;  // the consumers' recorded launch (1-D)
  // Consumers that are grid-stride loops run as one element per thread (ptx::elementPerThread), consumer_shape then
  // being that view's launch (analyzer::EpilogueMap::element_grid blocks); at least one consumer must be one.
  bool element_per_thread = false;
  // The producer is a grid-stride loop run as one element per thread (analyzer::EpilogueMap::producer_grid): the
  // fused kernel runs on that view's launch.
  bool producer_element_per_thread = false;
};

// Adds the fused .entry to `module`: the producer's body; right after its store to the intermediate, the thread
// computes e from the store's address, skips unless 0 <= e < the consumers' thread count, and runs each consumer's
// body as consumer thread e (%tid.x = e % ntid, %ctaid.x = e / ntid, the launch's sizes as constants; y and z
// indices 0). Refuses producers whose store is not unique or lies in a loop, consumers with barriers, `exit`,
// calls or special registers other than the thread and block indices and sizes.
Expected<FusionResult> fuseEpilogue(ptx::Module& module, const EpilogueFusion& spec);

// ---- prologue (an element-wise producer recomputed at the consumer's loads) ----

// An element-wise 1-D producer whose thread p writes element p of the intermediate (elements kp to kp + k - 1 with a
// vector store of k = producer_lanes), and a consumer of any launch shape that loads it (analyzer::EpilogueMap with
// consumer 1, proven for the launches the plan replaces). Element e is at the consumer's argument `consumer_param` +
// consumer_offset + e * element_bytes; the producer writes it with its one store through parameter `producer_param`.
struct PrologueFusion {
  std::string producer, consumer;  // .entry names
  std::string fused_name;          // "" = "kfuse_prologue_" + the kernels' names joined
  std::vector<std::pair<ArgRef, ArgRef>> equal_args;
  int producer_param = -1;
  int consumer_param = -1;
  int64_t consumer_offset = 0;
  uint32_t element_bytes = 0;
  uint32_t producer_lanes = 1;       // elements each producer thread stores (a vector store of 2 or 4)
  core::LaunchShape producer_shape;  // the producer's recorded launch (1-D)
  core::LaunchShape consumer_shape;  // the consumer's: the fused launch
  // The producer is a grid-stride loop run as one element per thread (ptx::elementPerThread), producer_shape being
  // that view's launch (analyzer::EpilogueMap::element_grid blocks).
  bool element_per_thread = false;
  // Whether the fused kernel still writes the intermediate (the producer's threads, strided over the fused
  // launch's threads, before the consumer's body). false (--aggressive, the trace shows nobody reads it later):
  // only the consumer's loads compute it.
  bool write_intermediate = true;
};

// Adds the fused .entry to `module`, run in the consumer's launch: (when write_intermediate) a loop over the
// producer's threads p = flat thread index, + the fused launch's thread count, ..., each running the producer's
// body as its thread p; then the consumer's body, each load through `consumer_param` replaced by the producer's
// body run as thread e / k, e = (load address - element 0's address) / element_bytes, its store to the intermediate
// becoming a move into the load's register (of lane e % k of a vector store) (a load outside the producer's threads,
// which the proof rules out, stays a load). Refuses producers with barriers, `exit`, calls, special registers other
// than the thread and block indices and sizes, more than one store or a store in a loop, consumer loads of anything but
// one element or a vector of 2 or 4 (each lane computed by its own copy), or through an address that derives from
// another pointer too, and launches of 2^32 threads or more.
Expected<FusionResult> fusePrologue(ptx::Module& module, const PrologueFusion& spec);

// ---- horizontal ----

enum class HorizontalLayout {
  kBlockPartitioned,   // blocks [0, nA) run A, [nA, nA+nB) run B; %ctaid/%nctaid rewritten per part
  kThreadPartitioned,  // threads [0, tA) of each block run A, [tA, tA+tB) run B; %tid/%ntid rewritten and each
                       // part's bar.sync becomes a named barrier counting only its own threads
};
inline constexpr core::EnumName<HorizontalLayout> kHorizontalLayoutNames[] = {
    {HorizontalLayout::kBlockPartitioned, "block-partitioned"},
    {HorizontalLayout::kThreadPartitioned, "thread-partitioned"}};
constexpr std::span<const core::EnumName<HorizontalLayout>> nameTable(HorizontalLayout) {
  return kHorizontalLayoutNames;
}
inline const char* horizontalLayoutName(HorizontalLayout l) {
  return core::enumName(l);
}

struct HorizontalFusion {
  std::vector<std::string> kernels;       // .entry names, 2 or more
  std::vector<core::LaunchShape> shapes;  // each kernel's recorded launch shape (same order)
  HorizontalLayout layout = HorizontalLayout::kBlockPartitioned;
  std::string fused_name;  // "" = "kfuse_horizontal_" + names joined
  std::vector<std::pair<ArgRef, ArgRef>> equal_args;
};

// Adds the fused .entry to `module`. Shared memory of the parts is laid out side by side (thread-partitioned) or
// overlaid (block-partitioned: a block runs one part only).
Expected<FusionResult> fuseHorizontal(ptx::Module& module, const HorizontalFusion& spec);

// ---- modules ----

// Where an item of input module `module` ended up in the merged module.
struct Rename {
  size_t module = 0;
  std::string from, to;
};

// Merges modules into one: the highest .version, one .target (the highest sm_ of the inputs, or `target` when
// given), .address_size 64; module variables, .func callees and .extern declarations of all inputs, renamed on
// collision (identical definitions are kept once), initialisers kept; entries renamed on collision too.
Expected<ptx::Module> mergeModules(const std::vector<ptx::Module>& modules, std::vector<Rename>* renames,
                                   const std::string& target = "");

// ---- cleanup ----

struct CleanupStats {
  int removed_instructions = 0;
  int removed_params = 0;
  int removed_declarations = 0;
};
// Dead-code elimination (instructions without side effects whose results are never read), unused parameters and
// unused register/variable declarations of entry `name`. Removing parameters changes the kernel's signature:
// callers (the plan) must use `kept_params` (the surviving original parameter indices, in order) when given.
Expected<CleanupStats> cleanupFunction(ptx::Module& module, const std::string& name, bool remove_params,
                                       std::vector<int>* kept_params = nullptr);

}  // namespace kfuse::rewriter
