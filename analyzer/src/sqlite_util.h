// The analyzer reads SQLite files the user gave us (Nsight Systems exports, kfuse traces being sniffed) with
// core's wrapper, always through SqliteDb::openReadOnlyImmutable so nothing is ever written beside them.
#pragma once

#include "kfuse/core/sqlite_db.h"

namespace kfuse::analyzer::detail {

using SqliteDb = core::sqlite::Db;
using SqliteStmt = core::sqlite::Stmt;

}  // namespace kfuse::analyzer::detail
