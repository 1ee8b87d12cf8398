// kfuse-gui [FILE]: review kfuse's fusion recommendations. FILE is a kfuse trace, a PyTorch profiler (Kineto) JSON
// or an Nsight Systems SQLite export, as for `kfuse analyze`.
#include <QApplication>
#include <QCommandLineParser>

#include "main_window.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName("kfuse");
  QApplication::setApplicationName("kfuse-gui");
  QApplication::setApplicationVersion(KFUSE_VERSION_STRING);
  QCommandLineParser parser;
  parser.setApplicationDescription(
      "Review kfuse's fusion recommendations: timeline, candidates, dependency graph, "
      "roofline, PTX; accept or reject each and export plans for `kfuse run`.");
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument("FILE", "a kfuse trace, Kineto JSON (.json, .json.gz) or Nsight Systems export");
  parser.process(app);
  kfuse::gui::MainWindow window;
  window.show();
  if (!parser.positionalArguments().isEmpty()) window.openFile(parser.positionalArguments().front());
  return app.exec();
}
