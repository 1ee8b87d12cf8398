// CFG, dominators (Cooper-Harvey-Kennedy) and reaching definitions.
#include <algorithm>
#include <cstdint>
#include <unordered_map>

#include "kfuse/ptx/analysis.h"

namespace kfuse::ptx {
namespace {

bool isTerminator(const Instruction& in) {
  switch (in.opcode) {
    case Opcode::kBra:
    case Opcode::kBrx:
    case Opcode::kRet:
    case Opcode::kExit: return true;
    default: return false;
  }
}

bool noDestination(const Instruction& in) {
  switch (in.opcode) {
    case Opcode::kBar:
    case Opcode::kBarrier: return !in.has(Mod::kRed);
    case Opcode::kSt:
    case Opcode::kRed:
    case Opcode::kBra:
    case Opcode::kBrx:
    case Opcode::kRet:
    case Opcode::kExit:
    case Opcode::kTrap:
    case Opcode::kMembar:
    case Opcode::kFence:
    case Opcode::kPrefetch:
    case Opcode::kPrefetchu:
    case Opcode::kSust:
    case Opcode::kSured:
    case Opcode::kCp:
    case Opcode::kNanosleep:
    case Opcode::kPmevent:
    case Opcode::kCall:
    case Opcode::kStmatrix:
    case Opcode::kBrkpt:
    case Opcode::kGriddepcontrol:
    case Opcode::kDiscard:
    case Opcode::kApplypriority:
    case Opcode::kSetmaxnreg:
    case Opcode::kTensormap: return true;
    default: return false;
  }
}

// `Name` is std::string (copies) or std::string_view (views into the instruction).
template <typename Name>
void collectRegs(const Operand& o, std::vector<Name>* out) {
  switch (o.kind) {
    case OperandKind::kRegister:
      out->push_back(o.name);
      if (!o.pair->empty()) out->push_back(*o.pair);
      break;
    case OperandKind::kAddress:
    case OperandKind::kVector:
    case OperandKind::kList:
      for (const auto& e : o.elements) collectRegs(e, out);
      break;
    default: break;
  }
}

template <typename Name>
void defsUses(const Instruction& in, std::vector<Name>* defs, std::vector<Name>* uses) {
  if (!in.guard.empty() && uses) uses->push_back(in.guard);
  size_t first_use = 0;
  if (!in.operands.empty()) {
    const Operand& d = in.operands[0];
    const bool dest_shape =
        d.kind == OperandKind::kRegister || d.kind == OperandKind::kVector || d.kind == OperandKind::kSink;
    if (dest_shape && !noDestination(in)) {
      if (defs) collectRegs(d, defs);
      first_use = 1;
    }
  }
  if (!uses) return;
  for (size_t i = first_use; i < in.operands.size(); ++i) collectRegs(in.operands[i], uses);
}

}  // namespace

void instructionDefsUses(const Instruction& in, std::vector<std::string>* defs, std::vector<std::string>* uses) {
  defsUses(in, defs, uses);
}

void instructionDefsUsesViews(const Instruction& in, std::vector<std::string_view>* defs,
                              std::vector<std::string_view>* uses) {
  defsUses(in, defs, uses);
}

Cfg Cfg::build(const Function& f) {
  Cfg cfg;
  const auto& body = f.body;
  cfg.block_of_.assign(body.size(), -1);
  if (body.empty()) {
    cfg.blocks_.push_back({});
    return cfg;
  }
  std::vector<char> leader(body.size(), 0);
  if (!leader.empty()) leader.front() = 1;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i].kind == StatementKind::kLabel) leader[i] = 1;
    if (body[i].kind == StatementKind::kInstruction && isTerminator(body[i].inst) && i + 1 < body.size())
      leader[i + 1] = 1;
  }
  std::unordered_map<std::string, int> label_block;
  for (size_t i = 0; i < body.size(); ++i) {
    if (leader[i]) {
      BasicBlock b;
      b.begin = i;
      if (body[i].kind == StatementKind::kLabel) b.label = *body[i].text;
      cfg.blocks_.push_back(std::move(b));
    }
    const int id = static_cast<int>(cfg.blocks_.size()) - 1;
    cfg.blocks_.back().end = i + 1;
    cfg.block_of_[i] = id;
    if (body[i].kind == StatementKind::kLabel) label_block.emplace(*body[i].text, id);
  }
  const int n = static_cast<int>(cfg.blocks_.size());
  auto addEdge = [&](int a, int b) {
    if (b < 0 || b >= n) return;
    auto& s = cfg.blocks_[static_cast<size_t>(a)].succs;
    if (std::find(s.begin(), s.end(), b) == s.end()) {
      s.push_back(b);
      cfg.blocks_[static_cast<size_t>(b)].preds.push_back(a);
    }
  };
  for (int b = 0; b < n; ++b) {
    const Statement& last = body[cfg.blocks_[static_cast<size_t>(b)].end - 1];
    if (last.kind != StatementKind::kInstruction || !isTerminator(last.inst)) {
      addEdge(b, b + 1);
      continue;
    }
    const Instruction& in = last.inst;
    const bool guarded = !in.guard.empty();
    if (in.opcode == Opcode::kBra) {
      if (!in.operands.empty() && in.operands[0].kind == OperandKind::kSymbol) {
        auto it = label_block.find(in.operands[0].name);
        if (it != label_block.end()) {
          addEdge(b, it->second);
        } else {
          cfg.indirect_ = true;
        }
      }
      if (guarded) addEdge(b, b + 1);
    } else if (in.opcode == Opcode::kBrx) {
      // brx.idx through a .branchtargets list: any label may be a target.
      cfg.indirect_ = true;
      for (const auto& [name, id] : label_block) addEdge(b, id);
      if (guarded) addEdge(b, b + 1);
    } else if (guarded) {  // @p ret / @p exit
      addEdge(b, b + 1);
    }
  }
  return cfg;
}

Dominators Dominators::compute(const Cfg& cfg) {
  Dominators d;
  const auto& blocks = cfg.blocks();
  const int n = static_cast<int>(blocks.size());
  d.idom_.assign(static_cast<size_t>(n), -1);
  d.reach_.assign(static_cast<size_t>(n), 0);
  if (n == 0) return d;
  // reverse post-order by iterative DFS
  std::vector<int> order;
  std::vector<int> rpo_index(static_cast<size_t>(n), -1);
  {
    std::vector<std::pair<int, size_t>> stack{{0, 0}};
    d.reach_[0] = 1;
    while (!stack.empty()) {
      auto& [b, i] = stack.back();
      const auto& s = blocks[static_cast<size_t>(b)].succs;
      if (i < s.size()) {
        const int next = s[i++];
        if (!d.reach_[static_cast<size_t>(next)]) {
          d.reach_[static_cast<size_t>(next)] = 1;
          stack.push_back({next, 0});
        }
      } else {
        order.push_back(b);
        stack.pop_back();
      }
    }
  }
  std::reverse(order.begin(), order.end());
  for (size_t i = 0; i < order.size(); ++i) rpo_index[static_cast<size_t>(order[i])] = static_cast<int>(i);
  std::vector<int> idom(static_cast<size_t>(n), -1);
  idom[0] = 0;
  auto intersect = [&](int a, int b) {
    while (a != b) {
      while (rpo_index[static_cast<size_t>(a)] > rpo_index[static_cast<size_t>(b)]) a = idom[static_cast<size_t>(a)];
      while (rpo_index[static_cast<size_t>(b)] > rpo_index[static_cast<size_t>(a)]) b = idom[static_cast<size_t>(b)];
    }
    return a;
  };
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t k = 1; k < order.size(); ++k) {
      const int b = order[k];
      int new_idom = -1;
      for (int p : blocks[static_cast<size_t>(b)].preds) {
        if (idom[static_cast<size_t>(p)] == -1) continue;
        new_idom = new_idom == -1 ? p : intersect(p, new_idom);
      }
      if (new_idom != -1 && idom[static_cast<size_t>(b)] != new_idom) {
        idom[static_cast<size_t>(b)] = new_idom;
        changed = true;
      }
    }
  }
  for (int b = 1; b < n; ++b) d.idom_[static_cast<size_t>(b)] = idom[static_cast<size_t>(b)];
  // pre/post numbering of the dominator tree makes dominates() O(1)
  std::vector<std::vector<int>> children(static_cast<size_t>(n));
  for (int b = 1; b < n; ++b) {
    if (d.idom_[static_cast<size_t>(b)] >= 0)
      children[static_cast<size_t>(d.idom_[static_cast<size_t>(b)])].push_back(b);
  }
  d.pre_.assign(static_cast<size_t>(n), -1);
  d.post_.assign(static_cast<size_t>(n), -1);
  int clock = 0;
  std::vector<std::pair<int, size_t>> stack{{0, 0}};
  d.pre_[0] = clock++;
  while (!stack.empty()) {
    auto& [b, i] = stack.back();
    const auto& c = children[static_cast<size_t>(b)];
    if (i < c.size()) {
      const int next = c[i++];
      d.pre_[static_cast<size_t>(next)] = clock++;
      stack.push_back({next, 0});
    } else {
      d.post_[static_cast<size_t>(b)] = clock++;
      stack.pop_back();
    }
  }
  return d;
}

std::vector<char> blocksInLoops(const Cfg& cfg) {
  // A block is on a cycle when its strongly connected component has more than one block or it branches to itself:
  // Tarjan's algorithm, iterative (a generated kernel may have a million blocks), linear in blocks and edges.
  const auto& blocks = cfg.blocks();
  const size_t n = blocks.size();
  std::vector<char> in_loop(n, 0);
  constexpr int kUnvisited = -1;
  std::vector<int> index(n, kUnvisited), low(n, 0);
  std::vector<char> on_stack(n, 0);
  std::vector<int> stack;
  struct Frame {
    int block;
    size_t next;  // the next successor to look at
  };
  std::vector<Frame> dfs;
  int counter = 0;
  for (size_t root = 0; root < n; ++root) {
    if (index[root] != kUnvisited) continue;
    dfs.push_back({static_cast<int>(root), 0});
    index[root] = low[root] = counter++;
    stack.push_back(static_cast<int>(root));
    on_stack[root] = 1;
    while (!dfs.empty()) {
      Frame& f = dfs.back();
      const auto v = static_cast<size_t>(f.block);
      const std::vector<int>& succs = blocks[v].succs;
      if (f.next < succs.size()) {
        const int w = succs[f.next++];
        if (w < 0 || static_cast<size_t>(w) >= n) continue;
        const auto uw = static_cast<size_t>(w);
        if (uw == v) in_loop[v] = 1;  // a branch to itself
        if (index[uw] == kUnvisited) {
          index[uw] = low[uw] = counter++;
          stack.push_back(w);
          on_stack[uw] = 1;
          dfs.push_back({w, 0});
        } else if (on_stack[uw]) {
          low[v] = std::min(low[v], index[uw]);
        }
        continue;
      }
      if (low[v] == index[v]) {  // v roots a component: pop it
        size_t size = 0;
        const size_t bottom = stack.size();
        size_t top = bottom;
        do {
          --top;
          ++size;
        } while (stack[top] != f.block);
        for (size_t i = top; i < bottom; ++i) {
          const auto x = static_cast<size_t>(stack[i]);
          on_stack[x] = 0;
          if (size > 1) in_loop[x] = 1;
        }
        stack.resize(top);
      }
      const int done = f.block;
      dfs.pop_back();
      if (!dfs.empty()) {
        const auto parent = static_cast<size_t>(dfs.back().block);
        low[parent] = std::min(low[parent], low[static_cast<size_t>(done)]);
      }
    }
  }
  return in_loop;
}

bool Dominators::dominates(int a, int b) const {
  if (!reachable(a) || !reachable(b)) return false;
  const auto ua = static_cast<size_t>(a), ub = static_cast<size_t>(b);
  return pre_[ua] <= pre_[ub] && post_[ub] <= post_[ua];
}

DefUse DefUse::compute(const Function& f, const Cfg& cfg) {
  DefUse du;
  du.cfg_ = &cfg;
  const size_t n = f.body.size();
  du.def_begin_.assign(n + 1, 0);
  du.use_begin_.assign(n + 1, 0);
  du.guarded_.assign(n, 0);
  auto& guarded = du.guarded_;
  du.reg_ids_ = NameTable(/*expected=*/n);
  auto idOf = [&](std::string_view r) { return du.reg_ids_.intern(r); };
  std::vector<std::string_view> defs, uses;
  for (size_t i = 0; i < n; ++i) {
    du.def_begin_[i] = du.def_regs_.size();
    du.use_begin_[i] = du.use_regs_.size();
    const Statement& st = f.body[i];
    if (st.kind != StatementKind::kInstruction) continue;
    defs.clear();
    uses.clear();
    instructionDefsUsesViews(st.inst, &defs, &uses);
    guarded[i] = !st.inst.guard.empty();
    for (std::string_view r : defs) {
      du.def_regs_.push_back(idOf(r));
      du.def_stmt_.push_back(i);
    }
    for (std::string_view r : uses) du.use_regs_.push_back(idOf(r));
  }
  du.def_begin_[n] = du.def_regs_.size();
  du.use_begin_[n] = du.use_regs_.size();
  const size_t ndefs = du.def_regs_.size();
  // Def ids grouped by register (counted, then placed in def-id order).
  du.reg_def_begin_.assign(du.reg_ids_.size() + 1, 0);
  for (int r : du.def_regs_) ++du.reg_def_begin_[static_cast<size_t>(r) + 1];
  for (size_t r = 0; r < du.reg_ids_.size(); ++r) du.reg_def_begin_[r + 1] += du.reg_def_begin_[r];
  du.reg_defs_.resize(ndefs);
  {
    std::vector<size_t> next(du.reg_def_begin_.begin(), du.reg_def_begin_.end() - 1);
    for (size_t id = 0; id < ndefs; ++id) du.reg_defs_[next[static_cast<size_t>(du.def_regs_[id])]++] = id;
  }
  const size_t words = (ndefs + 63) / 64;
  const auto& blocks = cfg.blocks();
  const size_t nb = blocks.size();
  // Bit-vector data flow needs 4 * blocks * defs bits. Beyond ~128 MiB fall back to "every definition of the
  // register reaches" (conservative: analyses then see several definitions and give up on the value).
  constexpr size_t kMaxWords = size_t{4} << 20;
  if (nb != 0 && words > kMaxWords / nb) {
    du.approximate_ = true;
    return du;
  }
  std::vector<std::vector<uint64_t>> gen(nb, std::vector<uint64_t>(words)), kill(nb, std::vector<uint64_t>(words));
  auto set = [](std::vector<uint64_t>& v, size_t bit) { v[bit / 64] |= uint64_t{1} << (bit % 64); };
  auto clear = [](std::vector<uint64_t>& v, size_t bit) { v[bit / 64] &= ~(uint64_t{1} << (bit % 64)); };
  // Per block: an unguarded definition of r kills every definition of r, and only the definitions of r from the
  // block's last unguarded one on are generated. Each register's definitions are walked once per block that
  // defines it unguarded (not once per definition: 100k redefinitions of one register in a block would be 10^10).
  std::vector<size_t> last_unguarded(du.reg_ids_.size(), SIZE_MAX);
  std::vector<size_t> touched;
  for (size_t b = 0; b < nb; ++b) {
    touched.clear();
    for (size_t id = du.def_begin_[blocks[b].begin]; id < du.def_begin_[blocks[b].end]; ++id) {
      if (guarded[du.def_stmt_[id]]) continue;
      const auto r = static_cast<size_t>(du.def_regs_[id]);
      if (last_unguarded[r] == SIZE_MAX) touched.push_back(r);
      last_unguarded[r] = id;
    }
    for (size_t r : touched) {
      for (size_t k = du.reg_def_begin_[r]; k < du.reg_def_begin_[r + 1]; ++k) set(kill[b], du.reg_defs_[k]);
    }
    for (size_t id = du.def_begin_[blocks[b].begin]; id < du.def_begin_[blocks[b].end]; ++id) {
      const size_t last = last_unguarded[static_cast<size_t>(du.def_regs_[id])];
      if (last != SIZE_MAX && id < last) continue;
      set(gen[b], id);
      clear(kill[b], id);
    }
    for (size_t r : touched) last_unguarded[r] = SIZE_MAX;
  }
  du.block_in_.assign(nb, std::vector<uint64_t>(words));
  std::vector<std::vector<uint64_t>> out(nb, std::vector<uint64_t>(words));
  for (size_t b = 0; b < nb; ++b) out[b] = gen[b];
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t b = 0; b < nb; ++b) {
      auto& in = du.block_in_[b];
      for (int p : blocks[b].preds) {
        const auto& po = out[static_cast<size_t>(p)];
        for (size_t w = 0; w < words; ++w) in[w] |= po[w];
      }
      for (size_t w = 0; w < words; ++w) {
        const uint64_t o = gen[b][w] | (in[w] & ~kill[b][w]);
        if (o != out[b][w]) {
          out[b][w] = o;
          changed = true;
        }
      }
    }
  }
  return du;
}

int DefUse::regId(std::string_view reg) const {
  return reg_ids_.find(reg);
}

std::vector<size_t> DefUse::reachingDefs(size_t stmt, std::string_view reg) const {
  return reachingDefsOf(stmt, regId(reg));
}

std::vector<size_t> DefUse::reachingDefsOf(size_t stmt, int reg) const {
  std::vector<size_t> out;
  const int b = cfg_->blockOf(stmt);
  if (b < 0 || reg < 0) return out;
  const BasicBlock& bb = cfg_->blocks()[static_cast<size_t>(b)];
  // The register's definitions in its block before `stmt`, latest first: found by binary search in its def ids
  // (statement order), not by walking the block back, which made a query O(block length) and a straight-line
  // kernel of a million instructions quadratic.
  const auto r = static_cast<size_t>(reg);
  const auto defs_begin = reg_defs_.begin() + static_cast<std::ptrdiff_t>(reg_def_begin_[r]);
  const auto defs_end = reg_defs_.begin() + static_cast<std::ptrdiff_t>(reg_def_begin_[r + 1]);
  for (auto it = std::lower_bound(defs_begin, defs_end, def_begin_[stmt]); it != defs_begin;) {
    const size_t i = def_stmt_[*--it];
    if (i < bb.begin) break;
    if (!out.empty() && out.back() == i) continue;  // a statement defining the register twice
    out.push_back(i);
    // a guarded definition may not execute, so earlier ones still reach; an unguarded one hides them (exact even
    // when the data flow was too large: the block itself says so)
    if (!guarded_[i]) return out;
  }
  if (approximate_) return allDefsOf(reg);  // a superset of the guarded ones found above
  const auto& in = block_in_[static_cast<size_t>(b)];
  for (size_t k = reg_def_begin_[r]; k < reg_def_begin_[r + 1]; ++k) {
    const size_t id = reg_defs_[k];
    if (in[id / 64] >> (id % 64) & 1) out.push_back(def_stmt_[id]);
  }
  return out;
}

std::vector<size_t> DefUse::usersOf(size_t def_stmt, std::string_view reg) const {
  std::vector<size_t> out;
  const int id = regId(reg);
  if (id < 0) return out;
  for (size_t i = 0; i + 1 < use_begin_.size(); ++i) {
    const auto first = use_regs_.begin() + static_cast<std::ptrdiff_t>(use_begin_[i]);
    const auto last = use_regs_.begin() + static_cast<std::ptrdiff_t>(use_begin_[i + 1]);
    if (std::find(first, last, id) == last) continue;
    auto defs = reachingDefsOf(i, id);
    if (std::find(defs.begin(), defs.end(), def_stmt) != defs.end()) out.push_back(i);
  }
  return out;
}

std::vector<size_t> DefUse::allDefs(std::string_view reg) const {
  return allDefsOf(regId(reg));
}

std::vector<size_t> DefUse::allDefsOf(int reg) const {
  std::vector<size_t> out;
  if (reg < 0) return out;
  const auto r = static_cast<size_t>(reg);
  for (size_t k = reg_def_begin_[r]; k < reg_def_begin_[r + 1]; ++k) out.push_back(def_stmt_[reg_defs_[k]]);
  return out;
}

}  // namespace kfuse::ptx
