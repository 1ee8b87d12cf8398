// Analyses over one PTX function: CFG + dominators, def-use (reaching definitions), per-parameter access mode,
// affine (polynomial) address forms of global memory accesses with their guards, and a usage summary.
//
// Every analysis reads a Function it does not own; the Function must outlive the result and not change while it
// is used. Results are plain values. `FunctionAnalyses` computes each analysis on first request and caches it
// (the analysis cache a pass manager hands to passes). Not thread-safe; separate instances are independent.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kfuse/ptx/ir.h"
#include "kfuse/ptx/name_table.h"

namespace kfuse::ptx {

// ---------------------------------------------------------------------------------------------------------------
// CFG and dominators

struct BasicBlock {
  size_t begin = 0;        // first statement index (inclusive)
  size_t end = 0;          // one past the last statement
  std::string label;       // label at the block start, if any
  std::vector<int> succs;  // successor block ids
  std::vector<int> preds;
};

class Cfg {
 public:
  static Cfg build(const Function& f);
  const std::vector<BasicBlock>& blocks() const { return blocks_; }
  // Block containing statement `stmt` (every statement belongs to exactly one block).
  int blockOf(size_t stmt) const { return stmt < block_of_.size() ? block_of_[stmt] : -1; }
  // True when an indirect branch (brx.idx) or unknown target made edges conservative.
  bool hasIndirectBranch() const { return indirect_; }

 private:
  std::vector<BasicBlock> blocks_;
  std::vector<int> block_of_;
  bool indirect_ = false;
};

// Blocks that lie on a cycle of the CFG (an instruction there may run more than once per thread), by block id.
std::vector<char> blocksInLoops(const Cfg& cfg);

class Dominators {
 public:
  static Dominators compute(const Cfg& cfg);
  // Immediate dominator of block `b`; -1 for the entry and unreachable blocks.
  int idom(int b) const { return b >= 0 && static_cast<size_t>(b) < idom_.size() ? idom_[b] : -1; }
  bool dominates(int a, int b) const;
  bool reachable(int b) const { return b >= 0 && static_cast<size_t>(b) < reach_.size() && reach_[b]; }

 private:
  std::vector<int> idom_;
  std::vector<char> reach_;
  std::vector<int> pre_, post_;  // dominator-tree DFS numbering
};

// ---------------------------------------------------------------------------------------------------------------
// Def-use

// Registers an instruction writes and reads (guard included in uses; address bases are uses).
void instructionDefsUses(const Instruction& in, std::vector<std::string>* defs, std::vector<std::string>* uses);
// The same, as views of the names inside `in` (valid while `in` lives unchanged). Passes that visit every
// instruction of a long function use this one: it allocates nothing per register.
void instructionDefsUsesViews(const Instruction& in, std::vector<std::string_view>* defs,
                              std::vector<std::string_view>* uses);

// Reaching definitions. Keeps views of `f`'s register names: `f` must outlive the result and not change.
class DefUse {
 public:
  static DefUse compute(const Function& f, const Cfg& cfg);
  // Statements whose definition of `reg` may reach the point just before `stmt`.
  std::vector<size_t> reachingDefs(size_t stmt, std::string_view reg) const;
  // Statements that use the value of `reg` defined at `def_stmt`.
  std::vector<size_t> usersOf(size_t def_stmt, std::string_view reg) const;
  // All statements defining `reg`.
  std::vector<size_t> allDefs(std::string_view reg) const;
  // True when the function was too large for exact reaching definitions: reachingDefs() is then exact inside a
  // block (an unguarded definition before the statement in its block), else allDefs().
  bool approximate() const { return approximate_; }

 private:
  // Registers are numbered once per function, so the per-statement lists and per-register indexes below hold
  // integers: a function of tens of thousands of instructions would otherwise copy and hash a string per operand.
  int regId(std::string_view reg) const;  // -1 for a register the function never names
  std::vector<size_t> reachingDefsOf(size_t stmt, int reg) const;
  std::vector<size_t> allDefsOf(int reg) const;

  const Cfg* cfg_ = nullptr;
  NameTable reg_ids_;  // views into the function's operands
  // Registers written / read by statement i: def_regs_[def_begin_[i] .. def_begin_[i + 1]), likewise for uses.
  // A statement's def ids are its positions in def_regs_.
  std::vector<size_t> def_begin_, use_begin_;
  std::vector<int> def_regs_, use_regs_;
  std::vector<size_t> def_stmt_;  // def id -> statement
  std::vector<char> guarded_;     // statement has a guard predicate
  bool approximate_ = false;
  // The def ids of register r, in statement order: reg_defs_[reg_def_begin_[r] .. reg_def_begin_[r + 1]).
  std::vector<size_t> reg_def_begin_, reg_defs_;
  std::vector<std::vector<uint64_t>> block_in_;  // reaching-def bitsets at block entry
};

// ---------------------------------------------------------------------------------------------------------------
// Per-parameter access mode

enum class AccessMode : uint8_t {
  kNotAccessed,
  kRead,
  kWrite,
  kReadWrite,
  kUnknown,     // the pointer escapes (stored, passed to a call, address taken) or flows where we cannot follow
  kNotPointer,  // a by-value aggregate or a parameter narrower than a pointer
};
const char* accessModeName(AccessMode m);  // "not-accessed", "read", "write", "read-write", "unknown", ...

struct ParamAccess {
  std::string name;
  int index = 0;
  AccessMode mode = AccessMode::kNotAccessed;
  std::string reason;  // why the mode is kUnknown (first escape found), with its line
  int reads = 0;       // memory instructions reading through the pointer
  int writes = 0;
};

// `module` (optional) lets the analysis follow pointers passed to device functions defined in it; without it, or
// for calls it cannot follow (declaration only, indirect, recursive, deeper than 8), the pointer is kUnknown.
std::vector<ParamAccess> analyzeParamAccess(const Function& f, const Cfg& cfg, const DefUse& du,
                                            const Module* module = nullptr);

// ---------------------------------------------------------------------------------------------------------------
// Affine address forms

// A polynomial over atoms ("tid.x", "ctaid.x", "ntid.x", "nctaid.x", "param2", ...) with integer coefficients.
// Terms are keyed by the sorted list of atoms in the monomial; the empty key is the constant.
// An atom starting with kIterationPrefix ("iter:%r24@12") counts the steps a loop's induction variable has taken
// (a whole number >= 0, nothing else known): `i = gid; i < n; i += stride` reads at gid + stride * iter:...
inline constexpr const char* kIterationPrefix = "iter:";

// The terms of an AffineExpr: monomial (its sorted atoms) -> non-zero coefficient, ordered as a
// std::map<std::vector<std::string>, int64_t> would be (lexicographically by atom text; the constant, the empty
// monomial, first), with the same lookup interface. It keeps the terms in one sorted vector instead of a tree
// node each: a huge kernel keeps an address and an offset form for every access and a memoised form for every
// register an address reads, and the tree's per-node allocations were most of their bytes.
class AffineTerms {
 public:
  using key_type = std::vector<std::string>;
  using value_type = std::pair<key_type, int64_t>;
  using const_iterator = std::vector<value_type>::const_iterator;
  using iterator = const_iterator;  // keys cannot change in place (that would break the order)

  const_iterator begin() const { return terms_.begin(); }
  const_iterator end() const { return terms_.end(); }
  size_t size() const { return terms_.size(); }
  bool empty() const { return terms_.empty(); }

  const_iterator find(const key_type& k) const;
  size_t count(const key_type& k) const { return find(k) == end() ? 0 : 1; }
  // The coefficient of `k`; KFUSE_CHECK-fails when there is none (std::map::at throws).
  int64_t at(const key_type& k) const;
  // The coefficient of `k`, inserted as 0 when absent (valid until the next insertion or erasure).
  int64_t& operator[](const key_type& k);
  size_t erase(const key_type& k);
  const_iterator erase(const_iterator it) { return terms_.erase(it); }

  bool operator==(const AffineTerms& o) const = default;

 private:
  std::vector<value_type> terms_;  // sorted by key, keys unique
};

struct AffineExpr {
  AffineTerms terms;

  static AffineExpr constant(int64_t c);
  static AffineExpr atom(const std::string& a);
  AffineExpr operator+(const AffineExpr& o) const;
  AffineExpr operator-(const AffineExpr& o) const;
  AffineExpr operator*(const AffineExpr& o) const;
  int64_t constantTerm() const;
  int degree() const;
  bool isConstant() const { return degree() == 0; }
  // Canonical text: "param1 + 4*ctaid.x*ntid.x + 4*tid.x + 8" (params, ctaid, ntid, nctaid, tid order).
  std::string toString() const;
};

// One conjunct of an access's guard. `text` is always set (what reports show); when the conjunct is an integer
// comparison of two affine values it is also kept as structure, so that a proof can bind the launch's values and
// compare numbers rather than text.
enum class CmpOp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };
const char* cmpOpSymbol(CmpOp op);  // "==", "!=", "<", "<=", ">", ">="

struct GuardCondition {
  std::string text;
  bool structured = false;  // lhs, cmp, rhs, is_signed and bits below are valid
  AffineExpr lhs, rhs;      // values as the comparison reads them (mathematical, before wrapping to `bits`)
  CmpOp cmp = CmpOp::kEq;
  bool is_signed = true;  // signed comparison (.sNN types); unsigned for .uNN/.bNN and .lo/.ls/.hi/.hs
  int bits = 32;          // width of the compared type
};

struct MemoryAccess {
  size_t stmt = 0;               // statement index of the ld/st/atom
  uint32_t line = 0;             // source line of the instruction in the PTX
  std::string opcode;            // "ld.global.f32", as printed (for reports)
  Opcode op = Opcode::kUnknown;  // kLd, kSt, kAtom...
  bool is_read = false;
  bool is_write = false;
  uint32_t bytes = 0;                 // access width in bytes (0 if unknown)
  std::optional<AffineExpr> address;  // nullopt: not affine
  std::string not_affine_reason;
  int base_param = -1;                // pointer parameter the address is based on, -1 if none/unknown
  std::vector<int> pointer_params;    // pointer parameters the address derives from: {base_param} when known, else
                                      // those whose value flows into it (taint); empty: the address comes from
                                      // elsewhere (a module variable, loaded memory)
  std::optional<AffineExpr> offset;   // address - base_param value (bytes)
  std::vector<GuardCondition> guard;  // conjuncts that must hold for the access to execute
  // The guard is also sufficient: every conjunct is structured, and a thread for which they all hold reaches the
  // access (every path from the entry that takes the guards' branches the right way passes through it, and no
  // return or exit precedes it in its block). With !in_loop the access then runs exactly once in such a thread.
  bool guard_exact = false;
  bool in_loop = false;           // the access lies on a cycle of the CFG
  std::string guardText() const;  // conjuncts joined by " && ", "true" when unguarded
};

// Global-memory (and generic, when it derives from a parameter) loads, stores and atomics of `f`.
std::vector<MemoryAccess> analyzeMemoryAccesses(const Function& f, const Cfg& cfg, const Dominators& dom,
                                                const DefUse& du);

// ---------------------------------------------------------------------------------------------------------------
// Parameter influence

// The parameters whose values can change where a memory access falls, whether it runs, how often a loop runs,
// which branch is taken or which barrier is met: data flow over every operation (min, max, division, shifts,
// selects, predicates, values kept in local or shared memory), not only affine forms. A proof that binds a launch's
// argument values is valid for another launch only where these arguments are equal (launch shapes aside).
// Sound over-approximation: a parameter that flows only into stored data is left out.
struct ParamInfluence {
  std::vector<int> params;  // parameter indices, ascending
  // Of those, the parameters whose absolute value matters, not only where they point inside their allocation:
  // a pointer masked, shifted, compared with or subtracted from another pointer, stored, on the way to an
  // address, guard or branch (a proof must pin its exact value).
  std::vector<int> absolute;
  // %dynamic_smem_size or %total_smem_size (which both follow the launch's dynamic shared memory size) reaches an
  // address, guard or branch; the function reads either at all.
  bool dynamic_shared_size = false;
  bool reads_dynamic_shared_size = false;
};
ParamInfluence analyzeParamInfluence(const Function& f);

// ---------------------------------------------------------------------------------------------------------------
// Usage summary

struct UsageSummary {
  uint64_t static_shared_bytes = 0;
  bool dynamic_shared = false;  // uses an `.extern .shared` array
  uint64_t local_bytes = 0;     // .local declarations
  int local_accesses = 0;       // ld/st.local
  int barriers = 0;             // bar.sync / barrier.sync / bar.red / bar.arrive
  int atomics = 0;              // atom / red
  int shuffles = 0;             // shfl
  int votes = 0;                // vote / match / redux / activemask
  bool grid_sync = false;       // cooperative-groups grid barrier (reads %envreg1/2 grid workspace)
  bool printf = false;          // calls vprintf
  int textures = 0;             // tex / tld4 / txq / suld / sust / sured
  int tensor_ops = 0;           // mma / wmma / wgmma
  int async_copies = 0;         // cp.async*
  int instructions = 0;
  std::vector<std::string> callees;  // direct call targets, deduplicated
  bool indirect_calls = false;
};

UsageSummary summarizeUsage(const Module* m, const Function& f);

// ---------------------------------------------------------------------------------------------------------------
// Cached analyses of one function.

class FunctionAnalyses {
 public:
  static constexpr const char* kCfg = "cfg";
  static constexpr const char* kDominators = "dominators";
  static constexpr const char* kDefUse = "def-use";
  static constexpr const char* kParamAccess = "param-access";
  static constexpr const char* kMemoryAccess = "memory-access";
  static constexpr const char* kUsage = "usage";

  // `module` may be null; both must outlive this object.
  FunctionAnalyses(const Module* module, const Function& f) : module_(module), f_(f) {}
  const Function& function() const { return f_; }
  const Cfg& cfg();
  const Dominators& dominators();
  const DefUse& defUse();
  const std::vector<ParamAccess>& paramAccess();
  const std::vector<MemoryAccess>& memoryAccesses();
  const UsageSummary& usage();
  // Drops every cached result (call after the function changed).
  void invalidate();

 private:
  const Module* module_;
  const Function& f_;
  std::unique_ptr<Cfg> cfg_;
  std::unique_ptr<Dominators> dom_;
  std::unique_ptr<DefUse> du_;
  std::unique_ptr<std::vector<ParamAccess>> access_;
  std::unique_ptr<std::vector<MemoryAccess>> mem_;
  std::unique_ptr<UsageSummary> usage_;
};

}  // namespace kfuse::ptx
