-- kfuse trace schema. PRAGMA user_version carries the schema version (see kTraceSchemaVersion in
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
  sm_count     INTEGER NOT NULL DEFAULT 0,  -- 0 = unknown
  memory_bytes INTEGER NOT NULL DEFAULT 0,  -- 0 = unknown
  clock_khz    INTEGER NOT NULL DEFAULT 0,  -- 0 = unknown
  uuid         TEXT NOT NULL DEFAULT ''
);

CREATE TABLE context (
  id         INTEGER PRIMARY KEY,
  device_id  INTEGER REFERENCES device(id),
  process_id INTEGER REFERENCES process(id),
  handle     INTEGER NOT NULL DEFAULT 0  -- CUcontext value (0 = unknown)
);

CREATE TABLE stream (
  id         INTEGER PRIMARY KEY,
  context_id INTEGER REFERENCES context(id),
  handle     INTEGER NOT NULL DEFAULT 0,  -- CUstream value (0 = legacy default stream)
  native_id  INTEGER NOT NULL DEFAULT -1,  -- CUPTI stream id, -1 = unknown
  priority   INTEGER NOT NULL DEFAULT 0,
  is_default INTEGER NOT NULL DEFAULT 0
);

-- A loaded module; its image (base64) may be empty when only the hash is known
CREATE TABLE module (
  id         INTEGER PRIMARY KEY,
  context_id INTEGER REFERENCES context(id),
  kind       TEXT NOT NULL,  -- unknown | ptx | cubin | fatbin
  -- hex SHA-256 of the image (module_image.hash), or of bytes whose image was not captured
  image_hash TEXT NOT NULL DEFAULT '',
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
  offset      INTEGER NOT NULL,  -- bytes into the argument buffer
  size        INTEGER NOT NULL,  -- bytes
  type        TEXT NOT NULL DEFAULT '',  -- "ptr", "u32", "f32", "struct", or a C++ type from the mangled name
  access      TEXT NOT NULL DEFAULT 'unknown',  -- unknown | none | read | write | read_write
  PRIMARY KEY (function_id, idx)
) WITHOUT ROWID;

-- One kernel launch; id is the sequence number in API call order
CREATE TABLE launch (
  id                   INTEGER PRIMARY KEY,
  correlation_id       INTEGER NOT NULL DEFAULT 0,
  thread_id            INTEGER NOT NULL DEFAULT 0,
  stream_id            INTEGER REFERENCES stream(id),
  function_id          INTEGER REFERENCES function(id),
  grid_x               INTEGER NOT NULL,
  grid_y               INTEGER NOT NULL,
  grid_z               INTEGER NOT NULL,
  block_x              INTEGER NOT NULL,
  block_y              INTEGER NOT NULL,
  block_z              INTEGER NOT NULL,
  cluster_x            INTEGER NOT NULL DEFAULT 1,  -- thread block cluster dimensions (sm_90+); 1,1,1: no clusters
  cluster_y            INTEGER NOT NULL DEFAULT 1,
  cluster_z            INTEGER NOT NULL DEFAULT 1,
  dynamic_shared_bytes INTEGER NOT NULL DEFAULT 0,
  static_shared_bytes  INTEGER NOT NULL DEFAULT 0,
  registers_per_thread INTEGER NOT NULL DEFAULT 0,
  api_start_ns         INTEGER,
  api_end_ns           INTEGER,
  gpu_start_ns         INTEGER,
  gpu_end_ns           INTEGER,
  arg_bytes            BLOB,  -- raw argument buffer laid out per the function's params
  -- pointer arguments resolved to allocations; in SQLite a JSON array of [param_index, address, allocation_id,
  -- offset] or, for a pointer inside a struct argument, [param_index, address, allocation_id, offset, field_offset]
  -- (allocation_id null: no known allocation), NULL when there are none, kept inline because a row per pointer
  -- would more than double the cost of recording a launch; the view launch_pointer_arg gives them one row each
  pointer_args         TEXT
);

CREATE TABLE allocation (
  id         INTEGER PRIMARY KEY,
  context_id INTEGER REFERENCES context(id),
  address    INTEGER NOT NULL,
  size       INTEGER NOT NULL,
  kind       TEXT NOT NULL,  -- unknown | device | host_pinned | managed | pool | array
  alloc_ns   INTEGER,  -- null: existed before recording started
  free_ns    INTEGER  -- null: still live when recording ended
);

CREATE TABLE memcpy (
  id                INTEGER PRIMARY KEY,
  correlation_id    INTEGER NOT NULL DEFAULT 0,
  thread_id         INTEGER NOT NULL DEFAULT 0,
  stream_id         INTEGER REFERENCES stream(id),
  kind              TEXT NOT NULL,  -- unknown | htod | dtoh | dtod | htoh | peer
  src_address       INTEGER NOT NULL DEFAULT 0,
  dst_address       INTEGER NOT NULL DEFAULT 0,
  src_allocation_id INTEGER REFERENCES allocation(id),
  dst_allocation_id INTEGER REFERENCES allocation(id),
  bytes             INTEGER NOT NULL,
  async             INTEGER NOT NULL DEFAULT 0,
  api_start_ns      INTEGER,
  api_end_ns        INTEGER,
  gpu_start_ns      INTEGER,
  gpu_end_ns        INTEGER
);

CREATE TABLE memset (
  id                INTEGER PRIMARY KEY,
  correlation_id    INTEGER NOT NULL DEFAULT 0,
  thread_id         INTEGER NOT NULL DEFAULT 0,
  stream_id         INTEGER REFERENCES stream(id),
  dst_address       INTEGER NOT NULL DEFAULT 0,
  dst_allocation_id INTEGER REFERENCES allocation(id),
  bytes             INTEGER NOT NULL,
  value             INTEGER NOT NULL DEFAULT 0,
  element_size      INTEGER NOT NULL DEFAULT 1,
  async             INTEGER NOT NULL DEFAULT 0,
  api_start_ns      INTEGER,
  api_end_ns        INTEGER,
  gpu_start_ns      INTEGER,
  gpu_end_ns        INTEGER
);

CREATE TABLE sync (
  id             INTEGER PRIMARY KEY,
  correlation_id INTEGER NOT NULL DEFAULT 0,
  thread_id      INTEGER NOT NULL DEFAULT 0,
  kind           TEXT NOT NULL,  -- unknown | context | stream | event | stream_wait_event
  stream_id      INTEGER REFERENCES stream(id),  -- the stream waited on, or that waits (stream_wait_event)
  event_id       INTEGER REFERENCES event(id),  -- the event awaited, if any
  start_ns       INTEGER,
  end_ns         INTEGER
);

CREATE TABLE event (
  id             INTEGER PRIMARY KEY,
  correlation_id INTEGER NOT NULL DEFAULT 0,
  handle         INTEGER NOT NULL DEFAULT 0,  -- CUevent value; the same handle may be recorded many times
  stream_id      INTEGER REFERENCES stream(id),
  record_ns      INTEGER
);

CREATE TABLE nvtx_range (
  id        INTEGER PRIMARY KEY,
  name      TEXT NOT NULL,
  domain    TEXT NOT NULL DEFAULT '',
  thread_id INTEGER NOT NULL DEFAULT 0,
  start_ns  INTEGER,
  end_ns    INTEGER
);

CREATE TABLE metric (
  launch_id INTEGER NOT NULL REFERENCES launch(id),
  name      TEXT NOT NULL,  -- "dram_bytes_read", "flops_fp32", ...
  value     REAL NOT NULL,
  unit      TEXT NOT NULL DEFAULT '',  -- "bytes", "flop", "ns", "inst"
  source    TEXT NOT NULL,  -- measured | emulated | estimated
  PRIMARY KEY (launch_id, name, source)
) WITHOUT ROWID;

-- Counts of bad or missing input data met while producing the trace (tier-1 errors)
CREATE TABLE stat (
  name        TEXT PRIMARY KEY,  -- "dropped_records", "unmatched_correlation", ...
  value       INTEGER NOT NULL,
  severity    TEXT NOT NULL,  -- info | warning | error
  description TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;

-- A CUDA graph as read when it was instantiated or an executable graph was updated from it
CREATE TABLE graph (
  id              INTEGER PRIMARY KEY,
  handle          INTEGER NOT NULL DEFAULT 0,  -- CUgraph value; snapshots of the same graph share it
  origin          TEXT NOT NULL DEFAULT 'unknown',  -- unknown | capture | explicit | child | exec_node_update
  stream_id       INTEGER REFERENCES stream(id),  -- capture: the stream whose capture made the graph
  -- child: the graph holding the child-graph node; exec_node_update: the graph it copies
  parent_graph_id INTEGER REFERENCES graph(id),
  snapshot_ns     INTEGER  -- when the collector read the graph
);

-- A node of a recorded graph
CREATE TABLE graph_node (
  id                   INTEGER PRIMARY KEY,  -- unique in the trace, not only in its graph
  graph_id             INTEGER NOT NULL REFERENCES graph(id),
  idx                  INTEGER NOT NULL DEFAULT 0,  -- position in the driver's node list (cuGraphGetNodes)
  handle               INTEGER NOT NULL DEFAULT 0,  -- CUgraphNode value
  -- other | kernel | memcpy | memset | host | empty | event_record | event_wait | child_graph | mem_alloc |
  -- mem_free
  type                 TEXT NOT NULL DEFAULT 'other',
  function_id          INTEGER REFERENCES function(id),  -- kernel: the function it runs
  grid_x               INTEGER NOT NULL DEFAULT 1,  -- kernel
  grid_y               INTEGER NOT NULL DEFAULT 1,
  grid_z               INTEGER NOT NULL DEFAULT 1,
  block_x              INTEGER NOT NULL DEFAULT 1,
  block_y              INTEGER NOT NULL DEFAULT 1,
  block_z              INTEGER NOT NULL DEFAULT 1,
  dynamic_shared_bytes INTEGER NOT NULL DEFAULT 0,
  arg_bytes            BLOB,  -- kernel: raw argument buffer laid out per the function's params, as launch.arg_bytes
  -- kernel: pointer arguments resolved to allocations when the graph was read, in the form of launch.pointer_args
  pointer_args         TEXT,
  memcpy_kind          TEXT NOT NULL DEFAULT 'unknown',  -- memcpy; unknown | htod | dtoh | dtod | htoh | peer
  src_address          INTEGER NOT NULL DEFAULT 0,  -- memcpy
  dst_address          INTEGER NOT NULL DEFAULT 0,  -- memcpy, memset
  src_allocation_id    INTEGER REFERENCES allocation(id),
  dst_allocation_id    INTEGER REFERENCES allocation(id),
  bytes                INTEGER NOT NULL DEFAULT 0,  -- memcpy, memset
  value                INTEGER NOT NULL DEFAULT 0,  -- memset
  element_size         INTEGER NOT NULL DEFAULT 0,  -- memset: bytes per element
  child_graph_id       INTEGER REFERENCES graph(id),  -- child graph: the graph it runs
  event_handle         INTEGER NOT NULL DEFAULT 0  -- event record / wait: the CUevent
);

-- A dependency between two nodes of a recorded graph
CREATE TABLE graph_edge (
  graph_id     INTEGER NOT NULL REFERENCES graph(id),
  from_node_id INTEGER NOT NULL REFERENCES graph_node(id),
  to_node_id   INTEGER NOT NULL REFERENCES graph_node(id),  -- runs after from_node_id
  type         INTEGER NOT NULL DEFAULT 0,  -- CUgraphDependencyType: 0 default, 1 programmatic
  PRIMARY KEY (graph_id, from_node_id, to_node_id)
) WITHOUT ROWID;

-- An executable graph: instantiated, or updated (update_of the row it replaces)
CREATE TABLE graph_exec (
  id           INTEGER PRIMARY KEY,
  handle       INTEGER NOT NULL DEFAULT 0,  -- CUgraphExec value
  graph_id     INTEGER NOT NULL REFERENCES graph(id),  -- the graph it runs
  update_of    INTEGER REFERENCES graph_exec(id),  -- the exec row of the same handle this update replaces
  thread_id    INTEGER NOT NULL DEFAULT 0,
  api_start_ns INTEGER,  -- the instantiate or update call
  api_end_ns   INTEGER
);

-- One cuGraphLaunch (a replay); its kernels are the kernel nodes of its exec's graph (view graph_launch_kernel)
CREATE TABLE graph_launch (
  id             INTEGER PRIMARY KEY,  -- sequence number in API call order
  correlation_id INTEGER NOT NULL DEFAULT 0,
  thread_id      INTEGER NOT NULL DEFAULT 0,
  graph_exec_id  INTEGER NOT NULL REFERENCES graph_exec(id),
  stream_id      INTEGER REFERENCES stream(id),
  api_start_ns   INTEGER,
  api_end_ns     INTEGER
);

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
CREATE VIEW IF NOT EXISTS graph_launch_kernel AS
  WITH RECURSIVE reach(graph_launch_id, graph_id) AS (
    SELECT gl.id, ge.graph_id FROM graph_launch AS gl JOIN graph_exec AS ge ON ge.id = gl.graph_exec_id
    UNION ALL
    SELECT r.graph_launch_id, n.child_graph_id FROM reach AS r JOIN graph_node AS n ON n.graph_id = r.graph_id
    WHERE n.type = 'child_graph' AND n.child_graph_id IS NOT NULL)
  SELECT r.graph_launch_id, n.id AS graph_node_id, n.graph_id, n.function_id
  FROM reach AS r JOIN graph_node AS n ON n.graph_id = r.graph_id
  WHERE n.type = 'kernel';

-- Analysis results (schema version 2): each `kfuse analyze` run on this trace stores its report here, as the
-- JSON of schemas/report.schema.json, so the GUI can show it without re-running the analysis.
CREATE TABLE IF NOT EXISTS analysis (
  id            INTEGER PRIMARY KEY,
  created_ns    INTEGER NOT NULL,   -- wall clock, Unix epoch ns
  kfuse_version TEXT NOT NULL,
  gpu           TEXT NOT NULL,      -- spec table short name the costs were computed for
  report        TEXT NOT NULL       -- JSON
);

-- Review decisions (schema version 3): a performance engineer's accept/reject of a candidate, with a note
-- (kfuse-gui writes them; the latest row per candidate_key counts).
CREATE TABLE IF NOT EXISTS review (
  id            INTEGER PRIMARY KEY,
  candidate_key TEXT NOT NULL,      -- kind:mangled,names (core::reviewCandidateKey)
  rank          INTEGER NOT NULL,   -- the candidate's rank when decided (not its identity)
  verdict       TEXT NOT NULL,      -- accepted | rejected
  note          TEXT NOT NULL DEFAULT '',
  reviewer      TEXT NOT NULL DEFAULT '',
  decided_ns    INTEGER NOT NULL    -- wall clock, Unix epoch ns
);
