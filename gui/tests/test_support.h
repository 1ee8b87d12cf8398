// Shared by the GUI tests: paths of the traces they open, and scratch copies that vanish with the test.
#pragma once

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QString>
#include <QTemporaryDir>

namespace kfuse::gui::testing {

inline QString sharedTrace(const char* relative) {
  return QDir(QStringLiteral(KFUSE_SHARED_DATA_DIR)).filePath(QString::fromUtf8(relative));
}
inline QString emulatorTrace() {
  return QStringLiteral(KFUSE_GUI_EMULATOR_TRACE);
}
// `kfuse demo -o DIR`'s directory (gui.RecordDemo): before.sqlite, after.sqlite, plans/, run.json.
inline QString demoFile(const char* relative) {
  return QDir(QStringLiteral(KFUSE_GUI_DEMO_DIR)).filePath(QString::fromUtf8(relative));
}
// Two recordings of the collector's NVTX test program (gui.Record_nvtx_ranges_1, _2).
inline QString nvtxTraceBefore() {
  return QStringLiteral(KFUSE_GUI_NVTX_BEFORE);
}
inline QString nvtxTraceAfter() {
  return QStringLiteral(KFUSE_GUI_NVTX_AFTER);
}

// A copy of `path` in `dir` (tests that write review decisions never touch the fixture).
inline QString scratchCopy(const QTemporaryDir& dir, const QString& path) {
  const QString copy = QDir(dir.path()).filePath(QFileInfo(path).fileName());
  QFile::remove(copy);
  QFile::copy(path, copy);
  QFile::setPermissions(copy, QFile::ReadOwner | QFile::WriteOwner);
  return copy;
}

}  // namespace kfuse::gui::testing
