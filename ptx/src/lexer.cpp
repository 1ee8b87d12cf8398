#include "lexer.h"

namespace kfuse::ptx::detail {
namespace {

// Characters that may continue an identifier. '.' joins opcode modifiers and register suffixes (%tid.x); '$'
// and '%' appear in nvcc's generated names. "::" (in .shared::cta) is handled separately.
constexpr bool isIdentChar(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$' ||
         c == '.' || c == '%';
}
constexpr bool isIdentStart(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c == '.' || c == '%';
}
constexpr bool isDigit(unsigned char c) {
  return c >= '0' && c <= '9';
}

}  // namespace

void Lexer::skipSpace() {
  const size_t n = text_.size();
  while (pos_ < n) {
    const char c = text_[pos_];
    if (c == '\n') {
      ++pos_;
      ++line_;
      line_start_ = pos_;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++pos_;
    } else if (c == '/' && pos_ + 1 < n && text_[pos_ + 1] == '/') {
      while (pos_ < n && text_[pos_] != '\n') ++pos_;
    } else if (c == '/' && pos_ + 1 < n && text_[pos_ + 1] == '*') {
      pos_ += 2;
      while (pos_ < n && !(text_[pos_] == '*' && pos_ + 1 < n && text_[pos_ + 1] == '/')) {
        if (text_[pos_] == '\n') {
          ++line_;
          line_start_ = pos_ + 1;
        }
        ++pos_;
      }
      pos_ = pos_ < n ? pos_ + 2 : n;
    } else {
      return;
    }
  }
}

Token Lexer::next() {
  peek_pos_ = pos_;
  peek_line_ = line_;
  peek_line_start_ = line_start_;
  skipSpace();
  Token t;
  t.line = line_;
  t.column = static_cast<uint32_t>(pos_ - line_start_ + 1);
  t.offset = pos_;
  const size_t n = text_.size();
  if (pos_ >= n) {
    t.kind = Tok::kEnd;
    return t;
  }
  const size_t start = pos_;
  const unsigned char c = static_cast<unsigned char>(text_[pos_]);
  if (isIdentStart(c)) {
    ++pos_;
    while (pos_ < n) {
      const unsigned char d = static_cast<unsigned char>(text_[pos_]);
      if (isIdentChar(d)) {
        ++pos_;
      } else if (d == ':' && pos_ + 1 < n && text_[pos_ + 1] == ':') {
        pos_ += 2;
      } else {
        break;
      }
    }
    t.kind = Tok::kIdent;
  } else if (isDigit(c)) {
    ++pos_;
    while (pos_ < n) {
      const unsigned char d = static_cast<unsigned char>(text_[pos_]);
      if (isIdentChar(d) && d != '%' && d != '$') {
        ++pos_;
      } else {
        break;
      }
    }
    t.kind = Tok::kNumber;
  } else if (c == '"') {
    ++pos_;
    while (pos_ < n && text_[pos_] != '"' && text_[pos_] != '\n') {
      if (text_[pos_] == '\\' && pos_ + 1 < n) ++pos_;
      ++pos_;
    }
    if (pos_ < n && text_[pos_] == '"') {
      ++pos_;
      t.kind = Tok::kString;
    } else {
      t.kind = Tok::kError;
    }
  } else {
    switch (c) {
      case ',':
      case ';':
      case ':':
      case '{':
      case '}':
      case '[':
      case ']':
      case '(':
      case ')':
      case '<':
      case '>':
      case '+':
      case '-':
      case '!':
      case '@':
      case '|':
      case '=':
        ++pos_;
        t.kind = Tok::kPunct;
        break;
      default:
        ++pos_;
        t.kind = Tok::kError;
        break;
    }
  }
  t.text = text_.substr(start, pos_ - start);
  return t;
}

size_t Lexer::rewindToPeek() {
  if (has_peek_) {
    has_peek_ = false;
    pos_ = peek_pos_;
    line_ = peek_line_;
    line_start_ = peek_line_start_;
  }
  return pos_;
}

void Lexer::seek(size_t pos) {
  if (pos > text_.size()) pos = text_.size();
  has_peek_ = false;
  while (pos_ < pos) {
    if (text_[pos_] == '\n') {
      ++line_;
      line_start_ = pos_ + 1;
    }
    ++pos_;
  }
}

}  // namespace kfuse::ptx::detail
