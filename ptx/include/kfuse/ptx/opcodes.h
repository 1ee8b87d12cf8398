// The typed vocabulary of PTX instructions and declarations: opcodes, state spaces, data types and the common
// instruction modifiers, each an enum defined once by an X-macro list that also gives its PTX spelling.
//
// The parser maps spellings to these enums once (ptx/src/opcodes.cpp holds the only name -> enum tables); the
// printer maps them back with the *Name() functions. Analyses and the emulator switch on the enums and never
// compare spellings. Spellings the lists do not model are kept verbatim by the IR (Instruction::spelled's
// other_modifiers and unknown_opcode, VariableDecl::unknown_type) so that they still round-trip. All functions here
// are pure and thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

namespace kfuse::ptx {

// clang-format off
// Every opcode of the PTX ISA up to 9.x: X(enumerator, spelling).
#define KFUSE_PTX_OPCODES(X)                                                                                   \
  X(kAbs, "abs") X(kActivemask, "activemask") X(kAdd, "add") X(kAddc, "addc") X(kAlloca, "alloca")            \
  X(kAnd, "and") X(kApplypriority, "applypriority") X(kAtom, "atom") X(kBar, "bar") X(kBarrier, "barrier")     \
  X(kBfe, "bfe") X(kBfi, "bfi") X(kBfind, "bfind") X(kBmsk, "bmsk") X(kBra, "bra") X(kBrev, "brev")             \
  X(kBrkpt, "brkpt") X(kBrx, "brx") X(kCall, "call") X(kClusterlaunchcontrol, "clusterlaunchcontrol")          \
  X(kClz, "clz") X(kCnot, "cnot") X(kCopysign, "copysign") X(kCos, "cos") X(kCp, "cp")                          \
  X(kCreatepolicy, "createpolicy") X(kCvt, "cvt") X(kCvta, "cvta") X(kDiscard, "discard") X(kDiv, "div")        \
  X(kDp2a, "dp2a") X(kDp4a, "dp4a") X(kElect, "elect") X(kEx2, "ex2") X(kExit, "exit") X(kFence, "fence")       \
  X(kFma, "fma") X(kFns, "fns") X(kGetctarank, "getctarank") X(kGriddepcontrol, "griddepcontrol")              \
  X(kIsspacep, "isspacep") X(kIstypep, "istypep") X(kLd, "ld") X(kLdmatrix, "ldmatrix") X(kLdu, "ldu")          \
  X(kLg2, "lg2") X(kLop3, "lop3") X(kMad, "mad") X(kMad24, "mad24") X(kMadc, "madc") X(kMapa, "mapa")           \
  X(kMatch, "match") X(kMax, "max") X(kMbarrier, "mbarrier") X(kMembar, "membar") X(kMin, "min")               \
  X(kMma, "mma") X(kMov, "mov") X(kMovmatrix, "movmatrix") X(kMul, "mul") X(kMul24, "mul24")                    \
  X(kMultimem, "multimem") X(kNanosleep, "nanosleep") X(kNeg, "neg") X(kNot, "not") X(kOr, "or")                \
  X(kPmevent, "pmevent") X(kPopc, "popc") X(kPrefetch, "prefetch") X(kPrefetchu, "prefetchu") X(kPrmt, "prmt")  \
  X(kRcp, "rcp") X(kRed, "red") X(kRedux, "redux") X(kRem, "rem") X(kRet, "ret") X(kRsqrt, "rsqrt")             \
  X(kSad, "sad") X(kSelp, "selp") X(kSet, "set") X(kSetmaxnreg, "setmaxnreg") X(kSetp, "setp") X(kShf, "shf")   \
  X(kShfl, "shfl") X(kShl, "shl") X(kShr, "shr") X(kSin, "sin") X(kSlct, "slct") X(kSqrt, "sqrt") X(kSt, "st")  \
  X(kStackrestore, "stackrestore") X(kStacksave, "stacksave") X(kStmatrix, "stmatrix") X(kSub, "sub")          \
  X(kSubc, "subc") X(kSuld, "suld") X(kSuq, "suq") X(kSured, "sured") X(kSust, "sust") X(kSzext, "szext")       \
  X(kTanh, "tanh") X(kTcgen05, "tcgen05") X(kTensormap, "tensormap") X(kTestp, "testp") X(kTex, "tex")          \
  X(kTld4, "tld4") X(kTrap, "trap") X(kTxq, "txq") X(kVabsdiff, "vabsdiff") X(kVabsdiff2, "vabsdiff2")          \
  X(kVabsdiff4, "vabsdiff4") X(kVadd, "vadd") X(kVadd2, "vadd2") X(kVadd4, "vadd4") X(kVavrg2, "vavrg2")        \
  X(kVavrg4, "vavrg4") X(kVmad, "vmad") X(kVmax, "vmax") X(kVmax2, "vmax2") X(kVmax4, "vmax4") X(kVmin, "vmin") \
  X(kVmin2, "vmin2") X(kVmin4, "vmin4") X(kVote, "vote") X(kVset, "vset") X(kVset2, "vset2") X(kVset4, "vset4") \
  X(kVshl, "vshl") X(kVshr, "vshr") X(kVsub, "vsub") X(kVsub2, "vsub2") X(kVsub4, "vsub4") X(kWgmma, "wgmma")   \
  X(kWmma, "wmma") X(kXor, "xor")

// State spaces, as instruction modifiers (`ld.shared::cta`) and as the first word of declarations (`.reg`).
// The `::` forms are kept apart from their plain form because the printer must reproduce them.
#define KFUSE_PTX_STATE_SPACES(X)                                                                              \
  X(kReg, ".reg") X(kSreg, ".sreg") X(kConst, ".const") X(kGlobal, ".global") X(kLocal, ".local")              \
  X(kParam, ".param") X(kParamEntry, ".param::entry") X(kParamFunc, ".param::func") X(kShared, ".shared")      \
  X(kSharedCta, ".shared::cta") X(kSharedCluster, ".shared::cluster") X(kTex, ".tex") X(kTexref, ".texref")    \
  X(kSurfref, ".surfref") X(kSamplerref, ".samplerref")

// Linkage of module-scope variables and functions.
#define KFUSE_PTX_LINKAGES(X) X(kVisible, ".visible") X(kExtern, ".extern") X(kWeak, ".weak") X(kCommon, ".common")

// Data types: X(enumerator, spelling, class, bits of one element, elements). Class: 'b' bits, 'u' unsigned,
// 's' signed, 'f' floating point, 'p' predicate, 'o' other (tensor-core formats).
#define KFUSE_PTX_DATA_TYPES(X)                                                                                \
  X(kPred, ".pred", 'p', 1, 1) X(kB1, ".b1", 'b', 1, 1) X(kB8, ".b8", 'b', 8, 1) X(kB16, ".b16", 'b', 16, 1)    \
  X(kB32, ".b32", 'b', 32, 1) X(kB64, ".b64", 'b', 64, 1) X(kB128, ".b128", 'b', 128, 1)                        \
  X(kU4, ".u4", 'u', 4, 1) X(kU8, ".u8", 'u', 8, 1) X(kU16, ".u16", 'u', 16, 1) X(kU32, ".u32", 'u', 32, 1)     \
  X(kU64, ".u64", 'u', 64, 1) X(kU16x2, ".u16x2", 'u', 16, 2) X(kS4, ".s4", 's', 4, 1) X(kS8, ".s8", 's', 8, 1) \
  X(kS16, ".s16", 's', 16, 1) X(kS32, ".s32", 's', 32, 1) X(kS64, ".s64", 's', 64, 1)                           \
  X(kS16x2, ".s16x2", 's', 16, 2) X(kF16, ".f16", 'f', 16, 1) X(kF16x2, ".f16x2", 'f', 16, 2)                    \
  X(kF32, ".f32", 'f', 32, 1) X(kF64, ".f64", 'f', 64, 1) X(kBF16, ".bf16", 'f', 16, 1)                         \
  X(kBF16x2, ".bf16x2", 'f', 16, 2) X(kTF32, ".tf32", 'o', 32, 1) X(kE4m3, ".e4m3", 'o', 8, 1)                  \
  X(kE5m2, ".e5m2", 'o', 8, 1) X(kE4m3x2, ".e4m3x2", 'o', 8, 2) X(kE5m2x2, ".e5m2x2", 'o', 8, 2)               \
  X(kTexref, ".texref", 'o', 0, 1) X(kSamplerref, ".samplerref", 'o', 0, 1) X(kSurfref, ".surfref", 'o', 0, 1)

// Instruction modifiers the analyses and the emulator read: X(enumerator, spelling). One enumerator per
// spelling; its meaning depends on the opcode (`.and` is a setp boolean operation, an atomic operation and a
// bar.red reduction; `.hi` is both `mul.hi` and the unsigned comparison).
#define KFUSE_PTX_MODIFIERS(X)                                                                                 \
  /* comparisons */                                                                                            \
  X(kEq, ".eq") X(kNe, ".ne") X(kLt, ".lt") X(kLe, ".le") X(kGt, ".gt") X(kGe, ".ge") X(kLo, ".lo")            \
  X(kLs, ".ls") X(kHi, ".hi") X(kHs, ".hs") X(kEqu, ".equ") X(kNeu, ".neu") X(kLtu, ".ltu") X(kLeu, ".leu")    \
  X(kGtu, ".gtu") X(kGeu, ".geu") X(kNum, ".num") X(kNan, ".nan")                                              \
  /* rounding */                                                                                               \
  X(kRn, ".rn") X(kRz, ".rz") X(kRm, ".rm") X(kRp, ".rp") X(kRna, ".rna") X(kRni, ".rni") X(kRzi, ".rzi")      \
  X(kRmi, ".rmi") X(kRpi, ".rpi")                                                                              \
  /* arithmetic */                                                                                             \
  X(kWide, ".wide") X(kCc, ".cc") X(kSat, ".sat") X(kSatfinite, ".satfinite") X(kFtz, ".ftz")                   \
  X(kApprox, ".approx") X(kFull, ".full") X(kRelu, ".relu") X(kNoftz, ".noftz") X(kL, ".l") X(kR, ".r")         \
  X(kWrap, ".wrap") X(kClamp, ".clamp") X(kShiftamt, ".shiftamt")                                              \
  /* testp */                                                                                                  \
  X(kFinite, ".finite") X(kInfinite, ".infinite") X(kNumber, ".number") X(kNotanumber, ".notanumber")          \
  X(kNormal, ".normal") X(kSubnormal, ".subnormal")                                                            \
  /* atomic, reduction and boolean operations */                                                               \
  X(kOpAdd, ".add") X(kOpMin, ".min") X(kOpMax, ".max") X(kOpInc, ".inc") X(kOpDec, ".dec") X(kOpAnd, ".and")   \
  X(kOpOr, ".or") X(kOpXor, ".xor") X(kOpExch, ".exch") X(kOpCas, ".cas") X(kOpPopc, ".popc")                   \
  /* vectors */                                                                                                \
  X(kV2, ".v2") X(kV4, ".v4") X(kV8, ".v8")                                                                    \
  /* memory */                                                                                                 \
  X(kTo, ".to") X(kNc, ".nc") X(kVolatile, ".volatile") X(kRelaxed, ".relaxed") X(kAcquire, ".acquire")         \
  X(kRelease, ".release") X(kAcqRel, ".acq_rel") X(kWeak, ".weak") X(kCta, ".cta") X(kGpu, ".gpu")              \
  X(kSys, ".sys") X(kCluster, ".cluster") X(kCa, ".ca") X(kCg, ".cg") X(kCs, ".cs") X(kLu, ".lu") X(kCv, ".cv") \
  X(kWb, ".wb") X(kWt, ".wt") X(kAsync, ".async") X(kBulk, ".bulk") X(kMbarrierMod, ".mbarrier")                \
  X(kCommitGroup, ".commit_group") X(kWaitGroup, ".wait_group") X(kWaitAll, ".wait_all")                       \
  X(kLoad, ".load") X(kStore, ".store")                                                                        \
  /* warp and block synchronisation */                                                                         \
  X(kSync, ".sync") X(kAligned, ".aligned") X(kArrive, ".arrive") X(kRed, ".red") X(kWarp, ".warp")             \
  X(kUni, ".uni") X(kAll, ".all") X(kAny, ".any") X(kBallot, ".ballot") X(kUp, ".up") X(kDown, ".down")         \
  X(kBfly, ".bfly") X(kIdx, ".idx")
// clang-format on

enum class Opcode : uint8_t {
  kUnknown,  // spelled in Instruction::spelled->unknown_opcode
#define KFUSE_PTX_X(e, s) e,
  KFUSE_PTX_OPCODES(KFUSE_PTX_X)
#undef KFUSE_PTX_X
      kCount,
};

enum class StateSpace : uint8_t {
  kNone,
#define KFUSE_PTX_X(e, s) e,
  KFUSE_PTX_STATE_SPACES(KFUSE_PTX_X)
#undef KFUSE_PTX_X
      kCount,
};

enum class Linkage : uint8_t {
  kNone,
#define KFUSE_PTX_X(e, s) e,
  KFUSE_PTX_LINKAGES(KFUSE_PTX_X)
#undef KFUSE_PTX_X
      kCount,
};

enum class DataType : uint8_t {
  kNone,
#define KFUSE_PTX_X(e, s, c, b, n) e,
  KFUSE_PTX_DATA_TYPES(KFUSE_PTX_X)
#undef KFUSE_PTX_X
      kCount,
};

enum class Mod : uint8_t {
  kNone,
#define KFUSE_PTX_X(e, s) e,
  KFUSE_PTX_MODIFIERS(KFUSE_PTX_X)
#undef KFUSE_PTX_X
      kCount,
};

// PTX spellings: "ld" (no dot), ".global", ".f32", ".wide". Empty for kNone / kUnknown.
std::string_view opcodeName(Opcode op);
std::string_view spaceName(StateSpace space);
std::string_view linkageName(Linkage linkage);
std::string_view typeName(DataType type);
std::string_view modName(Mod mod);

// Properties of a data type, from KFUSE_PTX_DATA_TYPES.
char typeClass(DataType t);            // 'b' 'u' 's' 'f' 'p' 'o'; 0 for kNone
uint32_t typeElementBits(DataType t);  // 16 for .f16x2; 0 for kNone
uint32_t typeElements(DataType t);     // 2 for .f16x2; 0 for kNone
inline bool isFloatType(DataType t) {
  return typeClass(t) == 'f';
}
// The plain space a qualified one belongs to: .shared::cta -> .shared, .param::func -> .param.
StateSpace baseSpace(StateSpace s);

// One dotted component after the opcode, typed. kOther indexes Instruction::spelled->other_modifiers.
enum class ModKind : uint8_t { kSpace, kType, kMod, kOther };
struct Modifier {
  ModKind kind = ModKind::kOther;
  uint8_t value = 0;

  static Modifier space(StateSpace s) { return {ModKind::kSpace, static_cast<uint8_t>(s)}; }
  static Modifier type(DataType t) { return {ModKind::kType, static_cast<uint8_t>(t)}; }
  static Modifier mod(Mod m) { return {ModKind::kMod, static_cast<uint8_t>(m)}; }

  StateSpace asSpace() const { return kind == ModKind::kSpace ? StateSpace(value) : StateSpace::kNone; }
  DataType asType() const { return kind == ModKind::kType ? DataType(value) : DataType::kNone; }
  Mod asMod() const { return kind == ModKind::kMod ? Mod(value) : Mod::kNone; }
  bool operator==(const Modifier&) const = default;
};

}  // namespace kfuse::ptx
