-- kfuse trace schema. PRAGMA user_version carries the schema version (see kTraceSchemaVersion in
-- core/include/kfuse/core/trace_store.h); kfuse_meta('format') = 'kfuse-trace' marks the file as a kfuse trace.
--
-- Conventions: times are nanoseconds (NULL = not known); ids are per table, 0/NULL = none; 64-bit addresses and
-- handles are stored as SQLite INTEGER (two's complement, so values >= 2^63 read back negative in plain sqlite3);
-- enumerations are stored as their lower-case names (see core/src/trace.cpp).

CREATE TABLE kfuse_meta (
  key   TEXT PRIMARY KEY,   -- format, schema_version, producer, producer_version, command_line, host,
  value TEXT NOT NULL       -- start_time_ns, and 'extra.<name>' for free-form metadata
) WITHOUT ROWID;

CREATE TABLE process (
  id   INTEGER PRIMARY KEY,
  pid  INTEGER NOT NULL,
  name TEXT NOT NULL DEFAULT ''
);

CREATE TABLE device (
  id           INTEGER PRIMARY KEY,
  ordinal      INTEGER NOT NULL,
  name         TEXT NOT NULL,
  cc_major     INTEGER NOT NULL DEFAULT 0,
  cc_minor     INTEGER NOT NULL DEFAULT 0,
  sm_count     INTEGER NOT NULL DEFAULT 0,
  memory_bytes INTEGER NOT NULL DEFAULT 0,
  clock_khz    INTEGER NOT NULL DEFAULT 0,
  uuid         TEXT NOT NULL DEFAULT ''
);

CREATE TABLE context (
  id         INTEGER PRIMARY KEY,
  device_id  INTEGER REFERENCES device(id),
  process_id INTEGER REFERENCES process(id),
  handle     INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE stream (
  id         INTEGER PRIMARY KEY,
  context_id INTEGER REFERENCES context(id),
  handle     INTEGER NOT NULL DEFAULT 0,
  native_id  INTEGER NOT NULL DEFAULT -1,
  priority   INTEGER NOT NULL DEFAULT 0,
  is_default INTEGER NOT NULL DEFAULT 0
);

-- Module images, stored once per distinct content.
CREATE TABLE module_image (
  hash  TEXT PRIMARY KEY,   -- hex SHA-256 of bytes
  kind  TEXT NOT NULL,      -- ptx | cubin | fatbin | unknown
  size  INTEGER NOT NULL,
  bytes BLOB NOT NULL
) WITHOUT ROWID;

CREATE TABLE module (
  id         INTEGER PRIMARY KEY,
  context_id INTEGER REFERENCES context(id),
  kind       TEXT NOT NULL,
  image_hash TEXT NOT NULL DEFAULT '',  -- module_image.hash, or a hash whose image was not captured
  load_ns    INTEGER
);

CREATE TABLE function (
  id             INTEGER PRIMARY KEY,
  module_id      INTEGER REFERENCES module(id),
  mangled_name   TEXT NOT NULL,
  demangled_name TEXT NOT NULL DEFAULT ''
);

CREATE TABLE function_param (
  function_id INTEGER NOT NULL REFERENCES function(id),
  idx         INTEGER NOT NULL,
  offset      INTEGER NOT NULL,
  size        INTEGER NOT NULL,
  type        TEXT NOT NULL DEFAULT '',
  access      TEXT NOT NULL DEFAULT 'unknown',  -- unknown | none | read | write | read_write
  PRIMARY KEY (function_id, idx)
) WITHOUT ROWID;

-- One row per kernel launch; id is the sequence number in API call order.
CREATE TABLE launch (
  id             INTEGER PRIMARY KEY,
  correlation_id INTEGER NOT NULL DEFAULT 0,
  thread_id      INTEGER NOT NULL DEFAULT 0,
  stream_id      INTEGER REFERENCES stream(id),
  function_id    INTEGER REFERENCES function(id),
  grid_x INTEGER NOT NULL, grid_y INTEGER NOT NULL, grid_z INTEGER NOT NULL,
  block_x INTEGER NOT NULL, block_y INTEGER NOT NULL, block_z INTEGER NOT NULL,
  dynamic_shared_bytes INTEGER NOT NULL DEFAULT 0,
  static_shared_bytes  INTEGER NOT NULL DEFAULT 0,
  registers_per_thread INTEGER NOT NULL DEFAULT 0,
  api_start_ns INTEGER, api_end_ns INTEGER,
  gpu_start_ns INTEGER, gpu_end_ns INTEGER,
  arg_bytes BLOB,         -- raw argument buffer laid out per function_param
  -- Pointer arguments resolved to allocations, as a JSON array of [param_index, address, allocation_id, offset]
  -- (allocation_id null: the pointer matched no known allocation); NULL when there are none. Kept inline
  -- because a row per pointer would more than double the cost of recording a launch; the view
  -- launch_pointer_arg below gives them one row each for SQL users.
  pointer_args TEXT
);

CREATE VIEW launch_pointer_arg AS
  SELECT l.id AS launch_id,
         json_extract(a.value, '$[0]') AS param_index,
         json_extract(a.value, '$[1]') AS address,
         json_extract(a.value, '$[2]') AS allocation_id,
         json_extract(a.value, '$[3]') AS offset
  FROM launch AS l, json_each(l.pointer_args) AS a
  WHERE l.pointer_args IS NOT NULL;

CREATE TABLE allocation (
  id         INTEGER PRIMARY KEY,
  context_id INTEGER REFERENCES context(id),
  address    INTEGER NOT NULL,
  size       INTEGER NOT NULL,
  kind       TEXT NOT NULL,   -- unknown | device | host_pinned | managed | pool | array
  alloc_ns   INTEGER,         -- NULL: existed before recording started
  free_ns    INTEGER          -- NULL: still live when recording ended
);

CREATE TABLE memcpy (
  id             INTEGER PRIMARY KEY,
  correlation_id INTEGER NOT NULL DEFAULT 0,
  thread_id      INTEGER NOT NULL DEFAULT 0,
  stream_id      INTEGER REFERENCES stream(id),
  kind           TEXT NOT NULL,   -- unknown | htod | dtoh | dtod | htoh | peer
  src_address    INTEGER NOT NULL DEFAULT 0,
  dst_address    INTEGER NOT NULL DEFAULT 0,
  src_allocation_id INTEGER REFERENCES allocation(id),
  dst_allocation_id INTEGER REFERENCES allocation(id),
  bytes          INTEGER NOT NULL,
  async          INTEGER NOT NULL DEFAULT 0,
  api_start_ns INTEGER, api_end_ns INTEGER,
  gpu_start_ns INTEGER, gpu_end_ns INTEGER
);

CREATE TABLE memset (
  id             INTEGER PRIMARY KEY,
  correlation_id INTEGER NOT NULL DEFAULT 0,
  thread_id      INTEGER NOT NULL DEFAULT 0,
  stream_id      INTEGER REFERENCES stream(id),
  dst_address    INTEGER NOT NULL DEFAULT 0,
  dst_allocation_id INTEGER REFERENCES allocation(id),
  bytes          INTEGER NOT NULL,
  value          INTEGER NOT NULL DEFAULT 0,
  element_size   INTEGER NOT NULL DEFAULT 1,
  async          INTEGER NOT NULL DEFAULT 0,
  api_start_ns INTEGER, api_end_ns INTEGER,
  gpu_start_ns INTEGER, gpu_end_ns INTEGER
);

CREATE TABLE sync (
  id             INTEGER PRIMARY KEY,
  correlation_id INTEGER NOT NULL DEFAULT 0,
  thread_id      INTEGER NOT NULL DEFAULT 0,
  kind           TEXT NOT NULL,   -- unknown | context | stream | event | stream_wait_event
  stream_id      INTEGER REFERENCES stream(id),
  event_id       INTEGER REFERENCES event(id),
  start_ns INTEGER, end_ns INTEGER
);

CREATE TABLE event (
  id             INTEGER PRIMARY KEY,
  correlation_id INTEGER NOT NULL DEFAULT 0,
  handle         INTEGER NOT NULL DEFAULT 0,
  stream_id      INTEGER REFERENCES stream(id),
  record_ns      INTEGER
);

CREATE TABLE nvtx_range (
  id        INTEGER PRIMARY KEY,
  name      TEXT NOT NULL,
  domain    TEXT NOT NULL DEFAULT '',
  thread_id INTEGER NOT NULL DEFAULT 0,
  start_ns INTEGER, end_ns INTEGER
);

CREATE TABLE metric (
  launch_id INTEGER NOT NULL REFERENCES launch(id),
  name      TEXT NOT NULL,
  value     REAL NOT NULL,
  unit      TEXT NOT NULL DEFAULT '',
  source    TEXT NOT NULL,   -- measured | emulated | estimated
  PRIMARY KEY (launch_id, name, source)
) WITHOUT ROWID;

-- Counts of bad or missing input data met while producing the trace (tier-1 errors).
CREATE TABLE stat (
  name        TEXT PRIMARY KEY,
  value       INTEGER NOT NULL,
  severity    TEXT NOT NULL,   -- info | warning | error
  description TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;

-- Analysis results (schema version 2): each `kfuse analyze` run on this trace stores its report here, as the
-- JSON of schemas/report.schema.json, so the GUI can show it without re-running the analysis.
CREATE TABLE analysis (
  id            INTEGER PRIMARY KEY,
  created_ns    INTEGER NOT NULL,   -- wall clock, Unix epoch ns
  kfuse_version TEXT NOT NULL,
  gpu           TEXT NOT NULL,      -- spec table short name the costs were computed for
  report        TEXT NOT NULL       -- JSON
);
