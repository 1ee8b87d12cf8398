// kfuse-gui's performance targets (README's performance table; scripts/bench.sh prints the medians):
//   BM_OpenToDrawnTimeline   opening a 200,000-launch Kineto trace (import, analysis, timeline lanes) up to the first
//                            painted timeline frame (1600 x 900): target <= 5 s;
//   BM_TimelineFrame/zoom    one timeline frame while zooming from the whole trace to 20 µs: target <= 16 ms;
//   BM_TimelineFrame/pan     one frame while panning across the trace at 1 ms wide: target <= 16 ms;
//   BM_CancelLatency/D       Cancel pressed D ms into opening it, until loadSession returns: target <= 200 ms at
//                            every D (the import, then each stage of the analysis).
// The trace is SYNTHETIC (bench/make_large_kineto.py writes it into the temp directory, removed at exit; or set
// KFUSE_GUI_BENCH_TRACE to a file of your own). Frames are painted with TimelinePainter into a QImage — the same code
// the widget's paintEvent runs — on the offscreen platform.
#include <benchmark/benchmark.h>

#include <QGuiApplication>
#include <QImage>
#include <QPainter>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "kfuse/gui/session.h"
#include "kfuse/gui/timeline_painter.h"

namespace {

namespace fs = std::filesystem;
using namespace kfuse::gui;

std::string& generated() {
  static std::string path;
  return path;
}

std::string benchTrace() {
  if (const char* p = std::getenv("KFUSE_GUI_BENCH_TRACE")) return p;
  if (!generated().empty()) return generated();
  const fs::path out = fs::temp_directory_path() / ("kfuse_gui_bench_" + std::to_string(::getpid()) + ".json");
  const std::string cmd =
      "python3 " + std::string(KFUSE_SOURCE_DIR) + "/bench/make_large_kineto.py " + out.string() + " --launches 200000";
  if (std::system(cmd.c_str()) != 0) return {};
  generated() = out.string();
  return generated();
}

std::shared_ptr<const Session>& sharedSession() {
  static std::shared_ptr<const Session> s;
  return s;
}

constexpr int kWidth = 1600, kHeight = 900;

void BM_OpenToDrawnTimeline(benchmark::State& state) {
  const std::string path = benchTrace();
  if (path.empty()) {
    state.SkipWithError("could not write the synthetic trace");
    return;
  }
  QImage image(kWidth, kHeight, QImage::Format_RGB32);
  for (auto _ : state) {
    auto session = loadSession(path, {});
    if (!session.ok()) {
      state.SkipWithError(session.status().message().c_str());
      return;
    }
    const TimelineData& t = (*session)->timeline;
    QPainter p(&image);
    TimelinePainter().paint(p, image.size(), t, {static_cast<double>(t.start_ns), static_cast<double>(t.end_ns), 0},
                            {});
    p.end();
    state.counters["launches"] = static_cast<double>(t.kernels);
    state.counters["candidates"] = static_cast<double>((*session)->report.candidates.size());
    sharedSession() = *session;
  }
}
BENCHMARK(BM_OpenToDrawnTimeline)->Unit(benchmark::kMillisecond)->Iterations(1);

// The load runs on a worker thread, as the GUI's SessionLoader runs it; the flag is set D ms in and the time until
// loadSession returns is the latency (the counter `cancel_ms`). A load that finished before D counts as 0.
void BM_CancelLatency(benchmark::State& state) {
  const std::string path = benchTrace();
  if (path.empty()) {
    state.SkipWithError("could not write the synthetic trace");
    return;
  }
  const auto delay = std::chrono::milliseconds(state.range(0));
  double worst = 0;
  for (auto _ : state) {
    std::atomic<bool> cancel{false};
    std::atomic<bool> done{false};
    std::chrono::steady_clock::time_point returned;
    bool cancelled = false;
    std::thread worker([&] {
      LoadControl control;
      control.cancel = &cancel;
      auto session = loadSession(path, {}, control);
      returned = std::chrono::steady_clock::now();
      cancelled = !session.ok() && isCancelled(session.status());
      done = true;
    });
    std::this_thread::sleep_for(delay);
    const auto pressed = std::chrono::steady_clock::now();
    cancel = true;
    worker.join();
    if (cancelled) worst = std::max(worst, std::chrono::duration<double, std::milli>(returned - pressed).count());
    state.counters["cancelled"] = cancelled ? 1 : 0;
  }
  state.counters["cancel_ms"] = worst;
}
// Every 100 ms of a load (about 2 s on 2 cores); runs past its end count 0.
BENCHMARK(BM_CancelLatency)->Arg(20)->DenseRange(100, 2500, 100)->Unit(benchmark::kMillisecond)->Iterations(1);

// Frame `i` of 60: zoom (whole trace -> 20 µs around the middle, geometrically) or pan (1 ms window, start to end).
TimelineWindow frame(const TimelineData& t, bool zoom, int i) {
  const double a = static_cast<double>(t.start_ns), b = static_cast<double>(t.end_ns);
  if (zoom) {
    const double mid = (a + b) / 2;
    const double span = (b - a) * std::pow(20'000.0 / (b - a), i / 59.0);
    return {mid - span / 2, mid + span / 2, 0};
  }
  const double span = 1e6;
  const double start = a + (b - a - span) * i / 59.0;
  return {start, start + span, 0};
}

void BM_TimelineFrame(benchmark::State& state) {
  if (!sharedSession()) {
    auto session = loadSession(benchTrace(), {});
    if (!session.ok()) {
      state.SkipWithError(session.status().message().c_str());
      return;
    }
    sharedSession() = *session;
  }
  const TimelineData& t = sharedSession()->timeline;
  const bool zoom = state.range(0) == 0;
  QImage image(kWidth, kHeight, QImage::Format_RGB32);
  TimelinePainter painter;
  int i = 0;
  size_t items = 0;
  for (auto _ : state) {
    QPainter p(&image);
    const TimelinePaintStats s = painter.paint(p, image.size(), t, frame(t, zoom, i), {0, kfuse::core::kNoId, {}, {}});
    p.end();
    items += s.boxes + s.columns;
    i = (i + 1) % 60;
  }
  state.counters["items_per_frame"] = static_cast<double>(items) / static_cast<double>(state.iterations());
  state.SetLabel(zoom ? "zoom" : "pan");
}
BENCHMARK(BM_TimelineFrame)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  qputenv("QT_QPA_PLATFORM", "offscreen");
  QGuiApplication app(argc, argv);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (!generated().empty()) fs::remove(generated());
  return 0;
}
