// Validation results written into the trace they came from, so the trace keeps the history of what was fused
// and how it was checked. The table is the rewriter's own; the trace store neither reads nor requires it.
#include <cstring>
#include <fstream>

#include "kfuse/core/sqlite_db.h"
#include "kfuse/rewriter/validate.h"

namespace kfuse::rewriter {

namespace {

constexpr const char* kCreate = R"sql(
CREATE TABLE IF NOT EXISTS kfuse_validation (
  id INTEGER PRIMARY KEY,
  validated_at TEXT NOT NULL,   -- ISO 8601 UTC
  plan_dir TEXT NOT NULL,
  candidate_rank INTEGER,
  fused_kernel TEXT NOT NULL,
  backend TEXT NOT NULL,        -- 'emu' or 'gpu'
  result TEXT NOT NULL,         -- 'passed' or 'failed'
  runs INTEGER NOT NULL,
  seed INTEGER NOT NULL,
  mismatch TEXT                 -- the first mismatch or failure, as a sentence; NULL when passed
);
)sql";

bool isSqliteFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[16] = {};
  in.read(magic, sizeof magic);
  return in.gcount() == 16 && std::memcmp(magic, "SQLite format 3", 16) == 0;
}

}  // namespace

Expected<bool> recordValidationInTrace(const std::string& trace_path, const Plan& plan, const std::string& plan_dir,
                                       Backend backend) {
  if (trace_path.empty() || !isSqliteFile(trace_path)) return false;  // JSON and imported traces are read-only
  core::sqlite::Db db;
  KFUSE_RETURN_IF_ERROR(db.open(trace_path, SQLITE_OPEN_READWRITE));
  KFUSE_RETURN_IF_ERROR(db.exec(kCreate));
  auto stmt = db.prepare(
      "INSERT INTO kfuse_validation (validated_at, plan_dir, candidate_rank, fused_kernel, backend, result, runs, "
      "seed, mismatch) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
  if (!stmt.ok()) return stmt.status();
  const char* result = core::enumName(backend == Backend::kGpu ? plan.validation.gpu : plan.validation.emulator);
  stmt->bind(1, std::string_view(plan.validation.validated_at));
  stmt->bind(2, std::string_view(plan_dir));
  stmt->bind(3, static_cast<int64_t>(plan.candidate_rank));
  stmt->bind(4, std::string_view(plan.fused.name));
  stmt->bind(5, std::string_view(backendName(backend)));
  stmt->bind(6, std::string_view(result));
  stmt->bind(7, static_cast<int64_t>(plan.validation.runs));
  stmt->bindU64(8, plan.validation.seed);
  if (plan.validation.mismatch.empty()) {
    sqlite3_bind_null(stmt->get(), 9);
  } else {
    stmt->bind(9, std::string_view(plan.validation.mismatch));
  }
  KFUSE_RETURN_IF_ERROR(db.run(*stmt));
  return true;
}

}  // namespace kfuse::rewriter
