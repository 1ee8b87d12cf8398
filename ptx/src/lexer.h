// Private: the PTX tokenizer. Works on a string_view it does not own; tokens point into it.
#pragma once

#include <cstdint>
#include <string_view>

namespace kfuse::ptx::detail {

enum class Tok : uint8_t {
  kEnd,
  kIdent,   // identifiers, directives (.reg), registers (%r1, %tid.x), opcodes (ld.global.f32)
  kNumber,  // 12, 0x1f, 0f3F800000, 1.5
  kString,  // "..." including quotes
  kPunct,   // one character: , ; : { } [ ] ( ) < > + - ! @ | =
  kError,   // a character that cannot start a token
};

struct Token {
  Tok kind = Tok::kEnd;
  std::string_view text;
  uint32_t line = 0;
  uint32_t column = 0;
  size_t offset = 0;  // byte offset of the token in the text
  char punct() const { return kind == Tok::kPunct ? text[0] : '\0'; }
};

class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}

  // The next token, consuming it.
  Token next();
  // The next token without consuming it.
  const Token& peek() {
    if (!has_peek_) {
      peeked_ = next();
      has_peek_ = true;
    }
    return peeked_;
  }
  Token take() {
    if (has_peek_) {
      has_peek_ = false;
      return peeked_;
    }
    return next();
  }
  // Raw access for verbatim capture: the position just after the last taken token (the peeked token, if any,
  // is discarded and the lexer rewinds to its start).
  size_t rewindToPeek();
  size_t position() const { return pos_; }
  // Continues lexing at `pos` (which must be on a line already counted or on the same line).
  void seek(size_t pos);
  std::string_view text() const { return text_; }
  uint32_t line() const { return line_; }
  uint32_t columnAt(size_t pos) const { return static_cast<uint32_t>(pos - line_start_ + 1); }

 private:
  void skipSpace();

  std::string_view text_;
  size_t pos_ = 0;
  uint32_t line_ = 1;
  size_t line_start_ = 0;
  Token peeked_;
  bool has_peek_ = false;
  // line bookkeeping as of the peeked token's start, for rewinding
  size_t peek_pos_ = 0;
  uint32_t peek_line_ = 1;
  size_t peek_line_start_ = 0;
};

}  // namespace kfuse::ptx::detail
