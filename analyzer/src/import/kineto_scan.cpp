// Kineto import, phase 1a: finding the elements of "traceEvents" in the streamed text. The scanner follows only
// strings and nesting (a tight loop inside events), hands complete elements to simdjson in batches (flushBatch ->
// parseEvents, kineto_json.cpp) and copies the other top-level members aside for parseTopLevel.
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "import/kineto_parse.h"
#include "kfuse/core/cancel.h"

namespace kfuse::analyzer::detail::kineto {
namespace {

bool isSpace(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

}  // namespace

Status KinetoParse::jsonError(simdjson::error_code err, const char* where) {
  std::string at;
  const char* loc = nullptr;
  if (have_doc_ && !doc_.current_location().get(loc) && loc >= batch_.data() + 1 &&
      loc <= batch_.data() + batch_size_) {
    at = " near byte " + std::to_string(batch_offset_ + static_cast<uint64_t>(loc - batch_.data() - 1));
  }
  std::string what = simdjson::error_message(err);
  if (err == simdjson::INCOMPLETE_ARRAY_OR_OBJECT || err == simdjson::TAPE_ERROR || err == simdjson::UNCLOSED_STRING ||
      err == simdjson::EMPTY) {
    what += " (is the file truncated?)";
  }
  return badFormat(path_ + ": malformed JSON" + at + " while reading " + where + ": " + what);
}

Status KinetoParse::structureError(const std::string& what) {
  return badFormat(path_ + ": malformed JSON at byte " + std::to_string(consumed_ + pos_) + ": " + what);
}

Status KinetoParse::scanAll() {
  bool eof = false;
  while (!eof) {
    KFUSE_RETURN_IF_CANCELLED();  // every MiB of text
    const size_t old = pending_.size();
    pending_.resize(old + kChunkBytes);
    KFUSE_ASSIGN_OR_RETURN(size_t n, source_->read(pending_.data() + old, kChunkBytes));
    pending_.resize(old + n);
    eof = n == 0;
    KFUSE_RETURN_IF_ERROR(scan());
    if (in_events_ && last_sep_ != kNone && last_sep_ - elem_start_ >= kBatchBytes) {
      KFUSE_RETURN_IF_ERROR(flushBatch(last_sep_));
    }
    compact();
    if (options_.progress) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last_progress_ >= std::chrono::seconds(1)) {
        last_progress_ = now;
        options_.progress(source_->textBytes(), events_read_);
      }
    }
    if (pending_.size() > kMaxElementBytes) {
      const char* what = in_string_ ? "a string" : in_events_ ? "an element of \"traceEvents\"" : "a top-level member";
      return badFormat(path_ + ": " + what + " at byte " + std::to_string(consumed_) + " or later is longer than " +
                       std::to_string(kMaxElementBytes >> 20) +
                       " MiB; refusing to buffer it (a damaged or hostile file?)");
    }
  }
  if (top_ != Top::kDone) {
    if (consumed_ + pending_.size() == 0) return badFormat(path_ + ": empty file, not a Chrome/Kineto trace");
    return badFormat(path_ + ": truncated JSON: the text ends at byte " + std::to_string(consumed_ + pending_.size()) +
                     " inside the trace (is the file truncated?)");
  }
  if (!have_events_ && saw_nodes_ && saw_schema_) {
    // {"schema": ..., "nodes": [...]}: what torch.profiler.ExecutionTraceObserver writes beside a profiler trace.
    return badFormat(path_ +
                     ": a PyTorch Execution Trace (operators and tensors, no GPU kernels), not a profiler "
                     "trace: analyze the Kineto trace (torch.profiler) recorded in the same run");
  }
  if (!have_events_) return badFormat(path_ + ": not a Chrome/Kineto trace: no \"traceEvents\" array");
  return {};
}

// Drops text nothing refers to any more.
void KinetoParse::compact() {
  size_t keep = pos_;
  if (in_events_) keep = std::min(keep, elem_start_);
  if (capturing_) keep = std::min(keep, capture_start_);
  if (in_string_) keep = std::min(keep, string_start_);
  if (keep == 0) return;
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(keep));
  consumed_ += keep;
  pos_ -= keep;
  if (in_events_) {
    elem_start_ -= keep;
    if (last_sep_ != kNone) last_sep_ -= keep;
  }
  if (capturing_) capture_start_ -= keep;
  if (in_string_) string_start_ -= keep;
}

// The string starting at string_start_ ends at the unescaped quote at or after pos_; false when not yet read.
bool KinetoParse::skipString() {
  const char* base = pending_.data();
  const size_t end = pending_.size();
  while (pos_ < end) {
    const void* q = std::memchr(base + pos_, '"', end - pos_);
    if (!q) {
      pos_ = end;
      return false;
    }
    size_t quote = static_cast<size_t>(static_cast<const char*>(q) - base);
    size_t backslashes = 0;
    while (quote - backslashes > string_start_ && base[quote - backslashes - 1] == '\\') ++backslashes;
    pos_ = quote + 1;
    if (backslashes % 2 == 0) return true;
  }
  return false;
}

// Inside one event only strings and brackets matter: a tight loop for the bulk of the text.
void KinetoParse::skipInsideEvent() {
  static constexpr auto kStop = [] {
    std::array<bool, 256> t{};
    for (unsigned char c : {'"', '{', '}', '[', ']'}) t[c] = true;
    return t;
  }();
  const char* p = pending_.data();
  const size_t end = pending_.size();
  while (pos_ < end) {
    const char c = p[pos_];
    if (!kStop[static_cast<unsigned char>(c)]) {
      ++pos_;
      continue;
    }
    if (c == '"') {
      string_start_ = pos_ + 1;
      pos_ = string_start_;
      in_string_ = true;
      if (!skipString()) return;
      in_string_ = false;
      continue;
    }
    ++pos_;
    if (c == '{' || c == '[') {
      ++depth_;
    } else if (--depth_ == events_depth_) {
      return;  // the event is complete
    }
  }
}

Status KinetoParse::scan() {
  const size_t end = pending_.size();
  while (pos_ < end) {
    if (in_events_ && depth_ > events_depth_ && !in_string_) {
      skipInsideEvent();
      continue;
    }
    if (in_string_) {
      if (!skipString()) return {};
      in_string_ = false;
      if (top_ == Top::kObject && depth_ == 1 && expect_ == Expect::kKey) {
        key_.assign(pending_.data() + string_start_, pos_ - 1 - string_start_);
        expect_ = Expect::kColon;
      } else if (depth_ == 1 && expect_ == Expect::kValue) {
        expect_ = Expect::kCommaOrEnd;  // a string value of a top-level member
      }
      continue;
    }
    const char c = pending_[pos_];
    if (isSpace(c)) {
      ++pos_;
      continue;
    }
    if (top_ == Top::kDone) return structureError("text after the end of the JSON document");
    if (top_ == Top::kStart) {
      if (c == '\xEF' || c == '\xBB' || c == '\xBF') {  // UTF-8 byte order mark
        ++pos_;
        continue;
      }
      if (c == '{') {
        top_ = Top::kObject;
        depth_ = 1;
        expect_ = Expect::kKey;
      } else if (c == '[') {  // the bare Chrome "JSON Array Format"
        top_ = Top::kObject;
        depth_ = 1;
        startEvents(pos_ + 1, /*depth=*/1);
        bare_array_ = true;
      } else {
        return badFormat(path_ + ": not a Chrome/Kineto trace: the JSON document is not an object or array");
      }
      ++pos_;
      continue;
    }
    // Top-level member structure (depth 1 of the root object).
    if (depth_ == 1 && !bare_array_) {
      if (expect_ == Expect::kKey) {
        if (c == '"') {
          in_string_ = true;
          string_start_ = pos_ + 1;
          ++pos_;
          continue;
        }
        if (c == '}' && other_members_ == 0 && !have_events_) {  // {}
          top_ = Top::kDone;
          depth_ = 0;
          ++pos_;
          continue;
        }
        return structureError("expected a member name");
      }
      if (expect_ == Expect::kColon) {
        if (c != ':') return structureError("expected ':' after \"" + key_ + "\"");
        expect_ = Expect::kValue;
        ++pos_;
        continue;
      }
      if (expect_ == Expect::kValue) {
        if (key_ == "traceEvents") {
          if (c != '[') return badFormat(path_ + ": \"traceEvents\" is not an array");
          if (have_events_) return structureError("a second \"traceEvents\" member");
          depth_ = 2;
          startEvents(pos_ + 1, /*depth=*/2);
          ++pos_;
          continue;
        }
        saw_nodes_ = saw_nodes_ || key_ == "nodes";
        saw_schema_ = saw_schema_ || key_ == "schema";
        capturing_ = true;
        capture_start_ = pos_;
        expect_ = Expect::kCommaOrEnd;
        // Fall through: the value's first byte is scanned below.
      } else if (expect_ == Expect::kCommaOrEnd && (c == ',' || c == '}')) {
        if (capturing_) endCapture(pos_);
        if (c == ',') {
          expect_ = Expect::kKey;
        } else {
          top_ = Top::kDone;
          depth_ = 0;
        }
        ++pos_;
        continue;
      }
    }
    switch (c) {
      case '"':
        in_string_ = true;
        string_start_ = pos_ + 1;
        break;
      case '{':
      case '[': ++depth_; break;
      case '}':
      case ']':
        if (in_events_ && depth_ == events_depth_) {
          if (c != ']') return structureError("'}' closes the traceEvents array");
          KFUSE_RETURN_IF_ERROR(flushBatch(pos_));
          in_events_ = false;
          have_events_ = true;
          if (bare_array_) {
            top_ = Top::kDone;
            depth_ = 0;
            ++pos_;
            continue;
          }
          expect_ = Expect::kCommaOrEnd;
        }
        if (--depth_ < 1) return structureError("unbalanced closing bracket");
        break;
      case ',':
        if (in_events_ && depth_ == events_depth_) last_sep_ = pos_;
        break;
      default: break;
    }
    ++pos_;
  }
  return {};
}

void KinetoParse::startEvents(size_t begin, int depth) {
  in_events_ = true;
  events_depth_ = depth;
  elem_start_ = begin;
  last_sep_ = kNone;
}

void KinetoParse::endCapture(size_t end) {
  other_json_ += other_members_++ ? ",\"" : "\"";
  other_json_ += key_;
  other_json_ += "\":";
  other_json_.append(pending_.data() + capture_start_, end - capture_start_);
  capturing_ = false;
}

// Parses the elements in [elem_start_, end) as one array and moves past them.
Status KinetoParse::flushBatch(size_t end) {
  const size_t n = end - elem_start_;
  bool blank = true;
  for (size_t i = elem_start_; i < end && blank; ++i) blank = isSpace(pending_[i]);
  if (!blank) {
    batch_size_ = n + 2;
    if (batch_.size() < batch_size_ + simdjson::SIMDJSON_PADDING)
      batch_.resize(batch_size_ + simdjson::SIMDJSON_PADDING);
    batch_[0] = '[';
    std::memcpy(batch_.data() + 1, pending_.data() + elem_start_, n);
    batch_[n + 1] = ']';
    std::memset(batch_.data() + batch_size_, 0, simdjson::SIMDJSON_PADDING);
    batch_offset_ = consumed_ + elem_start_;
    have_doc_ = false;
    auto err = parser_.iterate(batch_.data(), batch_size_, batch_.size()).get(doc_);
    if (err) return jsonError(err, "traceEvents");
    have_doc_ = true;
    od::array events;
    if ((err = doc_.get_array().get(events))) return jsonError(err, "traceEvents");
    KFUSE_RETURN_IF_ERROR(parseEvents(events));
  }
  elem_start_ = end + 1;
  last_sep_ = kNone;
  return {};
}

}  // namespace kfuse::analyzer::detail::kineto
