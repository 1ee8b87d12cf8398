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

// A copy of `path` in `dir` (tests that write review decisions never touch the fixture).
inline QString scratchCopy(const QTemporaryDir& dir, const QString& path) {
  const QString copy = QDir(dir.path()).filePath(QFileInfo(path).fileName());
  QFile::remove(copy);
  QFile::copy(path, copy);
  QFile::setPermissions(copy, QFile::ReadOwner | QFile::WriteOwner);
  return copy;
}

}  // namespace kfuse::gui::testing
