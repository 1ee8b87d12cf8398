// kfuse-gui [FILE]: review kfuse's fusion recommendations. FILE is a kfuse trace, a PyTorch profiler (Kineto) JSON
// or an Nsight Systems SQLite export, as for `kfuse analyze`.
// kfuse-gui --compare BEFORE AFTER: the before/after window for two traces of the same program (for example the
// before.sqlite and after.sqlite that `kfuse demo -o DIR` records).
#include <QApplication>
#include <QCommandLineParser>

#include <cstdio>

#include "compare_view.h"
#include "main_window.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName("kfuse");
  QApplication::setApplicationName("kfuse-gui");
  QApplication::setApplicationVersion(KFUSE_VERSION_STRING);
  QCommandLineParser parser;
  parser.setApplicationDescription(
      "Review kfuse's fusion recommendations: timeline, candidates, dependency graph, "
      "roofline, PTX; accept or reject each and export plans for `kfuse run`. With --compare, "
      "the kernels, NVTX ranges and applied plans of two traces side by side.");
  parser.addHelpOption();
  parser.addVersionOption();
  const QCommandLineOption compare(
      "compare", "Compare trace BEFORE with FILE, the trace after (e.g. recorded under `kfuse run --plan`).", "BEFORE");
  parser.addOption(compare);
  parser.addPositionalArgument("FILE", "a kfuse trace, Kineto JSON (.json, .json.gz) or Nsight Systems export");
  parser.process(app);
  const QStringList files = parser.positionalArguments();
  if (parser.isSet(compare)) {
    if (files.size() != 1) {
      std::fprintf(stderr, "kfuse-gui: --compare BEFORE AFTER: name exactly one trace after BEFORE (got %lld)\n",
                   static_cast<long long>(files.size()));
      return 2;
    }
    kfuse::gui::CompareWindow window;
    window.show();
    window.open(parser.value(compare), files.front());
    return app.exec();
  }
  kfuse::gui::MainWindow window;
  window.show();
  if (!files.isEmpty()) window.openFile(files.front());
  return app.exec();
}
