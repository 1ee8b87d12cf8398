// The analyzer reads SQLite files the user gave us (Nsight Systems exports, kfuse traces being sniffed) with
// core's wrapper, always through SqliteDb::openForReading so nothing is ever written beside them (a write-ahead log
// left by a killed recording is read, not checkpointed).
#pragma once

#include "kfuse/core/sqlite_db.h"

namespace kfuse::analyzer::detail {

using SqliteDb = core::sqlite::Db;
using SqliteStmt = core::sqlite::Stmt;

}  // namespace kfuse::analyzer::detail
