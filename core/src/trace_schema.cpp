#include "trace_schema.h"

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>

#include "kfuse/core/trace_json.h"
#include "kfuse/core/trace_store.h"
#include "trace_fields.h"

namespace kfuse::core::detail {
namespace {

// ---- SQL ----

// The parts of trace.sql that are not record tables: written here by hand, around the generated tables.
constexpr const char kSqlHeader[] =
    R"sql(-- kfuse trace schema. PRAGMA user_version carries the schema version (see kTraceSchemaVersion in
-- core/include/kfuse/core/trace_store.h); kfuse_meta('format') = 'kfuse-trace' marks the file as a kfuse trace.
--
-- Generated from the field list in core/src/trace_fields.h by kfuse_schema_gen (`kfuse_schema_gen --write
-- <source dir>`); edit that list, not this file. The trace writer creates new files with exactly this text.
--
-- Conventions: times are nanoseconds (NULL = not known); ids are per table, 0/NULL = none; 64-bit addresses and
-- handles are stored as SQLite INTEGER (two's complement, so values >= 2^63 read back negative in plain sqlite3);
-- enumerations are stored as their lower-case names (see core/src/trace.cpp).

CREATE TABLE kfuse_meta (
  key   TEXT PRIMARY KEY,   -- format, schema_version, and each field of the JSON metadata object
  value TEXT NOT NULL       -- ('extra.<name>' for each free-form pair)
) WITHOUT ROWID;

-- Module images, stored once per distinct content.
CREATE TABLE module_image (
  hash  TEXT PRIMARY KEY,   -- hex SHA-256 of bytes
  kind  TEXT NOT NULL,      -- ptx | cubin | fatbin | unknown
  size  INTEGER NOT NULL,
  bytes BLOB NOT NULL
) WITHOUT ROWID;
)sql";

constexpr const char kSqlFooter[] = R"sql(
-- launch.pointer_args with one row per pointer, for SQL users.
CREATE VIEW launch_pointer_arg AS
  SELECT l.id AS launch_id,
         json_extract(a.value, '$[0]') AS param_index,
         json_extract(a.value, '$[1]') AS address,
         json_extract(a.value, '$[2]') AS allocation_id,
         json_extract(a.value, '$[3]') AS offset,
         json_extract(a.value, '$[4]') AS field_offset  -- null: the argument itself is the pointer
  FROM launch AS l, json_each(l.pointer_args) AS a
  WHERE l.pointer_args IS NOT NULL;

-- The kernels each graph launch ran: the kernel nodes of its exec's graph and, recursively, of the graphs of its
-- child-graph nodes (schema version 4).
)sql";

constexpr const char kGraphLaunchKernelView[] = R"sql(CREATE VIEW IF NOT EXISTS graph_launch_kernel AS
  WITH RECURSIVE reach(graph_launch_id, graph_id) AS (
    SELECT gl.id, ge.graph_id FROM graph_launch AS gl JOIN graph_exec AS ge ON ge.id = gl.graph_exec_id
    UNION ALL
    SELECT r.graph_launch_id, n.child_graph_id FROM reach AS r JOIN graph_node AS n ON n.graph_id = r.graph_id
    WHERE n.type = 'child_graph' AND n.child_graph_id IS NOT NULL)
  SELECT r.graph_launch_id, n.id AS graph_node_id, n.graph_id, n.function_id
  FROM reach AS r JOIN graph_node AS n ON n.graph_id = r.graph_id
  WHERE n.type = 'kernel';
)sql";

constexpr const char kSqlAfterViews[] = R"sql(
-- Analysis results (schema version 2): each `kfuse analyze` run on this trace stores its report here, as the
-- JSON of schemas/report.schema.json, so the GUI can show it without re-running the analysis.
)sql";

constexpr size_t kLineWidth = 116;

// `text` as "-- " comment lines of at most kLineWidth characters, each indented by `indent`.
std::string commentLines(std::string_view text, std::string_view indent) {
  std::string out, line;
  auto flush = [&] {
    out += std::string(indent) + "--" + line + "\n";
    line.clear();
  };
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(' ', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view word = text.substr(pos, end - pos);
    if (!line.empty() && indent.size() + 2 + line.size() + 1 + word.size() > kLineWidth) flush();
    line += " ";
    line += word;
    pos = end + 1;
  }
  if (!line.empty()) flush();
  return out;
}

template <typename R>
std::string createTable() {
  const std::vector<Column> cols = tableColumns<R>();
  size_t width = 0, keys = 0;
  for (const Column& c : cols) {
    width = std::max(width, c.name.size());
    keys += c.key;
  }
  const bool rowid_key = keys == 1 && cols[0].key && std::string_view(cols[0].type) == "INTEGER";
  std::string out;
  if constexpr (kRecord<R>.doc != nullptr) out += commentLines(kRecord<R>.doc, "");
  out += std::string("CREATE TABLE ") + kRecord<R>.table + " (\n";
  std::vector<std::string> lines;
  for (const Column& c : cols) {
    std::string line = c.name + std::string(width - c.name.size(), ' ') + " " + c.type;
    if (c.key && keys == 1) {
      line += " PRIMARY KEY";
    } else if (c.not_null) {
      line += " NOT NULL";
      if (c.has_default) line += " DEFAULT " + c.value_sql;
    }
    if (c.references) line += std::string(" REFERENCES ") + c.references + "(id)";
    lines.push_back(std::move(line));
  }
  if (keys > 1) {
    std::string key;
    for (const Column& c : cols) {
      if (c.key) key += (key.empty() ? "" : ", ") + c.name;
    }
    lines.push_back("PRIMARY KEY (" + key + ")");
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& doc = i < cols.size() ? cols[i].doc : std::string();
    const std::string sep = i + 1 < lines.size() ? "," : "";
    const std::string tail = "  -- " + doc;
    if (!doc.empty() && 2 + lines[i].size() + sep.size() + tail.size() > kLineWidth) {
      out += commentLines(doc, "  ");
      out += "  " + lines[i] + sep + "\n";
    } else {
      out += "  " + lines[i] + sep + (doc.empty() ? "" : tail) + "\n";
    }
  }
  out += rowid_key ? ");\n" : ") WITHOUT ROWID;\n";
  return out;
}

template <typename R>
void appendTables(std::string& out) {
  out += "\n" + createTable<R>();
  const R defaults{};
  forEachField(defaults, [&](const Field&, const auto& member) {
    using M = std::remove_cvref_t<decltype(member)>;
    if constexpr (kIsChildTable<M>) appendTables<typename M::value_type>(out);
  });
}

// ---- JSON schema ----

using OJson = nlohmann::ordered_json;

template <typename T>
OJson integerRange() {
  return OJson{
      {"type", "integer"}, {"minimum", std::numeric_limits<T>::min()}, {"maximum", std::numeric_limits<T>::max()}};
}

template <typename R>
void addDef(OJson& defs);

template <typename M>
OJson propertySchema(const Field& f, OJson& defs) {
  OJson p;
  const char* description = f.doc;
  if constexpr (std::is_same_v<M, ConstTimeRef>) {
    p = {{"type", {"integer", "null"}}};
    if (!description) description = "nanoseconds; null = not known";
  } else if constexpr (std::is_same_v<M, Dim3>) {
    p = {{"$ref", "#/$defs/dim3"}};
  } else if constexpr (std::is_same_v<M, std::string>) {
    p = {{"type", "string"}};
    if (f.pattern) p["pattern"] = f.pattern;
  } else if constexpr (std::is_same_v<M, std::vector<uint8_t>>) {
    p = {{"type", "string"}, {"contentEncoding", "base64"}, {"pattern", "^[A-Za-z0-9+/]*={0,2}$"}};
  } else if constexpr (std::is_same_v<M, std::map<std::string, std::string>>) {
    p = {{"type", "object"}, {"additionalProperties", {{"type", "string"}}}};
  } else if constexpr (IsVector<M>::value) {
    addDef<typename M::value_type>(defs);
    p = {{"type", "array"}, {"items", {{"$ref", std::string("#/$defs/") + kRecord<typename M::value_type>.json_def}}}};
  } else if constexpr (std::is_enum_v<M>) {
    p = OJson::object();
    p["enum"] = OJson::array();
    for (std::string_view n : enumNames<M>()) p["enum"].push_back(n);
  } else if constexpr (std::is_same_v<M, bool>) {
    p = {{"type", "boolean"}};
  } else if constexpr (std::is_same_v<M, double>) {
    p = {{"type", "number"}};
  } else {
    static_assert(std::is_integral_v<M>, "no JSON schema for this member");
    const bool is_id = f.references || (f.has(kKey) && std::string_view(f.name) == "id");
    if (is_id) {
      p = {{"type", "integer"}, {"minimum", f.has(kRequired) ? 1 : 0}, {"maximum", std::numeric_limits<Id>::max()}};
      if (!f.has(kRequired) && !description) description = "id of a record; 0 = none";
    } else {
      p = integerRange<M>();
    }
  }
  if (description) p["description"] = description;
  return p;
}

template <typename R>
void addDef(OJson& defs) {
  const char* name = kRecord<R>.json_def;
  if (defs.contains(name)) return;
  defs[name] = OJson::object();  // claims its place in document order before its children's
  OJson def = {{"type", "object"}, {"additionalProperties", false}};
  OJson required = OJson::array();
  OJson properties = OJson::object();
  const R defaults{};
  forEachField(defaults, [&](const Field& f, const auto& member) {
    properties[f.name] = propertySchema<std::remove_cvref_t<decltype(member)>>(f, defs);
    if (f.has(kRequired)) required.push_back(f.name);
  });
  if (!required.empty()) def["required"] = required;
  def["properties"] = properties;
  if constexpr (kRecord<R>.doc != nullptr) def["description"] = kRecord<R>.doc;
  defs[name] = def;
}

}  // namespace

std::string traceSql() {
  std::string out = kSqlHeader;
  Trace none;
  forEachTable(none, [&](const char*, const auto& records) {
    appendTables<typename std::remove_cvref_t<decltype(records)>::value_type>(out);
  });
  out += kSqlFooter;
  out += kGraphLaunchKernelView;
  out += kSqlAfterViews;
  out += kAnalysisTableSql;
  out +=
      "\n-- Review decisions (schema version 3): a performance engineer's accept/reject of a candidate, with a note\n"
      "-- (kfuse-gui writes them; the latest row per candidate_key counts).\n";
  out += kReviewTableSql;
  return out;
}

std::string graphTablesSql() {
  std::string out;
  Trace none;
  forEachTable(none, [&](const char*, const auto& records) {
    using R = typename std::remove_cvref_t<decltype(records)>::value_type;
    if constexpr (kRecord<R>.since_version == 4) {
      std::string table = createTable<R>();
      const std::string_view create = "CREATE TABLE ";
      table.replace(table.find(create), create.size(), "CREATE TABLE IF NOT EXISTS ");
      out += table;
    }
  });
  return out + kGraphLaunchKernelView;
}

std::string traceJsonSchema() {
  OJson defs = OJson::object();
  OJson properties = {{"format", {{"const", kTraceJsonFormatName}}}, {"version", {{"const", kTraceJsonVersion}}}};
  addDef<TraceMetadata>(defs);
  properties["metadata"] = {{"$ref", "#/$defs/metadata"}};
  Trace none;
  forEachTable(none, [&](const char* name, const auto& records) {
    using R = typename std::remove_cvref_t<decltype(records)>::value_type;
    addDef<R>(defs);
    properties[name] = {{"type", "array"}, {"items", {{"$ref", std::string("#/$defs/") + kRecord<R>.json_def}}}};
  });
  defs["dim3"] = {{"type", "array"}, {"items", integerRange<uint32_t>()}, {"minItems", 3}, {"maxItems", 3}};
  OJson schema = {
      {"$schema", "https://json-schema.org/draft/2020-12/schema"},
      {"$id", "https://kfuse.dev/schemas/trace.schema.json"},
      {"title", "kfuse trace (JSON interchange form)"},
      {"description",
       "Whole-trace export/import for interchange: `kfuse export` writes it, `kfuse import` reads it. Generated "
       "with schemas/trace.sql from core/src/trace_fields.h (kfuse_schema_gen); see "
       "core/include/kfuse/core/trace.h for field meanings. Absent fields take their defaults (0, empty, null "
       "time)."},
      {"type", "object"},
      {"additionalProperties", false},
      {"required", {"format", "version"}},
      {"properties", properties},
      {"$defs", defs},
  };
  return schema.dump(2) + "\n";
}

}  // namespace kfuse::core::detail

namespace kfuse::core {

std::string traceSqlSchema() {
  return detail::traceSql();
}
std::string traceJsonSchema() {
  return detail::traceJsonSchema();
}

}  // namespace kfuse::core
