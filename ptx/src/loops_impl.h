// What loops.cpp and grid_stride.cpp share: value texts as trees, index arithmetic in one canonical form, and the
// statement helpers both read loops with.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kfuse/ptx/analysis.h"
#include "kfuse/ptx/ir.h"

namespace kfuse::ptx::detail {

constexpr const char* kLaunchIndex = "add(%tid.x,mul(%ctaid.x,%ntid.x))";
constexpr const char* kLaunchThreads = "mul(%nctaid.x,%ntid.x)";

// A value text (ValueNumbering) as a tree: `op(child,child)` or a leaf (`%tid.x`, `4`, `<iv>`, `param:n+0`).
struct ValueTree {
  std::string op;
  std::vector<ValueTree> children;
  std::string text() const {
    if (children.empty()) return op;
    std::string t = op + "(";
    for (size_t i = 0; i < children.size(); ++i) t += (i ? "," : "") + children[i].text();
    return t + ")";
  }
};

std::optional<ValueTree> parseValue(std::string_view s);

// Integer index arithmetic with the widths and copies taken out, sums and products in one order (the launch index
// becomes kLaunchIndex). Only for values that stay below 2^31, where the widths do not change them.
ValueTree canonicalIndex(const ValueTree& t);

// A comparison `x < y` (less) or `x >= y`, of one integer type, from a setp value text (a leading `!` folded in).
struct Comparison {
  bool less = false;
  std::string type;
  ValueTree x, y;
};
std::optional<Comparison> comparison(const std::string& text);

// The parameters whose product a bound value is (`ld.param.u32(param:n+0)`, possibly widened, or products of such
// loads, at most four); empty when it is not one.
std::vector<int> boundParameters(const Function& f, const ValueTree& n);

// Instructions whose result is a function of their operands alone.
bool pureOpcode(Opcode op);
bool defines(const Instruction& in, std::string_view reg);
std::vector<size_t> instructionsOf(const Function& f, const BasicBlock& b);
std::string branchTarget(const Instruction& in);
// Why a loop body's instruction stops its iterations being reordered or interleaved; nullopt when nothing does.
std::optional<std::string> notInterleavable(const Instruction& in);
bool isMemory(const Instruction& in);

}  // namespace kfuse::ptx::detail
