#include "kfuse/ptx/parser.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <utility>

#include "lexer.h"
#include "opcodes.h"

namespace kfuse::ptx {
namespace {

using detail::Lexer;
using detail::Tok;
using detail::Token;

constexpr int kMaxOperandDepth = 16;
constexpr int kMaxBlockDepth = 64;
constexpr size_t kMaxOtherModifiers = 255;  // Modifier::value indexes them in 8 bits

bool isStateSpace(std::string_view s) {
  return s == ".reg" || s == ".param" || s == ".global" || s == ".shared" || s == ".const" || s == ".local" ||
         s == ".tex" || s == ".sreg" || s == ".texref" || s == ".surfref" || s == ".samplerref";
}
bool isLinkage(std::string_view s) {
  return s == ".visible" || s == ".extern" || s == ".weak" || s == ".common";
}
bool isPtrSpace(std::string_view s) {
  return s == ".global" || s == ".shared" || s == ".const" || s == ".local";
}

std::string_view trimRight(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::string describe(const Token& t) {
  switch (t.kind) {
    case Tok::kEnd: return "end of input";
    case Tok::kError: return "invalid character '" + std::string(t.text) + "'";
    default: return "'" + std::string(t.text.substr(0, 40)) + "'";
  }
}

class Parser {
 public:
  Parser(std::string_view text, std::string_view file) : lex_(text), file_(file) {}

  Expected<Module> run() {
    Module m;
    Status s = parseModuleBody(m);
    if (!s.ok()) return s;
    return m;
  }

 private:
  Status fail(const Token& t, std::string_view expected) {
    return badFormat(std::string(file_) + ":" + std::to_string(t.line) + ":" + std::to_string(t.column) +
                     ": expected " + std::string(expected) + ", found " + describe(t));
  }
  Status failMsg(const Token& t, const std::string& msg) {
    return badFormat(std::string(file_) + ":" + std::to_string(t.line) + ":" + std::to_string(t.column) + ": " + msg);
  }
  static SourceLoc locOf(const Token& t) { return {t.line, t.column}; }

  Status expectPunct(char c, std::string_view what) {
    Token t = lex_.take();
    if (t.punct() != c) return fail(t, what);
    return {};
  }
  bool acceptPunct(char c) {
    if (lex_.peek().punct() == c) {
      lex_.take();
      return true;
    }
    return false;
  }

  // Verbatim text from `start` to the end of its line (comments dropped); continues after the line.
  std::string restOfLine(size_t start) {
    lex_.rewindToPeek();
    std::string_view text = lex_.text();
    size_t end = start;
    while (end < text.size() && text[end] != '\n') {
      if (text[end] == '/' && end + 1 < text.size() && text[end + 1] == '/') break;
      ++end;
    }
    std::string out(trimRight(text.substr(start, end - start)));
    lex_.seek(end);
    return out;
  }

  // Verbatim text from `start` up to and including the next ';' outside strings and braces.
  Expected<std::string> toSemicolon(size_t start, const Token& at) {
    lex_.rewindToPeek();
    std::string_view text = lex_.text();
    size_t i = start;
    int depth = 0;
    while (i < text.size()) {
      const char c = text[i];
      if (c == '"') {
        ++i;
        while (i < text.size() && text[i] != '"' && text[i] != '\n') ++i;
      } else if (c == '{') {
        ++depth;
      } else if (c == '}') {
        if (--depth < 0) break;
      } else if (c == ';' && depth == 0) {
        std::string out(text.substr(start, i + 1 - start));
        lex_.seek(i + 1);
        return out;
      }
      ++i;
    }
    return failMsg(at, "unterminated directive: expected ';'");
  }

  // Verbatim `.section name { ... }` block.
  Expected<std::string> sectionBlock(size_t start, const Token& at) {
    lex_.rewindToPeek();
    std::string_view text = lex_.text();
    size_t i = start;
    while (i < text.size() && text[i] != '{' && text[i] != ';') ++i;
    if (i >= text.size()) return failMsg(at, "unterminated .section: expected '{'");
    if (text[i] == ';') {
      lex_.seek(i + 1);
      return std::string(text.substr(start, i + 1 - start));
    }
    int depth = 0;
    for (; i < text.size(); ++i) {
      if (text[i] == '{') {
        ++depth;
      } else if (text[i] == '}') {
        if (--depth == 0) {
          std::string out(text.substr(start, i + 1 - start));
          lex_.seek(i + 1);
          return out;
        }
      }
    }
    return failMsg(at, "unterminated .section block: expected '}'");
  }

  Status parseModuleBody(Module& m) {
    bool saw_version = false;
    for (;;) {
      Token t = lex_.take();
      if (t.kind == Tok::kEnd) break;
      if (t.kind != Tok::kIdent || t.text[0] != '.') return fail(t, "a directive (.version, .entry, .global, ...)");
      const std::string_view d = t.text;
      if (d == ".version") {
        Token v = lex_.take();
        if (v.kind != Tok::kNumber) return fail(v, "a version number after .version");
        m.version = std::string(v.text);
        saw_version = true;
      } else if (d == ".target") {
        Token first = lex_.peek();
        if (first.kind != Tok::kIdent) return fail(first, "a target name after .target");
        m.target = restOfLine(first.offset);
      } else if (d == ".address_size") {
        Token v = lex_.take();
        auto n = parseIntegerLiteral(v.text);
        if (v.kind != Tok::kNumber || !n || (*n != 32 && *n != 64)) return fail(v, "32 or 64 after .address_size");
        m.address_size = static_cast<uint32_t>(*n);
      } else if (d == ".file") {
        m.verbatim.push_back(restOfLine(t.offset));
        m.order.push_back({TopLevelKind::kVerbatim, m.verbatim.size() - 1});
      } else if (d == ".section") {
        auto s = sectionBlock(t.offset, t);
        if (!s.ok()) return s.status();
        m.verbatim.push_back(std::move(s).value());
        m.order.push_back({TopLevelKind::kVerbatim, m.verbatim.size() - 1});
      } else if (d == ".entry" || d == ".func" || isLinkage(d)) {
        Linkage linkage = Linkage::kNone;
        Token kw = t;
        if (isLinkage(d)) {
          linkage = detail::lookupLinkage(d);
          const Token& p = lex_.peek();
          if (p.kind == Tok::kIdent && (p.text == ".entry" || p.text == ".func")) {
            kw = lex_.take();
          } else {
            std::vector<VariableDecl> decls;
            KFUSE_RETURN_IF_ERROR(parseDecls(lex_.take(), decls, /*allow_init=*/true));
            KFUSE_RETURN_IF_ERROR(endDecl());
            for (auto& v : decls) {
              v.linkage = linkage;
              m.variables.push_back(std::move(v));
              m.order.push_back({TopLevelKind::kVariable, m.variables.size() - 1});
            }
            continue;
          }
        }
        m.functions.emplace_back();
        Function& f = m.functions.back();
        f.linkage = linkage;
        KFUSE_RETURN_IF_ERROR(parseFunction(f, kw));
        m.order.push_back({TopLevelKind::kFunction, m.functions.size() - 1});
      } else if (isStateSpace(d)) {
        std::vector<VariableDecl> decls;
        KFUSE_RETURN_IF_ERROR(parseDecls(t, decls, /*allow_init=*/true));
        KFUSE_RETURN_IF_ERROR(endDecl());
        for (auto& v : decls) {
          m.variables.push_back(std::move(v));
          m.order.push_back({TopLevelKind::kVariable, m.variables.size() - 1});
        }
      } else {
        // .alias, .pragma and directives newer than this parser: kept verbatim.
        auto s = toSemicolon(t.offset, t);
        if (!s.ok()) return s.status();
        m.verbatim.push_back(std::move(s).value());
        m.order.push_back({TopLevelKind::kVerbatim, m.verbatim.size() - 1});
      }
    }
    if (!saw_version) return badFormat(std::string(file_) + ":1:1: expected a .version directive");
    if (m.target.empty()) return badFormat(std::string(file_) + ":1:1: expected a .target directive");
    return {};
  }

  // Parses the qualifiers and declarators of a declaration whose first token (a state space or, for
  // parameters, `.param`/`.reg`) is `first`. Stops before ';' / ',' / ')'. Several declarators
  // (`.reg .b32 %a, %b;`) give several decls when `allow_multi`.
  Status parseDecls(const Token& first, std::vector<VariableDecl>& out, bool allow_init, bool allow_multi = true) {
    VariableDecl d;
    d.loc = locOf(first);
    if (first.kind != Tok::kIdent) return fail(first, "a state space");
    if (!isStateSpace(first.text)) return fail(first, "a state space (.reg, .param, .global, ...)");
    d.space = detail::lookupSpace(first.text);
    bool after_ptr = false;
    for (;;) {
      const Token& p = lex_.peek();
      if (p.kind != Tok::kIdent || p.text[0] != '.') break;
      Token q = lex_.take();
      const std::string_view s = q.text;
      if (s == ".align") {
        Token n = lex_.take();
        auto v = parseIntegerLiteral(n.text);
        if (n.kind != Tok::kNumber || !v || *v <= 0 || *v > (1 << 20)) return fail(n, "an alignment after .align");
        (after_ptr ? d.ptr_align : d.align) = static_cast<uint32_t>(*v);
      } else if (s == ".ptr") {
        d.is_ptr = true;
        after_ptr = true;
      } else if (after_ptr && isPtrSpace(s)) {
        d.ptr_space = detail::lookupSpace(s);
      } else if (s == ".v2" || s == ".v4" || s == ".v8") {
        d.vector = static_cast<uint32_t>(s[2] - '0');
      } else if (s == ".attribute") {
        // .attribute(.managed): kept verbatim
        std::string attr(s);
        KFUSE_RETURN_IF_ERROR(expectPunct('(', "'(' after .attribute"));
        attr += "(";
        for (int guard = 0;; ++guard) {
          Token a = lex_.take();
          if (a.punct() == ')') break;
          if (a.kind == Tok::kEnd || guard > 64) return fail(a, "')' closing .attribute(");
          if (a.punct() == ',') {
            attr += ", ";
          } else {
            attr += a.text;
          }
        }
        attr += ")";
        d.attributes.push_back(std::move(attr));
      } else if (d.type == DataType::kNone && d.unknown_type.empty() && !isStateSpace(s) && !isLinkage(s)) {
        d.type = detail::lookupType(s);
        if (d.type == DataType::kNone) d.unknown_type = std::string(s);
      } else {
        d.attributes.emplace_back(s);
      }
    }
    for (;;) {
      VariableDecl v = d;
      Token name = lex_.take();
      if (name.kind != Tok::kIdent || name.text[0] == '.') return fail(name, "a name in the declaration");
      v.name = std::string(name.text);
      v.loc = locOf(name);
      if (acceptPunct('<')) {
        Token n = lex_.take();
        auto r = parseIntegerLiteral(n.text);
        if (n.kind != Tok::kNumber || !r || *r < 0 || *r > (1 << 24)) return fail(n, "a register count in <N>");
        v.range = *r;
        KFUSE_RETURN_IF_ERROR(expectPunct('>', "'>' after the register count"));
      }
      while (acceptPunct('[')) {
        if (v.dims.size() > 8) return fail(lex_.peek(), "at most 8 array dimensions");
        if (acceptPunct(']')) {
          v.dims.push_back(0);
          continue;
        }
        Token n = lex_.take();
        auto r = parseIntegerLiteral(n.text);
        if (n.kind != Tok::kNumber || !r || *r <= 0) return fail(n, "an array size");
        v.dims.push_back(*r);
        KFUSE_RETURN_IF_ERROR(expectPunct(']', "']' after the array size"));
      }
      if (allow_init && lex_.peek().punct() == '=') {
        Token eq = lex_.take();
        const size_t start = eq.offset + 1;
        auto txt = toSemicolon(start, eq);
        if (!txt.ok()) return txt.status();
        // leave the ';' to the caller: rewind one character
        std::string s = std::move(txt).value();
        s.pop_back();
        size_t b = 0;
        while (b < s.size() && (s[b] == ' ' || s[b] == '\t' || s[b] == '\n' || s[b] == '\r')) ++b;
        v.initializer = std::string(trimRight(std::string_view(s).substr(b)));
        out.push_back(std::move(v));
        semicolon_consumed_ = true;
        return {};
      }
      out.push_back(std::move(v));
      if (allow_multi && lex_.peek().punct() == ',') {
        lex_.take();
        continue;
      }
      return {};
    }
  }

  // Wraps expectPunct(';') for declarations whose initializer capture already consumed it.
  Status endDecl() {
    if (semicolon_consumed_) {
      semicolon_consumed_ = false;
      return {};
    }
    return expectPunct(';', "';' after a declaration");
  }

  Status parseParamList(std::vector<VariableDecl>& out) {
    // '(' already taken
    if (acceptPunct(')')) return {};
    for (;;) {
      Token first = lex_.take();
      std::vector<VariableDecl> one;
      KFUSE_RETURN_IF_ERROR(parseDecls(first, one, /*allow_init=*/false, /*allow_multi=*/false));
      for (auto& v : one) out.push_back(std::move(v));
      Token sep = lex_.take();
      if (sep.punct() == ')') return {};
      if (sep.punct() != ',') return fail(sep, "',' or ')' in the parameter list");
    }
  }

  Status parseFunction(Function& f, const Token& kw) {
    f.is_entry = kw.text == ".entry";
    f.loc = locOf(kw);
    if (!f.is_entry && acceptPunct('(')) KFUSE_RETURN_IF_ERROR(parseParamList(f.returns));
    Token name = lex_.take();
    if (name.kind != Tok::kIdent || name.text[0] == '.') return fail(name, "a function name");
    f.name = std::string(name.text);
    if (acceptPunct('(')) {
      f.has_param_list = true;
      KFUSE_RETURN_IF_ERROR(parseParamList(f.params));
    }
    for (;;) {
      Token t = lex_.take();
      if (t.punct() == ';') {
        f.has_body = false;
        return {};
      }
      if (t.punct() == '{') break;
      if (t.kind == Tok::kIdent && t.text[0] == '.') {
        PerfDirective pd;
        pd.name = std::string(t.text);
        while (lex_.peek().kind == Tok::kNumber) {
          Token n = lex_.take();
          auto v = parseIntegerLiteral(n.text);
          if (!v) return fail(n, "an integer in " + pd.name);
          pd.values.push_back(*v);
          if (!acceptPunct(',')) break;
        }
        f.directives.push_back(std::move(pd));
        continue;
      }
      return fail(t, "'{', ';' or a performance directive after the function signature");
    }
    f.has_body = true;
    return parseBody(f);
  }

  Status parseBody(Function& f) {
    int depth = 1;
    for (;;) {
      Token t = lex_.take();
      switch (t.kind) {
        case Tok::kEnd: return fail(t, "'}' closing the body of " + f.name);
        case Tok::kPunct: {
          const char c = t.text[0];
          if (c == '}') {
            if (--depth == 0) {
              f.body.shrink_to_fit();  // growth by doubling leaves up to half the statements' bytes unused
              return {};
            }
            f.body.emplace_back().kind = StatementKind::kBlockEnd;
            f.body.back().loc = locOf(t);
            continue;
          }
          if (c == '{') {
            if (++depth > kMaxBlockDepth) return failMsg(t, "blocks nested too deeply");
            f.body.emplace_back().kind = StatementKind::kBlockBegin;
            f.body.back().loc = locOf(t);
            continue;
          }
          if (c == '@') {
            Statement& st = f.body.emplace_back();
            st.kind = StatementKind::kInstruction;
            st.loc = locOf(t);
            Instruction& in = st.inst;
            in.loc = st.loc;
            if (acceptPunct('!')) in.guard_negated = true;
            Token g = lex_.take();
            if (g.kind != Tok::kIdent) return fail(g, "a predicate register after '@'");
            in.guard = std::string(g.text);
            Token op = lex_.take();
            if (op.kind != Tok::kIdent || op.text[0] == '.') return fail(op, "an instruction after the guard");
            KFUSE_RETURN_IF_ERROR(parseInstruction(in, op));
            continue;
          }
          if (c == ';') continue;  // an empty statement
          return fail(t, "a statement");
        }
        case Tok::kIdent: {
          const std::string_view s = t.text;
          if (s[0] == '.') {
            if (s == ".reg" || s == ".local" || s == ".shared" || s == ".param" || s == ".const" || s == ".global" ||
                s == ".tex") {
              std::vector<VariableDecl> decls;
              KFUSE_RETURN_IF_ERROR(parseDecls(t, decls, /*allow_init=*/true));
              KFUSE_RETURN_IF_ERROR(endDecl());
              for (auto& v : decls) {
                Statement& st = f.body.emplace_back();
                st.kind = StatementKind::kDeclaration;
                st.loc = v.loc;
                st.decl = std::move(v);
              }
            } else if (s == ".loc" || s == ".file") {
              Statement& st = f.body.emplace_back();
              st.kind = StatementKind::kDirective;
              st.loc = locOf(t);
              st.text = restOfLine(t.offset);
            } else {
              auto txt = toSemicolon(t.offset, t);
              if (!txt.ok()) return txt.status();
              Statement& st = f.body.emplace_back();
              st.kind = StatementKind::kDirective;
              st.loc = locOf(t);
              st.text = std::move(txt).value();
            }
            continue;
          }
          if (lex_.peek().punct() == ':') {
            lex_.take();
            Statement& st = f.body.emplace_back();
            st.kind = StatementKind::kLabel;
            st.loc = locOf(t);
            st.text = std::string(s);
            continue;
          }
          Statement& st = f.body.emplace_back();
          st.kind = StatementKind::kInstruction;
          st.loc = locOf(t);
          st.inst.loc = st.loc;
          KFUSE_RETURN_IF_ERROR(parseInstruction(st.inst, t));
          continue;
        }
        default: return fail(t, "a statement");
      }
    }
  }

  Status parseInstruction(Instruction& in, const Token& op) {
    std::string_view s = op.text;
    size_t dot = s.find('.');
    const std::string_view name = s.substr(0, dot);
    in.opcode = detail::lookupOpcode(name);
    if (in.opcode == Opcode::kUnknown)
      in.spelled.mut().unknown_opcode = std::string(name);  // newer than the enum: kept
    while (dot != std::string_view::npos) {
      size_t nextDot = s.find('.', dot + 1);
      if (in.spelled->other_modifiers.size() >= kMaxOtherModifiers) return fail(op, "fewer modifiers");
      in.addModifier(s.substr(dot, nextDot == std::string_view::npos ? nextDot : nextDot - dot));
      dot = nextDot;
    }
    if (acceptPunct(';')) return {};
    // Operands are parsed into a scratch list and moved into one exact allocation: growing the instruction's own
    // list (1, 2, 4) left a fourth Operand unused behind most three-operand instructions (a tenth of the IR).
    operand_scratch_.clear();
    for (;;) {
      Operand& o = operand_scratch_.emplace_back();
      KFUSE_RETURN_IF_ERROR(parseOperand(o, 0, /*allow_offset=*/true));
      Token sep = lex_.take();
      if (sep.punct() == ';') break;
      if (sep.punct() != ',') return fail(sep, "',' or ';' after an operand of " + std::string(in.opcodeText()));
    }
    in.operands.reserve(operand_scratch_.size());
    std::move(operand_scratch_.begin(), operand_scratch_.end(), std::back_inserter(in.operands));
    return {};
  }

  // Parses `+N`, `-N`, `+-N` into `offset` if present.
  Status parseOffset(int64_t& offset) {
    for (;;) {
      const char c = lex_.peek().punct();
      if (c != '+' && c != '-') return {};
      lex_.take();
      bool neg = c == '-';
      if (lex_.peek().punct() == '-') {
        lex_.take();
        neg = !neg;
      }
      Token n = lex_.take();
      auto v = parseIntegerLiteral(n.text);
      if (n.kind != Tok::kNumber || !v) return fail(n, "an integer offset");
      const int64_t delta = neg ? static_cast<int64_t>(0 - static_cast<uint64_t>(*v)) : *v;
      if (__builtin_add_overflow(offset, delta, &offset)) return fail(n, "an offset within 64 bits");
    }
  }

  Status parseOperandList(Operand& o, char close, int depth) {
    if (acceptPunct(close)) return {};
    for (;;) {
      Operand& e = o.elements.emplace_back();
      KFUSE_RETURN_IF_ERROR(parseOperand(e, depth + 1, /*allow_offset=*/true));
      Token sep = lex_.take();
      if (sep.punct() == close) return {};
      if (sep.punct() != ',') return fail(sep, std::string("',' or '") + close + "'");
    }
  }

  Status parseOperand(Operand& o, int depth, bool allow_offset) {
    Token t = lex_.take();
    if (depth > kMaxOperandDepth) return failMsg(t, "operands nested too deeply");
    switch (t.kind) {
      case Tok::kNumber:
        o.kind = OperandKind::kImmediate;
        o.name = std::string(t.text);
        return {};
      case Tok::kIdent:
        if (t.text == "_") {
          o.kind = OperandKind::kSink;
          o.name = "_";
          return {};
        }
        o.name = std::string(t.text);
        if (t.text[0] == '%') {
          o.kind = OperandKind::kRegister;
          if (lex_.peek().punct() == '|') {
            lex_.take();
            Token q = lex_.take();
            if (q.kind != Tok::kIdent) return fail(q, "a predicate register after '|'");
            o.pair = std::string(q.text);
          }
          return {};
        }
        o.kind = OperandKind::kSymbol;
        if (allow_offset) return parseOffset(o.offset);
        return {};
      case Tok::kString:
        o.kind = OperandKind::kImmediate;
        o.name = std::string(t.text);
        return {};
      case Tok::kPunct:
        switch (t.text[0]) {
          case '{': o.kind = OperandKind::kVector; return parseOperandList(o, '}', depth);
          case '(': o.kind = OperandKind::kList; return parseOperandList(o, ')', depth);
          case '[': {
            o.kind = OperandKind::kAddress;
            Operand& base = o.elements.emplace_back();
            KFUSE_RETURN_IF_ERROR(parseOperand(base, depth + 1, /*allow_offset=*/false));
            KFUSE_RETURN_IF_ERROR(parseOffset(o.offset));
            while (acceptPunct(',')) {
              Operand& e = o.elements.emplace_back();
              KFUSE_RETURN_IF_ERROR(parseOperand(e, depth + 1, /*allow_offset=*/true));
            }
            return expectPunct(']', "']' closing the address");
          }
          case '!': {
            KFUSE_RETURN_IF_ERROR(parseOperand(o, depth + 1, allow_offset));
            o.negated = !o.negated;
            return {};
          }
          case '-': {
            Token n = lex_.take();
            if (n.kind != Tok::kNumber) return fail(n, "a number after '-'");
            o.kind = OperandKind::kImmediate;
            o.name = "-" + std::string(n.text);
            return {};
          }
          default: break;
        }
        [[fallthrough]];
      default: return fail(t, "an operand");
    }
  }

  Lexer lex_;
  std::vector<Operand> operand_scratch_;  // parseInstruction's
  std::string_view file_;
  bool semicolon_consumed_ = false;
};

}  // namespace

Expected<Module> parseModule(std::string_view text, std::string_view filename) {
  // Module images are NUL-terminated C strings (cuModuleLoadData) or NUL-padded (fatbin entries): the text ends
  // at the padding.
  while (!text.empty() && text.back() == '\0') text.remove_suffix(1);
  Parser p(text, filename);
  return p.run();
}

Expected<Module> parseFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ioError(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return ioError(path + ": read failed");
  const std::string text = ss.str();
  return parseModule(text, path);
}

}  // namespace kfuse::ptx
