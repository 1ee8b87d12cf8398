// PTX intermediate representation: a module of directives, module-scope variables and functions whose bodies
// are flat lists of statements (instructions, labels, declarations, verbatim directives, `{`/`}` scopes).
//
// The IR is a plain value type: it owns all of its strings, can be copied and edited freely, and holds no
// pointers into the text it was parsed from. It keeps what the PTX means, not how it was spelled: comments and
// whitespace are dropped; `.loc`, `.file`, `.pragma`, `.section .debug_*` blocks and call prototypes are kept as
// verbatim text. Not thread-safe to mutate from several threads; const access from many threads is fine.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kfuse/core/status.h"
#include "kfuse/ptx/opcodes.h"

namespace kfuse::ptx {

// 1-based line and column in the parsed text; 0 when the object was built by code.
struct SourceLoc {
  uint32_t line = 0;
  uint32_t column = 0;
};

enum class OperandKind : uint8_t {
  kRegister,   // %r1, %tid.x, %p1 (a name starting with '%')
  kImmediate,  // 42, -4, 0x1F, 0f3F800000, 0d3FF0000000000000 (text kept verbatim)
  kSymbol,     // a label, parameter, variable or function name (optionally `sym+offset`)
  kAddress,    // [base], [base+off], [tex, {coords}]: elements[0] is the base
  kVector,     // {a, b, c, d}
  kList,       // (a, b) in `call` argument/return lists
  kSink,       // `_`
};

// A T held out of line, with value semantics: copying copies the T, moving moves the pointer. An empty one (the
// default) reads as a default-constructed T; mut() creates the T to write it. For what few of a huge kernel's
// statements carry: a Statement's VariableDecl (a declaration is a few statements of a function, an instruction the
// rest; inline it made every statement about 190 bytes larger), an Instruction's spellings the enums do not model,
// the second register of an Operand's `%p|%q` pair (only setp writes one; inline it cost every operand 24 bytes).
template <class T>
class Indirect {
 public:
  Indirect() = default;
  Indirect(T v) : p_(std::make_unique<T>(std::move(v))) {}  // NOLINT(google-explicit-constructor): a value
  Indirect(const Indirect& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
  Indirect(Indirect&&) noexcept = default;
  Indirect& operator=(const Indirect& o) {
    if (this != &o) p_ = o.p_ ? std::make_unique<T>(*o.p_) : nullptr;
    return *this;
  }
  Indirect& operator=(Indirect&&) noexcept = default;
  Indirect& operator=(T v) {
    p_ = std::make_unique<T>(std::move(v));
    return *this;
  }
  ~Indirect() = default;

  // Reading never allocates (an empty one reads as a default T), so statements shared between threads stay
  // read-only; writing goes through mut(), which makes the value when there is none.
  const T& operator*() const { return p_ ? *p_ : empty(); }
  const T* operator->() const { return &**this; }
  T& mut() {
    if (!p_) p_ = std::make_unique<T>();
    return *p_;
  }

 private:
  static const T& empty() {
    static const T kEmpty{};
    return kEmpty;
  }
  std::unique_ptr<T> p_;
};

// Fields are ordered so that the two one-byte ones share a word, and the rare pair is held out of line: a kernel
// of a million instructions holds about three million operands.
struct Operand {
  OperandKind kind = OperandKind::kImmediate;
  bool negated = false;           // `!%p`
  int64_t offset = 0;             // kAddress / kSymbol: constant byte offset added to the base
  std::string name;               // register/symbol name or immediate text
  Indirect<std::string> pair;     // second register of a `%p|%q` destination pair (setp only), else empty
  std::vector<Operand> elements;  // kAddress (base first), kVector, kList

  static Operand reg(std::string n) {
    Operand o;
    o.kind = OperandKind::kRegister;
    o.name = std::move(n);
    return o;
  }
  static Operand imm(std::string t) {
    Operand o;
    o.kind = OperandKind::kImmediate;
    o.name = std::move(t);
    return o;
  }
  static Operand sym(std::string n) {
    Operand o;
    o.kind = OperandKind::kSymbol;
    o.name = std::move(n);
    return o;
  }

  bool isRegister() const { return kind == OperandKind::kRegister; }
  // The integer value of a decimal/hex/octal integer immediate, if it is one.
  std::optional<int64_t> intValue() const;
};

// One instruction, typed: the opcode, state space, data types and modifiers are enums (kfuse/ptx/opcodes.h)
// parsed once; `modifiers` keeps every dotted component after the opcode in the order written, so the printer
// reproduces `ld.global.nc.v4.f32` exactly. Components the enums do not model stay as text in
// `spelled->other_modifiers` (a kOther modifier indexes it); an opcode newer than the enum list is kUnknown with
// its spelling in `spelled->unknown_opcode`, so new instructions still parse and print.
struct InstructionSpellings {
  std::string unknown_opcode;                // spelling of a kUnknown opcode: "tcgen06"
  std::vector<std::string> other_modifiers;  // spellings (with the dot) of kOther modifiers: ".L2::cache_hint"
};

struct Instruction {
  std::string guard;  // predicate register of `@%p` / `@!%p`, empty if unguarded
  bool guard_negated = false;
  Opcode opcode = Opcode::kUnknown;
  Indirect<InstructionSpellings> spelled;  // what the enums do not model (most instructions have none)
  std::vector<Modifier> modifiers;         // in the order written
  std::vector<Operand> operands;
  SourceLoc loc;

  bool has(Mod m) const;
  // Exact space (`.shared` does not match `.shared::cta`); see hasBaseSpace() for the family.
  bool has(StateSpace s) const;
  bool has(DataType t) const;
  // Whether some state-space modifier belongs to `base` (`.shared`, `.shared::cta`, `.shared::cluster`).
  bool hasBaseSpace(StateSpace base) const;
  // The first state-space modifier, kNone if there is none.
  StateSpace space() const;
  // The data types in the order written (`cvt.rn.f32.s32`: f32 then s32); typeAt() is kNone past the end.
  size_t typeCount() const;
  DataType typeAt(size_t i) const;
  // The last data type written (the instruction type of most instructions), kNone if none.
  DataType type() const;
  // Appends a modifier given by its spelling; used by the parser and by code that builds instructions.
  void addModifier(std::string_view spelling);

  // Printer-side spellings (for output and messages, never for decisions): the opcode plus all modifiers,
  // "ld.global.nc.f32"; the opcode alone, "ld"; one modifier, ".global".
  std::string fullOpcode() const;
  std::string_view opcodeText() const;
  std::string_view modifierText(const Modifier& m) const;
};

// A variable, parameter or register declaration: `.reg .b32 %r<10>`, `.param .u64 .ptr .global .align 8 p`,
// `.shared .align 4 .b8 buf[1024]`, `.global .align 1 .b8 $str[6] = {...}`.
struct VariableDecl {
  Linkage linkage = Linkage::kNone;          // kVisible, kExtern, kWeak, kCommon or kNone
  StateSpace space = StateSpace::kNone;      // kReg, kParam, kGlobal, kShared, kConst, kLocal, kTex...
  std::vector<std::string> attributes;       // verbatim qualifiers we do not model, e.g. ".attribute(.managed)"
  uint32_t align = 0;                        // `.align N`, 0 if absent
  uint32_t vector = 0;                       // 2, 4 or 8 for .v2/.v4/.v8; 0 for a scalar
  DataType type = DataType::kNone;           // kB32, kF32, kPred, kU64...; kNone if absent or not modelled
  std::string unknown_type;                  // spelling of a type the enum does not model (type is kNone then)
  bool is_ptr = false;                       // kernel parameter with `.ptr`
  StateSpace ptr_space = StateSpace::kNone;  // `.ptr .global` -> kGlobal
  uint32_t ptr_align = 0;                    // `.ptr ... .align N`
  std::string name;
  int64_t range = -1;         // `%r<10>` -> 10 (declares %r0..%r9); -1 when not a range
  std::vector<int64_t> dims;  // array dimensions; 0 = unspecified (`[]`)
  std::string initializer;    // text after `=`, verbatim, empty if none
  SourceLoc loc;

  // Size in bytes of one element of `type` (1 for .pred/.b8), times the vector width; 0 if unknown.
  uint32_t elementSize() const;
  // Total byte size (element size times all dimensions); 0 if unknown or unsized.
  uint64_t byteSize() const;
  // Printer-side: the type as written, ".f32" (or unknown_type); empty if none.
  std::string_view typeText() const;
};

enum class StatementKind : uint8_t {
  kInstruction,
  kLabel,        // text = label name
  kDeclaration,  // decl
  kDirective,    // text = verbatim directive (.loc, .pragma "...";, a .callprototype line)
  kBlockBegin,   // `{`
  kBlockEnd,     // `}`
};

struct Statement {
  StatementKind kind = StatementKind::kInstruction;
  Instruction inst;             // kInstruction
  Indirect<VariableDecl> decl;  // kDeclaration (read as `st.decl->name`)
  Indirect<std::string> text;   // kLabel, kDirective
  SourceLoc loc;
};

struct PerfDirective {
  std::string name;             // ".maxntid", ".reqntid", ".minnctapersm", ".maxnreg", ".noreturn"...
  std::vector<int64_t> values;  // may be empty
};

struct Function {
  Linkage linkage = Linkage::kNone;  // kVisible, kExtern, kWeak or kNone
  bool is_entry = false;             // .entry (kernel) vs .func
  std::string name;
  std::vector<VariableDecl> returns;  // .func return parameters
  std::vector<VariableDecl> params;
  bool has_param_list = false;  // `name()` vs `name`
  std::vector<PerfDirective> directives;
  bool has_body = false;  // false: a declaration ending in `;`
  std::vector<Statement> body;
  SourceLoc loc;

  // Index of the parameter called `n`, or -1.
  int paramIndex(std::string_view n) const;
};

enum class TopLevelKind : uint8_t { kVariable, kFunction, kVerbatim };

struct TopLevel {
  TopLevelKind kind;
  size_t index;  // into Module::variables / functions / verbatim
};

struct Module {
  std::string version;  // "9.0"
  std::string target;   // verbatim target list: "sm_90", "sm_80, debug"
  uint32_t address_size = 64;
  std::vector<VariableDecl> variables;
  std::vector<Function> functions;
  std::vector<std::string> verbatim;  // `.file` lines, `.section` blocks, unknown module directives
  std::vector<TopLevel> order;        // the order in which the items above appear

  const Function* findFunction(std::string_view name) const;
  Function* findFunction(std::string_view name);
  // The first target, e.g. "sm_90" from "sm_90, debug".
  std::string primaryTarget() const;
  uint32_t versionNumber() const;  // "9.0" -> 90, "8.7" -> 87; 0 if unparsable
};

// Checks the invariants a printer and the analyses rely on: every register operand is declared in an enclosing
// scope (or is a special register), every branch target label exists in the function, scopes are balanced,
// entries have bodies, names are unique. Returns the first problem found with its line:column.
Status verify(const Module& module);
Status verify(const Function& function);

// A PTX integer literal (decimal, 0x hex, 0b binary, leading-0 octal, optional U suffix, optional '-'); nullopt
// for float literals (0f..., 0d...) and anything else.
std::optional<int64_t> parseIntegerLiteral(std::string_view text);

// True for special registers (%tid.x, %ctaid.y, %laneid, %clock64, %envreg3, ...: see special_registers.h) and
// the predefined constant %WARP_SZ.
bool isSpecialRegister(std::string_view name);

// The value of a PTX predefined constant: `WARP_SZ` (what `warpSize` compiles to; spelled without '%') and its
// `%WARP_SZ` form are 32. nullopt for any other name.
std::optional<int64_t> predefinedConstant(std::string_view name);

}  // namespace kfuse::ptx
