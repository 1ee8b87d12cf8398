// The JSON interchange form of a Trace (schemas/trace.schema.json): `kfuse export` writes it, `kfuse import`
// reads it. Byte buffers (argument bytes, module images) are base64. Unknown times are null.
//
// Reading validates shape and types as it goes and reports the first problem with its JSON path
// ("trace.json: launches[3].grid: expected an array of 3 unsigned integers"). Thread-compatible.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "kfuse/core/status.h"
#include "kfuse/core/trace.h"

namespace kfuse::core {

inline constexpr const char* kTraceJsonFormatName = "kfuse-trace-json";
inline constexpr int kTraceJsonVersion = 1;

nlohmann::json traceToJson(const Trace& trace);
// `source` names the input in error messages (a file name).
Expected<Trace> traceFromJson(const nlohmann::json& json, const std::string& source);

Status writeTraceJsonFile(const Trace& trace, const std::string& path);
Expected<Trace> readTraceJsonFile(const std::string& path);

// schemas/trace.schema.json, generated from the field list of core/src/trace_fields.h (kfuse_schema_gen writes it).
std::string traceJsonSchema();

// Base64 (RFC 4648, with padding) for byte buffers inside JSON documents.
std::string base64Encode(const std::vector<uint8_t>& bytes);
Expected<std::vector<uint8_t>> base64Decode(const std::string& text);

}  // namespace kfuse::core
