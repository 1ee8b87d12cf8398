#include "kfuse/gui/ptx_highlighter.h"

#include <algorithm>

namespace kfuse::gui {

namespace {

struct Rule {
  PtxHighlighter::Token token;
  QRegularExpression re;
};

const std::vector<Rule>& rules() {
  using T = PtxHighlighter::Token;
  static const std::vector<Rule> r = {
      {T::kComment, QRegularExpression(R"(//.*$)")},
      {T::kLabel, QRegularExpression(R"(^\s*[$A-Za-z_][\w$]*:)")},
      {T::kPredicate, QRegularExpression(R"(@!?%\w+)")},
      {T::kDirective, QRegularExpression(R"((?<![\w%])\.[a-z_][\w]*)")},
      {T::kRegister, QRegularExpression(R"(%[A-Za-z_][\w]*(\.[xyzw])?)")},
      {T::kNumber, QRegularExpression(R"((?<![\w%.$])(0[xXfFdD][0-9A-Fa-f]+|-?\d+(\.\d+)?)\b)")},
      {T::kInstruction, QRegularExpression(R"(^\s*(@!?%\w+\s+)?([a-z][a-z0-9_]*)((\.[a-z0-9_]+)*))")},
  };
  return r;
}

}  // namespace

PtxHighlighter::PtxHighlighter(QTextDocument* document) : QSyntaxHighlighter(document) {}

std::vector<std::pair<PtxHighlighter::Token, QString>> PtxHighlighter::tokens(const QString& line) {
  struct Hit {
    int start, length;
    Token token;
  };
  std::vector<Hit> hits;
  std::vector<bool> taken(static_cast<size_t>(line.size()), false);
  for (const Rule& rule : rules()) {
    auto it = rule.re.globalMatch(line);
    while (it.hasNext()) {
      const auto m = it.next();
      int start = static_cast<int>(m.capturedStart());
      int length = static_cast<int>(m.capturedLength());
      if (rule.token == Token::kInstruction) {  // the opcode and its modifiers only
        start = static_cast<int>(m.capturedStart(2));
        length = static_cast<int>(m.capturedEnd(3) - m.capturedStart(2));
        if (start < 0 || length <= 0) continue;
      }
      bool free = true;
      for (int i = start; i < start + length; ++i) free &= !taken[static_cast<size_t>(i)];
      if (!free) continue;
      for (int i = start; i < start + length; ++i) taken[static_cast<size_t>(i)] = true;
      hits.push_back({start, length, rule.token});
    }
  }
  std::sort(hits.begin(), hits.end(), [](const Hit& a, const Hit& b) { return a.start < b.start; });
  std::vector<std::pair<Token, QString>> out;
  for (const Hit& h : hits) out.emplace_back(h.token, line.mid(h.start, h.length));
  return out;
}

QTextCharFormat PtxHighlighter::format(Token t) const {
  QTextCharFormat f;
  switch (t) {
    case Token::kDirective: f.setForeground(QColor(0x80, 0x20, 0x90)); break;
    case Token::kInstruction:
      f.setForeground(QColor(0x10, 0x30, 0xa0));
      f.setFontWeight(QFont::Bold);
      break;
    case Token::kRegister: f.setForeground(QColor(0x10, 0x70, 0x40)); break;
    case Token::kPredicate: f.setForeground(QColor(0xb0, 0x50, 0x00)); break;
    case Token::kNumber: f.setForeground(QColor(0xa0, 0x20, 0x20)); break;
    case Token::kLabel:
      f.setForeground(QColor(0x60, 0x60, 0x00));
      f.setFontWeight(QFont::Bold);
      break;
    case Token::kComment:
      f.setForeground(QColor(0x80, 0x80, 0x80));
      f.setFontItalic(true);
      break;
  }
  return f;
}

void PtxHighlighter::highlightBlock(const QString& text) {
  int from = 0;
  for (const auto& [token, piece] : tokens(text)) {
    const int at = static_cast<int>(text.indexOf(piece, from));
    if (at < 0) continue;
    setFormat(at, static_cast<int>(piece.size()), format(token));
    from = at + static_cast<int>(piece.size());
  }
}

}  // namespace kfuse::gui
