// The trace schemas, generated from the field list in trace_fields.h: the SQLite schema a new trace file is
// created with (committed as schemas/trace.sql) and the JSON schema of the interchange form (committed as
// schemas/trace.schema.json). The tool kfuse_schema_gen writes both; a test fails when the committed files
// differ from what it generates.
#pragma once

#include <string>

namespace kfuse::core::detail {

// The `analysis` table (schema version 2), also created in version-1 traces when a report is first stored.
inline constexpr const char kAnalysisTableSql[] =
    "CREATE TABLE IF NOT EXISTS analysis (\n"
    "  id            INTEGER PRIMARY KEY,\n"
    "  created_ns    INTEGER NOT NULL,   -- wall clock, Unix epoch ns\n"
    "  kfuse_version TEXT NOT NULL,\n"
    "  gpu           TEXT NOT NULL,      -- spec table short name the costs were computed for\n"
    "  report        TEXT NOT NULL       -- JSON\n"
    ");\n";

// The `review` table (schema version 3): accept/reject decisions on candidates with a note, appended (a log; the
// latest row per candidate_key counts). Also created in older traces when a decision or a report is first stored.
inline constexpr const char kReviewTableSql[] =
    "CREATE TABLE IF NOT EXISTS review (\n"
    "  id            INTEGER PRIMARY KEY,\n"
    "  candidate_key TEXT NOT NULL,      -- kind:mangled,names (core::reviewCandidateKey)\n"
    "  rank          INTEGER NOT NULL,   -- the candidate's rank when decided (not its identity)\n"
    "  verdict       TEXT NOT NULL,      -- accepted | rejected\n"
    "  note          TEXT NOT NULL DEFAULT '',\n"
    "  reviewer      TEXT NOT NULL DEFAULT '',\n"
    "  decided_ns    INTEGER NOT NULL    -- wall clock, Unix epoch ns\n"
    ");\n";

// The graph tables and the graph_launch_kernel view (schema version 4) as CREATE ... IF NOT EXISTS statements: the
// migration of an older trace when a report or a review decision is stored in it.
std::string graphTablesSql();

// The whole SQLite schema: every table, view and comment of schemas/trace.sql (not PRAGMA user_version,
// which the writer sets from kTraceSchemaVersion).
std::string traceSql();

// schemas/trace.schema.json, pretty-printed with a final newline.
std::string traceJsonSchema();

}  // namespace kfuse::core::detail
