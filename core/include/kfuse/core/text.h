// Text copied from inputs into kfuse's outputs. Every string kfuse reads (kernel and file names, command lines,
// ELF section names, nsys string tables) is untrusted bytes: JSON must be valid UTF-8, HTML must not open tags,
// and an error message must stay short. These helpers make such text safe for each destination.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace kfuse::core {

// True when `s` is well-formed UTF-8 (no overlong forms, surrogates or code points above U+10FFFF).
bool isValidUtf8(std::string_view s);

// `s` with every byte that does not start or continue a well-formed UTF-8 sequence replaced by U+FFFD; valid text
// is returned unchanged.
std::string sanitizeUtf8(std::string_view s);

// JSON text of `j` (indent as nlohmann's dump; -1 compact) with invalid UTF-8 in strings replaced by U+FFFD, so
// that serialising input-derived strings never throws.
std::string dumpJson(const nlohmann::json& j, int indent = -1);

// A short description of a JSON value for an error message: scalars as JSON text (strings cut to `max_chars`),
// arrays and objects by kind and size only, so that describing a value nested a million deep costs nothing.
std::string describeJsonValue(const nlohmann::json& j, size_t max_chars = 60);

// `s` sanitised as UTF-8 and escaped for HTML text and attribute values (quoted with ' or ").
std::string htmlEscape(std::string_view s);

}  // namespace kfuse::core
