// Differential validation: originals and fused kernel on two identical copies of every buffer, compared byte for
// byte. The trial data and the comparison live here; where kernels run is a ValidationBackend.
#include "kfuse/rewriter/validate.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "kfuse/core/trace.h"
#include "validate_backend.h"

namespace kfuse::rewriter {

namespace {

// ---- element types ----

struct ElementType {
  enum class Kind { kFloat, kSigned, kUnsigned };
  Kind kind = Kind::kUnsigned;
  int bytes = 1;
  bool bf16 = false;
  std::string name = "u8";  // what a mismatch prints
};

ElementType elementType(const std::string& ptx_type) {
  ElementType t;
  if (ptx_type.empty()) return t;  // unknown: compared and filled as bytes
  std::string base = ptx_type;
  if (auto x = base.find('x'); x != std::string::npos) base = base.substr(0, x);  // f16x2 -> f16
  t.name = base;
  if (base == "bf16") {
    t.kind = ElementType::Kind::kFloat;
    t.bytes = 2;
    t.bf16 = true;
    return t;
  }
  int bits = 0;
  if (base.size() >= 2) bits = std::atoi(base.c_str() + 1);
  if (bits != 8 && bits != 16 && bits != 32 && bits != 64) return ElementType{};
  t.bytes = bits / 8;
  switch (base[0]) {
    case 'f': t.kind = ElementType::Kind::kFloat; break;
    case 's': t.kind = ElementType::Kind::kSigned; break;
    case 'u':
    case 'b': t.kind = ElementType::Kind::kUnsigned; break;
    default: return ElementType{};
  }
  if (t.kind == ElementType::Kind::kFloat && t.bytes == 1) return ElementType{};
  return t;
}

double halfToDouble(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0) {
    v = std::ldexp(mant, -24);
  } else if (exp == 31) {
    v = mant ? NAN : INFINITY;
  } else {
    v = std::ldexp(mant + 1024, exp - 25);
  }
  return sign ? -v : v;
}

// The value of `bits` as a number; NaNs also show their bits, since two NaNs can differ only there.
std::string formatValue(const ElementType& t, uint64_t bits) {
  char buf[96];
  if (t.kind == ElementType::Kind::kFloat) {
    double v = 0;
    int digits = 17;
    if (t.bytes == 8) {
      std::memcpy(&v, &bits, 8);
    } else if (t.bytes == 4) {
      uint32_t b = static_cast<uint32_t>(bits);
      float f;
      std::memcpy(&f, &b, 4);
      v = f;
      digits = 9;
    } else if (t.bf16) {
      uint32_t b = static_cast<uint32_t>(bits) << 16;
      float f;
      std::memcpy(&f, &b, 4);
      v = f;
      digits = 4;
    } else {
      v = halfToDouble(static_cast<uint16_t>(bits));
      digits = 5;
    }
    if (std::isnan(v)) {
      std::snprintf(buf, sizeof buf, "nan (0x%0*" PRIx64 ")", t.bytes * 2, bits);
    } else {
      std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    }
    return buf;
  }
  if (t.kind == ElementType::Kind::kSigned) {
    int shift = 64 - 8 * t.bytes;
    int64_t s = static_cast<int64_t>(bits << shift) >> shift;
    std::snprintf(buf, sizeof buf, "%" PRId64, s);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "%" PRIu64, bits);
  return buf;
}

std::string hexValue(const ElementType& t, uint64_t bits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%0*" PRIx64, t.bytes * 2, bits);
  return buf;
}

// ---- trial data ----

enum class TrialKind { kRandom, kEdge, kZeros, kSmall };

struct Trial {
  TrialKind kind;
  uint64_t seed = 0;
  std::string name;
};

std::vector<Trial> trialsFor(const ValidationOptions& o) {
  std::vector<Trial> all = {
      {TrialKind::kRandom, o.seed, "random (seed " + std::to_string(o.seed) + ")"},
      {TrialKind::kEdge, 0, "edge values"},
      {TrialKind::kZeros, 0, "zeros"},
      {TrialKind::kSmall, o.seed, "small values (seed " + std::to_string(o.seed) + ")"},
  };
  if (o.trials <= 0) return all;
  std::vector<Trial> out;
  for (int i = 0; i < o.trials; ++i) {
    if (static_cast<size_t>(i) < all.size()) {
      out.push_back(all[static_cast<size_t>(i)]);
    } else {
      uint64_t seed = o.seed + static_cast<uint64_t>(i);
      out.push_back({TrialKind::kRandom, seed, "random (seed " + std::to_string(seed) + ")"});
    }
  }
  return out;
}

uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9;
  x = (x ^ (x >> 27)) * 0x94d049bb133111eb;
  return x ^ (x >> 31);
}

// Counter-based splitmix64: reproducible from the seed alone and several times faster than a Mersenne twister,
// which matters when a trial fills millions of elements.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t operator()() { return mix(state_++); }

 private:
  uint64_t state_;
};

// Edge values of each type, cycled through a buffer: NaNs (quiet, with a payload, negative), ±0, ±inf, the
// smallest and largest denormals, ±1, ±max finite, the smallest normal; for integers 0, 1, -1 (UINT_MAX), INT_MIN,
// INT_MAX and alternating bits.
std::vector<uint64_t> edgeValues(const ElementType& t) {
  if (t.kind == ElementType::Kind::kFloat) {
    if (t.bytes == 8) {
      return {0x7ff8000000000000, 0x7ff8000000001234, 0xfff8000000000000, 0x0000000000000000, 0x8000000000000000,
              0x7ff0000000000000, 0xfff0000000000000, 0x0000000000000001, 0x800fffffffffffff, 0x000fffffffffffff,
              0x3ff0000000000000, 0xbff0000000000000, 0x7fefffffffffffff, 0xffefffffffffffff, 0x0010000000000000};
    }
    if (t.bytes == 4) {
      return {0x7fc00000, 0x7fc01234, 0xffc00000, 0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x00000001,
              0x807fffff, 0x007fffff, 0x3f800000, 0xbf800000, 0x7f7fffff, 0xff7fffff, 0x00800000};
    }
    if (t.bf16) {
      return {0x7fc0, 0x7fc1, 0xffc0, 0x0000, 0x8000, 0x7f80, 0xff80, 0x0001,
              0x807f, 0x007f, 0x3f80, 0xbf80, 0x7f7f, 0xff7f, 0x0080};
    }
    return {0x7e00, 0x7e12, 0xfe00, 0x0000, 0x8000, 0x7c00, 0xfc00, 0x0001,
            0x83ff, 0x03ff, 0x3c00, 0xbc00, 0x7bff, 0xfbff, 0x0400};
  }
  int bits = 8 * t.bytes;
  uint64_t all = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  uint64_t sign = uint64_t{1} << (bits - 1);
  return {0, 1, all, sign, sign - 1, 2, all - 1, 0x5555555555555555 & all, 0xaaaaaaaaaaaaaaaa & all};
}

// A random finite value with a magnitude in [2^-8, 2^8): the range where arithmetic of the kernels is exercised
// without drowning every result in infinities.
uint64_t randomFloat(const ElementType& t, Rng& rng) {
  uint64_t r = rng();
  if (t.bytes == 8) return (r & 0x800fffffffffffff) | (uint64_t{1015 + (r >> 52) % 16} << 52);
  if (t.bytes == 4) return (r & 0x807fffff) | (uint64_t{119 + (r >> 40) % 16} << 23);
  if (t.bf16) return (r & 0x807f) | (uint64_t{119 + (r >> 40) % 16} << 7);
  return (r & 0x83ff) | (uint64_t{7 + (r >> 40) % 16} << 10);
}

uint64_t smallValue(const ElementType& t, Rng& rng) {
  int v = static_cast<int>(rng() % 17) - 8;  // -8..8: exact in every float type
  if (t.kind != ElementType::Kind::kFloat) return static_cast<uint64_t>(rng() % 16);
  if (t.bytes == 8) {
    double d = v;
    uint64_t b;
    std::memcpy(&b, &d, 8);
    return b;
  }
  float f = static_cast<float>(v);
  uint32_t b;
  std::memcpy(&b, &f, 4);
  if (t.bytes == 4) return b;
  if (t.bf16) return b >> 16;
  // f16: small integers are exact; build the bits from the float's exponent and top mantissa bits.
  if (v == 0) return 0;
  uint32_t sign = (b >> 31) << 15, exp = ((b >> 23) & 0xff) - 127 + 15, mant = (b >> 13) & 0x3ff;
  return sign | (exp << 10) | mant;
}

void fillBuffer(std::vector<uint8_t>& data, const ElementType& t, const Trial& trial, uint64_t stream_seed) {
  if (trial.kind == TrialKind::kZeros) {
    std::fill(data.begin(), data.end(), 0);
    return;
  }
  Rng rng(mix(trial.seed ^ mix(stream_seed)));
  std::vector<uint64_t> edges;
  if (trial.kind == TrialKind::kEdge) edges = edgeValues(t);
  size_t n = data.size() / static_cast<size_t>(t.bytes);
  for (size_t i = 0; i < n; ++i) {
    uint64_t v = 0;
    switch (trial.kind) {
      case TrialKind::kRandom: v = t.kind == ElementType::Kind::kFloat ? randomFloat(t, rng) : rng(); break;
      case TrialKind::kEdge: v = edges[i % edges.size()]; break;
      case TrialKind::kSmall: v = smallValue(t, rng); break;
      case TrialKind::kZeros: break;
    }
    std::memcpy(data.data() + i * static_cast<size_t>(t.bytes), &v, static_cast<size_t>(t.bytes));  // little-endian
  }
  for (size_t i = n * static_cast<size_t>(t.bytes); i < data.size(); ++i) data[i] = static_cast<uint8_t>(rng());
}

// ---- the plan, resolved against a backend ----

constexpr size_t kNoSet = ~size_t{0};

// A backend with the plan's kernels loaded, and the buffers of the argument set being validated (two copies:
// [0] for the originals, [1] for the fused kernel). The backend frees them when it goes.
struct Loaded {
  std::unique_ptr<ValidationBackend> backend;
  std::vector<BackendKernel> originals;
  BackendKernel fused;
  std::array<std::vector<uint64_t>, 2> buffers;
  std::vector<std::string> files;  // as sha256sum prints them
  size_t buffers_of_set = kNoSet;
  std::vector<std::vector<uint8_t>> host_input;  // scratch of runOnce, kept between runs
  std::vector<uint8_t> host_original, host_fused;
  std::vector<uint8_t> canary;  // the backend's guardBytes() of a fixed pattern
};

// Which bytes of a buffer's guard a run changed, in words ("bytes 0-95 of the 4096 after buffer 2 (...)"), or "".
std::string guardDamage(const std::vector<uint8_t>& canary, const std::vector<uint8_t>& got,
                        const std::string& buffer) {
  size_t first = 0;
  while (first < got.size() && got[first] == canary[first]) ++first;
  if (first == got.size()) return "";
  size_t last = got.size() - 1;
  while (got[last] == canary[last]) --last;
  return "it wrote past the end of " + buffer + " (bytes " + std::to_string(first) + "-" + std::to_string(last) +
         " of the " + std::to_string(got.size()) +
         " guard bytes after it; on a GPU such a write corrupts whatever "
         "follows the buffer)";
}

Expected<std::string> readText(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return notFound(path.string() + ": cannot open");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Expected<Loaded> load(const Plan& plan, const std::string& dir, const ValidationOptions& options) {
  Loaded out;
  const Backend which = options.backend;
  if (which == Backend::kEmulator) {
    out.backend = makeEmulatorBackend(options.max_warp_instructions);
  } else {
    auto b = options.driver ? makeDriverBackend(*options.driver) : makeDriverBackend();
    if (!b.ok()) return b.status();
    out.backend = std::move(b).value();
  }
  std::map<std::string, int> modules;  // several kernels often come from one module
  auto kernel = [&](const std::string& file, const std::string& entry) -> Expected<BackendKernel> {
    std::filesystem::path path = std::filesystem::path(dir) / file;
    auto it = modules.find(file);
    if (it == modules.end()) {
      KFUSE_ASSIGN_OR_RETURN(std::string text, readText(path));
      out.files.push_back(core::sha256Hex(reinterpret_cast<const uint8_t*>(text.data()), text.size()) + "  " + file);
      auto m = out.backend->loadModule(text);
      if (!m.ok()) return Status(m.status().code(), path.string() + ": " + m.status().message());
      it = modules.emplace(file, *m).first;
    }
    auto k = out.backend->findKernel(it->second, entry);
    if (!k.ok()) return Status(k.status().code(), path.string() + ": " + k.status().message());
    return k;
  };
  for (size_t i = 0; i < plan.kernels.size(); ++i) {
    const PlanKernel& k = plan.kernels[i];
    std::string where =
        (std::filesystem::path(dir) / "plan.json").string() + ": pattern.kernels[" + std::to_string(i) + "]";
    if (k.ptx_file.empty()) return invalidArgument(where + ".ptx_file: kernel " + k.mangled_name + " has no PTX file");
    // A kernel's identity is its module's hash, and its PTX is stored under that hash (plan.h): a hash that names
    // no stored module means the plan was edited or mixed up, and validating it would prove nothing about it.
    std::string stem = std::filesystem::path(k.ptx_file).stem().string();
    if (k.module_hash.size() < 16 || stem != k.module_hash.substr(0, 16)) {
      return invalidArgument(where + ".module_hash: " + k.module_hash.substr(0, 16) +
                             "... matches no module of the plan (" + k.mangled_name + "'s PTX is " + k.ptx_file + ")");
    }
    KFUSE_ASSIGN_OR_RETURN(BackendKernel bk, kernel(k.ptx_file, k.mangled_name));
    out.originals.push_back(std::move(bk));
  }
  KFUSE_ASSIGN_OR_RETURN(out.fused, kernel(plan.fused.ptx_file, plan.fused.name));
  return out;
}

constexpr uint64_t kMaxArgumentSetBytes = uint64_t{8} << 30;

// Checks that the plan gives every kernel arguments of the sizes it declares, before anything runs.
Status checkArguments(const Plan& plan, const Loaded& l, size_t set_index) {
  const ArgumentSet& set = plan.argument_sets[set_index];
  std::string where = "argument set " + std::to_string(set_index);
  if (set.args.size() != plan.kernels.size()) {
    return invalidArgument(where + " gives arguments for " + std::to_string(set.args.size()) +
                           " kernels, the pattern has " + std::to_string(plan.kernels.size()));
  }
  if (!set.shapes.empty() && set.shapes.size() != plan.kernels.size()) {
    return invalidArgument(where + " gives " + std::to_string(set.shapes.size()) + " launch shapes for " +
                           std::to_string(plan.kernels.size()) + " kernels");
  }
  // Each buffer exists four times (two device copies, the input and the read-back): refuse sizes no machine can
  // validate before allocating any of it.
  uint64_t total = 0;
  for (uint64_t b : set.buffer_bytes) {
    if (b > kMaxArgumentSetBytes - total) {
      return invalidArgument(where + " needs more than " + std::to_string(kMaxArgumentSetBytes >> 30) +
                             " GiB of buffers, more than kfuse validates with");
    }
    total += b;
  }
  auto size = [&](const ArgValue& v) { return v.pointer ? size_t{8} : v.bytes.size(); };
  for (size_t k = 0; k < set.args.size(); ++k) {
    const auto& declared = l.originals[k].param_sizes;
    if (declared.empty()) continue;
    if (declared.size() != set.args[k].size()) {
      return invalidArgument(where + ": " + plan.kernels[k].mangled_name + " takes " + std::to_string(declared.size()) +
                             " parameters, the plan gives " + std::to_string(set.args[k].size()));
    }
    for (size_t p = 0; p < declared.size(); ++p) {
      if (declared[p] != size(set.args[k][p])) {
        return invalidArgument(where + ": parameter " + std::to_string(p) + " of " + plan.kernels[k].mangled_name +
                               " is " + std::to_string(declared[p]) + " bytes, the plan gives " +
                               std::to_string(size(set.args[k][p])));
      }
    }
    for (const ArgValue& v : set.args[k]) {
      if (v.pointer && (v.buffer < 0 || static_cast<size_t>(v.buffer) >= set.buffer_bytes.size())) {
        return invalidArgument(where + ": an argument of " + plan.kernels[k].mangled_name + " names buffer " +
                               std::to_string(v.buffer) + ", which the set does not have");
      }
    }
  }
  const auto& fdecl = l.fused.param_sizes;
  if (!fdecl.empty() && fdecl.size() != plan.fused.params.size()) {
    return invalidArgument(plan.fused.name + " takes " + std::to_string(fdecl.size()) + " parameters, the plan maps " +
                           std::to_string(plan.fused.params.size()));
  }
  for (size_t i = 0; i < plan.fused.params.size(); ++i) {
    const FusedParam& fp = plan.fused.params[i];
    if (fp.sources.empty()) return invalidArgument("fused parameter " + fp.name + " has no source argument");
    const ArgRef& r = fp.sources.front();
    if (r.kernel < 0 || static_cast<size_t>(r.kernel) >= set.args.size() || r.param < 0 ||
        static_cast<size_t>(r.param) >= set.args[static_cast<size_t>(r.kernel)].size()) {
      return invalidArgument("fused parameter " + fp.name + " takes argument " + std::to_string(r.param) +
                             " of kernel " + std::to_string(r.kernel) + ", which " + where + " does not have");
    }
    size_t got = size(set.args[static_cast<size_t>(r.kernel)][static_cast<size_t>(r.param)]);
    if (!fdecl.empty() && fdecl[i] != got) {
      return invalidArgument(where + ": parameter " + std::to_string(i) + " (" + fp.name + ") of " + plan.fused.name +
                             " is " + std::to_string(fdecl[i]) + " bytes, its source is " + std::to_string(got));
    }
  }
  return Status::okStatus();
}

std::vector<uint8_t> argBytes(const ArgValue& v, const std::vector<uint64_t>& buffers) {
  if (!v.pointer) return v.bytes;
  uint64_t address = buffers[static_cast<size_t>(v.buffer)] + v.offset;
  std::vector<uint8_t> b(8);
  std::memcpy(b.data(), &address, 8);
  return b;
}

// What a buffer is called in a mismatch: the kernel arguments that point into it.
std::string bufferName(const Plan& plan, const ArgumentSet& set, int buffer) {
  std::string refs;
  for (size_t k = 0; k < set.args.size(); ++k) {
    for (size_t p = 0; p < set.args[k].size(); ++p) {
      const ArgValue& v = set.args[k][p];
      if (!v.pointer || v.buffer != buffer) continue;
      refs += std::string(refs.empty() ? "" : ", ") + "argument " + std::to_string(p) + " of " +
              plan.kernels[k].mangled_name;
    }
  }
  return "buffer " + std::to_string(buffer) + (refs.empty() ? "" : " (" + refs + ")");
}

ElementType bufferType(const Plan& plan, const ArgumentSet& set, int buffer) {
  for (size_t k = 0; k < set.args.size() && k < plan.kernels.size(); ++k) {
    for (size_t p = 0; p < set.args[k].size() && p < plan.kernels[k].params.size(); ++p) {
      const ArgValue& v = set.args[k][p];
      const PlanParam& pp = plan.kernels[k].params[p];
      if (v.pointer && v.buffer == buffer && !pp.element_type.empty()) return elementType(pp.element_type);
    }
  }
  return ElementType{};
}

struct RunOutcome {
  enum class Kind { kEqual, kMismatch, kFusedFailed, kOriginalFailed } kind = Kind::kEqual;
  std::string message;
  Mismatch mismatch;
};

// One argument set x one trial: both sides on fresh buffers holding the same data.
Expected<RunOutcome> runOnce(const Plan& plan, Loaded& l, size_t set_index, const Trial& trial) {
  const ArgumentSet& set = plan.argument_sets[set_index];
  ValidationBackend& b = *l.backend;
  size_t nbuf = set.buffer_bytes.size();
  std::vector<ElementType> types(nbuf);
  // Host buffers are kept from run to run: allocating and zeroing tens of megabytes per run showed in profiles,
  // and fillBuffer writes every byte anyway.
  std::vector<std::vector<uint8_t>>& input = l.host_input;
  input.resize(nbuf);
  for (size_t i = 0; i < nbuf; ++i) {
    types[i] = bufferType(plan, set, static_cast<int>(i));
    input[i].resize(set.buffer_bytes[i]);
    fillBuffer(input[i], types[i], trial, set_index * 7919 + i);
  }
  // Both copies live at once, so a kernel that strays out of its buffer hits a guard gap, not the other copy.
  // They are allocated once per argument set: fresh allocations for every trial cost page faults and zeroing that
  // showed in profiles of large sets. Every trial overwrites every byte of them before it runs.
  const uint64_t guard = b.guardBytes();
  if (l.canary.size() != guard) {
    l.canary.resize(guard);
    uint32_t x = 0x9e3779b9u;
    for (uint8_t& c : l.canary) {
      x ^= x << 13, x ^= x >> 17, x ^= x << 5;
      c = static_cast<uint8_t>(x);
    }
  }
  if (l.buffers_of_set != set_index) {
    for (auto& copies : l.buffers) {
      for (uint64_t p : copies) (void)b.release(p);
      copies.clear();
    }
    l.buffers_of_set = kNoSet;
    for (auto& copies : l.buffers) {
      for (size_t i = 0; i < nbuf; ++i) {
        // The emulator and the driver refuse empty allocations; a zero-byte buffer gets one unused byte.
        KFUSE_ASSIGN_OR_RETURN(uint64_t p, b.allocate(std::max<uint64_t>(set.buffer_bytes[i] + guard, 1)));
        copies.push_back(p);
      }
    }
    l.buffers_of_set = set_index;
  }
  const auto& side = l.buffers;
  for (const auto& copies : side) {
    for (size_t i = 0; i < nbuf; ++i) {
      KFUSE_RETURN_IF_ERROR(b.copyIn(copies[i], input[i].data(), input[i].size()));
      if (guard) KFUSE_RETURN_IF_ERROR(b.copyIn(copies[i] + input[i].size(), l.canary.data(), guard));
    }
  }
  // A side's writes past its buffers, in words ("" when every guard is intact).
  auto strayWrites = [&](const std::vector<uint64_t>& copies) -> Expected<std::string> {
    if (!guard) return std::string();
    std::vector<uint8_t> got(guard);
    for (size_t i = 0; i < nbuf; ++i) {
      KFUSE_RETURN_IF_ERROR(b.copyOut(got.data(), copies[i] + set.buffer_bytes[i], guard));
      std::string damage = guardDamage(l.canary, got, bufferName(plan, set, static_cast<int>(i)));
      if (!damage.empty()) return damage;
    }
    return std::string();
  };
  RunOutcome out;
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    std::vector<std::vector<uint8_t>> params;
    for (const ArgValue& v : set.args[k]) params.push_back(argBytes(v, side[0]));
    const core::LaunchShape& shape = set.shapes.empty() ? plan.kernels[k].shape : set.shapes[k];
    Status s = b.launch(l.originals[k].id, shape, params);
    if (!s.ok()) {
      out.kind = RunOutcome::Kind::kOriginalFailed;
      out.message = "the original " + plan.kernels[k].mangled_name + " failed: " + s.message();
      return out;
    }
  }
  {
    KFUSE_ASSIGN_OR_RETURN(std::string stray, strayWrites(side[0]));
    if (!stray.empty()) {
      out.kind = RunOutcome::Kind::kOriginalFailed;
      out.message = "the original kernels failed: " + stray;
      return out;
    }
  }
  {
    std::vector<std::vector<uint8_t>> params;
    for (const FusedParam& fp : plan.fused.params) {
      const ArgRef& r = fp.sources.front();
      params.push_back(argBytes(set.args[static_cast<size_t>(r.kernel)][static_cast<size_t>(r.param)], side[1]));
    }
    Status s = b.launch(l.fused.id, set.fused_shape ? *set.fused_shape : plan.fused.shape, params);
    if (!s.ok()) {
      out.kind = RunOutcome::Kind::kFusedFailed;
      out.message = "the fused kernel " + plan.fused.name + " failed: " + s.message();
      return out;
    }
    KFUSE_ASSIGN_OR_RETURN(std::string stray, strayWrites(side[1]));
    if (!stray.empty()) {
      out.kind = RunOutcome::Kind::kFusedFailed;
      out.message = "the fused kernel " + plan.fused.name + " failed: " + stray;
      return out;
    }
  }
  std::set<int> dropped;
  for (const ArgRef& r : plan.dropped_buffers) {
    if (r.kernel < 0 || static_cast<size_t>(r.kernel) >= set.args.size()) continue;
    const auto& args = set.args[static_cast<size_t>(r.kernel)];
    if (r.param >= 0 && static_cast<size_t>(r.param) < args.size() && args[static_cast<size_t>(r.param)].pointer) {
      dropped.insert(args[static_cast<size_t>(r.param)].buffer);
    }
  }
  std::vector<uint8_t>& a = l.host_original;
  std::vector<uint8_t>& f = l.host_fused;
  for (size_t i = 0; i < nbuf; ++i) {
    if (dropped.count(static_cast<int>(i))) continue;
    a.resize(set.buffer_bytes[i]);
    f.resize(set.buffer_bytes[i]);
    KFUSE_RETURN_IF_ERROR(b.copyOut(a.data(), side[0][i], a.size()));
    KFUSE_RETURN_IF_ERROR(b.copyOut(f.data(), side[1][i], f.size()));
    if (a == f) continue;
    size_t byte = 0;
    while (a[byte] == f[byte]) ++byte;
    const ElementType& t = types[i];
    size_t element = byte / static_cast<size_t>(t.bytes);
    size_t start = element * static_cast<size_t>(t.bytes);
    uint64_t va = 0, vf = 0;
    size_t n = std::min(static_cast<size_t>(t.bytes), a.size() - start);
    std::memcpy(&va, a.data() + start, n);
    std::memcpy(&vf, f.data() + start, n);
    Mismatch& m = out.mismatch;
    m.argument_set = set_index;
    m.trial = trial.name;
    m.buffer = static_cast<int>(i);
    m.buffer_name = bufferName(plan, set, static_cast<int>(i));
    m.element = element;
    m.element_type = t.name;
    m.original = formatValue(t, va);
    m.fused = formatValue(t, vf);
    if (m.original == m.fused) {  // -0 vs 0 print apart; two NaNs or a partial tail may not
      m.original += " (" + hexValue(t, va) + ")";
      m.fused += " (" + hexValue(t, vf) + ")";
    }
    out.kind = RunOutcome::Kind::kMismatch;
    return out;
  }
  return out;
}

// Times the fused kernel against the originals on each argument set, with the data of a trial that compared
// equal there (`equal_trial[set]`, -1: none, the set is not timed). Fills `timing`; returns the sentence that fails
// validation when the fused kernel is not faster, else "".
Expected<std::string> timeAgainstOriginals(const Plan& plan, Loaded& l, const std::vector<Trial>& trials,
                                           const std::vector<int>& equal_trial, const ValidationOptions& options,
                                           PlanTiming& timing) {
  ValidationBackend& b = *l.backend;
  timing = PlanTiming{};
  // A backend that cannot time (the emulator, the stand-in driver) costs no extra run.
  if (std::string why = b.whyNotTimed(); !why.empty()) {
    timing.not_timed = why;
    return std::string();
  }
  for (size_t s = 0; s < plan.argument_sets.size(); ++s) {
    if (equal_trial[s] < 0) continue;
    const ArgumentSet& set = plan.argument_sets[s];
    // Puts the set's buffers and that trial's inputs in place (and checks once more that both sides agree).
    KFUSE_ASSIGN_OR_RETURN(RunOutcome o, runOnce(plan, l, s, trials[static_cast<size_t>(equal_trial[s])]));
    if (o.kind != RunOutcome::Kind::kEqual) continue;
    auto restore = [&](const std::vector<uint64_t>& copies) {
      return [&] {
        for (size_t i = 0; i < copies.size(); ++i) {
          KFUSE_RETURN_IF_ERROR(b.copyIn(copies[i], l.host_input[i].data(), l.host_input[i].size()));
        }
        return Status::okStatus();
      };
    };
    std::vector<ValidationBackend::Launch> originals, fused(1);
    for (size_t k = 0; k < plan.kernels.size(); ++k) {
      ValidationBackend::Launch& launch = originals.emplace_back();
      launch.kernel = l.originals[k].id;
      launch.shape = set.shapes.empty() ? plan.kernels[k].shape : set.shapes[k];
      for (const ArgValue& v : set.args[k]) launch.params.push_back(argBytes(v, l.buffers[0]));
    }
    fused[0].kernel = l.fused.id;
    fused[0].shape = set.fused_shape ? *set.fused_shape : plan.fused.shape;
    for (const FusedParam& fp : plan.fused.params) {
      const ArgRef& r = fp.sources.front();
      fused[0].params.push_back(
          argBytes(set.args[static_cast<size_t>(r.kernel)][static_cast<size_t>(r.param)], l.buffers[1]));
    }
    auto original_ns = b.medianNs(originals, restore(l.buffers[0]), options.time_runs);
    if (!original_ns.ok()) {
      timing = PlanTiming{};
      timing.not_timed = original_ns.status().message();
      return std::string();
    }
    auto fused_ns = b.medianNs(fused, restore(l.buffers[1]), options.time_runs);
    if (!fused_ns.ok()) {
      timing = PlanTiming{};
      timing.not_timed = fused_ns.status().message();
      return std::string();
    }
    timing.originals_ns += *original_ns;
    timing.fused_ns += *fused_ns;
    ++timing.argument_sets;
    if (options.progress) {
      char line[160];
      std::snprintf(line, sizeof line, "argument set %zu, timed: originals %.1f us, fused %.1f us (medians of %d runs)",
                    s, static_cast<double>(*original_ns) / 1e3, static_cast<double>(*fused_ns) / 1e3,
                    options.time_runs);
      options.progress(line);
    }
  }
  timing.runs = options.time_runs;
  if (timing.argument_sets == 0) {
    timing = PlanTiming{};
    timing.not_timed = "not timed: no argument set ran on both sides";
    return std::string();
  }
  if (timing.originals_ns == 0) {
    timing = PlanTiming{};
    timing.not_timed = "not timed: the events measured no time for the original launches";
    return std::string();
  }
  if (timing.fused_ns < timing.originals_ns) return std::string();
  char buf[300];
  std::snprintf(buf, sizeof buf,
                "measured no faster on this GPU: the fused kernel took %.1f us, the %zu original launches %.1f us "
                "(medians of %d runs, summed over %d argument sets)",
                static_cast<double>(timing.fused_ns) / 1e3, plan.kernels.size(),
                static_cast<double>(timing.originals_ns) / 1e3, timing.runs, timing.argument_sets);
  return std::string(buf);
}

}  // namespace

std::string formatElement(const std::string& ptx_type, uint64_t bits) {
  return formatValue(elementType(ptx_type), bits);
}

const char* backendName(Backend b) {
  return b == Backend::kGpu ? "gpu" : "emu";
}

std::string Mismatch::sentence() const {
  return buffer_name + " differs first at element " + std::to_string(element) + " (" + element_type + "): original " +
         original + ", fused " + fused + " (argument set " + std::to_string(argument_set) + ", " + trial + ")";
}

Expected<ValidationResult> validatePlan(const Plan& plan, const std::string& plan_dir,
                                        const ValidationOptions& options) {
  auto start = std::chrono::steady_clock::now();
  if (plan.kernels.empty()) return invalidArgument(plan_dir + ": the plan has no kernels");
  if (plan.argument_sets.empty()) return invalidArgument(plan_dir + ": the plan has no argument sets to validate with");
  KFUSE_ASSIGN_OR_RETURN(Loaded loaded, load(plan, plan_dir, options));
  for (size_t s = 0; s < plan.argument_sets.size(); ++s) {
    Status st = checkArguments(plan, loaded, s);
    if (!st.ok()) return st.withContext(plan_dir + "/plan.json");
  }

  ValidationResult result;
  result.files = loaded.files;
  std::vector<Trial> trials = trialsFor(options);
  int skipped = 0;
  std::string skip_reason;
  std::vector<int> equal_trial(plan.argument_sets.size(), -1);  // per set, the first trial that compared equal
  result.timing.not_timed = "not timed: validation did not pass";
  auto finish = [&](bool passed) {
    result.passed = passed;
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  };
  // A kernel the backend refuses every launch of fails each run the same way: said before any run allocates the
  // plan's buffers (gigabytes, for a huge kernel's plan that the emulator's register limit then refuses).
  for (size_t k = 0; k < loaded.originals.size() && k < plan.kernels.size(); ++k) {
    if (loaded.originals[k].cannot_run.empty()) continue;
    result.failure = "no run could compare anything: the original " + plan.kernels[k].mangled_name +
                     " cannot run here: " + loaded.originals[k].cannot_run;
    return finish(false);
  }
  if (!loaded.fused.cannot_run.empty()) {
    result.failure = "the fused kernel " + plan.fused.name + " cannot run here: " + loaded.fused.cannot_run;
    return finish(false);
  }
  for (size_t s = 0; s < plan.argument_sets.size(); ++s) {
    const ArgumentSet& set = plan.argument_sets[s];
    for (size_t t = 0; t < trials.size(); ++t) {
      const Trial& trial = trials[t];
      std::string line = "argument set " + std::to_string(s) + (set.origin.empty() ? "" : " (" + set.origin + ")") +
                         ", " + trial.name + ": ";
      KFUSE_ASSIGN_OR_RETURN(RunOutcome o, runOnce(plan, loaded, s, trial));
      ++result.runs;
      switch (o.kind) {
        case RunOutcome::Kind::kEqual:
          line += "identical";
          if (equal_trial[s] < 0) equal_trial[s] = static_cast<int>(t);
          break;
        case RunOutcome::Kind::kMismatch: line += "MISMATCH: " + o.mismatch.sentence(); break;
        case RunOutcome::Kind::kFusedFailed: line += "FAILED: " + o.message; break;
        case RunOutcome::Kind::kOriginalFailed:
          // Inputs the original kernels cannot take (random indices, NaN sizes) say nothing about the fusion.
          line += "skipped: " + o.message;
          ++skipped;
          skip_reason = o.message;
          break;
      }
      result.trials.push_back(line);
      if (options.progress) options.progress(line);
      if (o.kind == RunOutcome::Kind::kMismatch) {
        result.mismatch = o.mismatch;
        return finish(false);
      }
      if (o.kind == RunOutcome::Kind::kFusedFailed) {
        result.failure = o.message;
        return finish(false);
      }
      if (o.kind == RunOutcome::Kind::kOriginalFailed && loaded.backend->failedLaunchIsSticky()) {
        KFUSE_ASSIGN_OR_RETURN(loaded, load(plan, plan_dir, options));
      }
    }
  }
  if (skipped == result.runs) {
    result.failure = "no run could compare anything: " + skip_reason;
    return finish(false);
  }
  if (options.time_runs <= 0) {
    result.timing.not_timed = "not timed: no timed runs were asked for";
    return finish(true);
  }
  // Equal is not enough on a GPU: a fused kernel slower than the launches it replaces is refused, as `kfuse run
  // --validate` disables it.
  KFUSE_ASSIGN_OR_RETURN(std::string slower,
                         timeAgainstOriginals(plan, loaded, trials, equal_trial, options, result.timing));
  if (!slower.empty()) {
    result.failure = slower;
    return finish(false);
  }
  return finish(true);
}

void recordValidation(PlanValidation& validation, const ValidationOptions& options, const ValidationResult& result) {
  (options.backend == Backend::kGpu ? validation.gpu : validation.emulator) =
      result.passed ? ValidationVerdict::kPassed : ValidationVerdict::kFailed;
  validation.seed = options.seed;
  validation.runs = result.runs;
  validation.mismatch = result.mismatch ? result.mismatch->sentence() : result.failure;
  validation.files = result.files;
  // An emulator's "not timed" does not replace a GPU's figures: they say something the emulator cannot.
  if (options.backend == Backend::kGpu || !validation.timing || !validation.timing->timed()) {
    validation.timing = result.timing;
  }
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  validation.validated_at = buf;
}

}  // namespace kfuse::rewriter
