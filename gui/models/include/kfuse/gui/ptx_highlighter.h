// Syntax highlighting for PTX in any QTextDocument: directives (.entry, .param, .reg), instructions with their
// modifiers, registers (%r1, %rd2, %tid.x), predicates (@%p1), numbers, labels and comments. Qt Gui only.
#pragma once

#include <QRegularExpression>
#include <QSyntaxHighlighter>
#include <QTextCharFormat>

#include <vector>

namespace kfuse::gui {

class PtxHighlighter : public QSyntaxHighlighter {
  Q_OBJECT
 public:
  explicit PtxHighlighter(QTextDocument* document);

  enum class Token { kDirective, kInstruction, kRegister, kPredicate, kNumber, kLabel, kComment };
  // The token kinds found in one line, in order (tests check the rules through this).
  static std::vector<std::pair<Token, QString>> tokens(const QString& line);

 protected:
  void highlightBlock(const QString& text) override;

 private:
  QTextCharFormat format(Token t) const;
};

}  // namespace kfuse::gui
