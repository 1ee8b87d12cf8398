// Multi-rank analysis: a small thread pool over the inputs, then a merge by pattern.
#include "kfuse/analyzer/multi_rank.h"
#include "report/text_format.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "kfuse/analyzer/importer.h"

namespace kfuse::analyzer {

namespace {

std::string patternKey(const Candidate& c) {
  std::string key = std::string(candidateKindName(c.kind)) + "|" + c.fusion_kind + "|";
  const bool ops = !c.members.empty() && std::all_of(c.members.begin(), c.members.end(),
                                                     [](const MemberContext& m) { return !m.op.empty(); });
  for (size_t i = 0; i < c.names.size(); ++i) key += (ops ? c.members[i].label : c.names[i]) + "\x1f";
  return key;
}

// "1.25x", the straggler ratio as the text report says it.
std::string fmtRatio() {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.2gx", kStragglerRatio);
  return buf;
}

bool endsWith(const std::string& name, const char* suffix) {
  const size_t n = std::char_traits<char>::length(suffix);
  return name.size() >= n && name.compare(name.size() - n, n, suffix) == 0;
}

bool traceFile(const std::filesystem::path& p) {
  const std::string name = p.filename().string();
  return endsWith(name, ".json") || endsWith(name, ".json.gz") || endsWith(name, ".sqlite");
}

bool reportFile(const std::filesystem::path& p) {
  return endsWith(p.filename().string(), ".json");
}

// Each path as given, a directory as the regular files directly inside it that `wanted` accepts, sorted by name
// (`what` names them when there is none). A path that does not exist is kept when `keep_missing`, else kNotFound.
Expected<std::vector<std::string>> expandInputs(const std::vector<std::string>& paths,
                                                bool (*wanted)(const std::filesystem::path&), const char* what,
                                                bool keep_missing) {
  std::vector<std::string> out;
  for (const std::string& p : paths) {
    std::error_code ec;
    const auto status = std::filesystem::status(p, ec);
    if (!keep_missing && (ec || !std::filesystem::exists(status))) return notFound(p + ": no such file or directory");
    if (!std::filesystem::is_directory(status)) {
      out.push_back(p);
      continue;
    }
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(p, ec)) {
      if (e.is_regular_file() && wanted(e.path())) files.push_back(e.path().string());
    }
    if (ec) return ioError(p + ": cannot list the directory: " + ec.message());
    if (files.empty()) return invalidArgument(p + ": a directory without " + what);
    std::sort(files.begin(), files.end());
    out.insert(out.end(), files.begin(), files.end());
  }
  return out;
}

}  // namespace

Expected<std::vector<std::string>> expandRankInputs(const std::vector<std::string>& paths) {
  return expandInputs(paths, traceFile, "trace files (.json, .json.gz, .sqlite)", /*keep_missing=*/false);
}

Expected<MultiRankReport> analyzeRanks(const std::vector<std::string>& paths, const AnalysisOptions& options,
                                       unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min<unsigned>(threads, static_cast<unsigned>(std::max<size_t>(1, paths.size())));
  std::vector<std::optional<Expected<Report>>> results(paths.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < paths.size(); i = next++) {
      auto in = importTrace(paths[i]);
      if (!in) {
        results[i].emplace(in.status());
        continue;
      }
      results[i].emplace(analyze(*in, paths[i], options));
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();

  RankMerger merger;
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i]->ok()) return results[i]->status();
    Report& r = **results[i];
    const int rank = r.rank.value_or(static_cast<int>(i));
    merger.add(paths[i], rank, std::move(r));
  }
  return merger.finish();
}

bool RankMerger::add(const std::string& path, int rank, Report report) {
  if (first_) {
    first_ = false;
    cost_model_version_ = report.cost_model_version;
    gpu_ = report.gpu.short_name;
  } else if (report.cost_model_version != cost_model_version_) {
    leaveOut(path, "cost model version " + std::to_string(report.cost_model_version) + ", the other ranks' " +
                       std::to_string(cost_model_version_) + ": analyze every rank with the same kfuse");
    return false;
  }
  if (report.gpu.short_name != gpu_ && !gpus_differ_) {
    gpus_differ_ = true;
    out_.notes.push_back("ranks are costed for different GPUs (" + gpu_ + ", " + report.gpu.short_name +
                         ", ...: " + path + "): their savings are summed as they are");
  }
  RankSummary summary;
  summary.path = path;
  summary.rank = rank;
  summary.launches = report.launches;
  summary.gpu_busy_ns = report.gpu_busy_ns;
  summary.gpu_busy_estimated = report.gpu_busy_estimated;
  summary.candidates = report.candidates.size();
  summary.gpu = report.gpu.short_name;
  summary.notices = std::move(report.notices);
  out_.ranks.push_back(std::move(summary));
  for (Candidate& c : report.candidates) {
    auto [it, inserted] = index_.try_emplace(patternKey(c), out_.recommendations.size());
    if (inserted) out_.recommendations.push_back(MergedRecommendation{c, {}, 0, {}});
    MergedRecommendation& m = out_.recommendations[it->second];
    m.ranks.push_back(RankShare{rank, static_cast<size_t>(c.runs()), c.total_saving_ns, c.cost.measured_ns});
    m.total_saving_ns += c.total_saving_ns;
    if (c.total_saving_ns > m.representative.total_saving_ns) m.representative = std::move(c);
  }
  return true;
}

void RankMerger::leaveOut(const std::string& path, const std::string& why) {
  out_.left_out.push_back(LeftOutRank{path, why});
}

namespace {

// The ranks whose value is above kStragglerRatio x the median of all (at least 3 ranks: with fewer, no median
// tells a slow rank from a fast one).
std::vector<int> aboveMedian(const std::vector<std::pair<int, double>>& values) {
  std::vector<int> out;
  if (values.size() < 3) return out;
  std::vector<double> v;
  for (const auto& [rank, x] : values) v.push_back(x);
  std::sort(v.begin(), v.end());
  const double median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  if (median <= 0) return out;
  for (const auto& [rank, x] : values) {
    if (x > kStragglerRatio * median) out.push_back(rank);
  }
  return out;
}

}  // namespace

MultiRankReport RankMerger::finish() {
  MultiRankReport out = std::move(out_);
  std::stable_sort(out.ranks.begin(), out.ranks.end(),
                   [](const RankSummary& a, const RankSummary& b) { return a.rank < b.rank; });
  std::vector<std::pair<int, double>> busy;
  for (const RankSummary& r : out.ranks) busy.emplace_back(r.rank, static_cast<double>(r.gpu_busy_ns));
  out.stragglers = aboveMedian(busy);
  for (MergedRecommendation& m : out.recommendations) {
    std::stable_sort(m.ranks.begin(), m.ranks.end(),
                     [](const RankShare& a, const RankShare& b) { return a.rank < b.rank; });
    std::vector<std::pair<int, double>> times;
    for (const RankShare& s : m.ranks) times.emplace_back(s.rank, s.measured_ns);
    m.stragglers = aboveMedian(times);
  }
  std::stable_sort(out.recommendations.begin(), out.recommendations.end(),
                   [](const MergedRecommendation& a, const MergedRecommendation& b) {
                     const bool ba = a.representative.legality == Legality::kBlocked;
                     const bool bb = b.representative.legality == Legality::kBlocked;
                     if (ba != bb) return bb;
                     return a.total_saving_ns > b.total_saving_ns;
                   });
  *this = RankMerger{};
  return out;
}

Expected<MultiRankReport> mergeRankReports(const std::vector<std::string>& paths,
                                           const std::function<void(size_t done, size_t total)>& progress) {
  // A missing report is left out below, with the others merged.
  KFUSE_ASSIGN_OR_RETURN(const std::vector<std::string> files,
                         expandInputs(paths, reportFile, "rank reports (.json)", /*keep_missing=*/true));
  RankMerger merger;
  size_t merged = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string& f = files[i];
    if (progress) progress(i, files.size());
    auto r = readReportFile(f);
    if (!r.ok()) {
      // The message names the file; the left-out entry has the path beside it.
      std::string why = r.status().message();
      if (why.rfind(f + ": ", 0) == 0) why.erase(0, f.size() + 2);
      merger.leaveOut(f, why);
      continue;
    }
    const int rank = r->rank.value_or(static_cast<int>(i));
    if (merger.add(f, rank, std::move(r).value())) ++merged;
  }
  if (progress) progress(files.size(), files.size());
  MultiRankReport out = merger.finish();
  if (merged == 0) {
    std::string why = "no rank report could be merged";
    if (!out.left_out.empty()) why += ": " + out.left_out.front().path + ": " + out.left_out.front().why;
    return invalidArgument(why);
  }
  return out;
}

namespace {

// One merged recommendation as the Markdown and HTML tables show it.
struct RecommendationRow {
  std::string members, kind, legality, ranks, occurrences, saving, stragglers, per_rank;
};

RecommendationRow recommendationRow(const MergedRecommendation& m, size_t ranks) {
  const Candidate& c = m.representative;
  RecommendationRow row;
  for (size_t i = 0; i < c.names.size(); ++i) {
    const bool op = i < c.members.size() && !c.members[i].op.empty();
    row.members += (i ? (c.kind == CandidateKind::kVertical ? " -> " : " + ") : "") +
                   (op ? c.members[i].label : shortKernelName(c.names[i], 40));
  }
  row.kind = c.fusion_kind.empty() ? candidateKindName(c.kind) : c.fusion_kind;
  row.legality = legalityName(c.legality);
  row.ranks = std::to_string(m.ranks.size()) + " of " + std::to_string(ranks);
  size_t occurrences = 0;
  for (const RankShare& s : m.ranks) occurrences += s.occurrences;
  row.occurrences = std::to_string(occurrences);
  row.saving = durationText(m.total_saving_ns);
  for (int rank : m.stragglers) row.stragglers += (row.stragglers.empty() ? "" : ", ") + std::to_string(rank);
  for (size_t i = 0; i < m.ranks.size() && i < 8; ++i) {
    row.per_rank += (i ? ", " : "") + std::string("rank ") + std::to_string(m.ranks[i].rank) + " " +
                    durationText(m.ranks[i].saving_ns);
  }
  if (m.ranks.size() > 8) row.per_rank += ", ...";
  return row;
}

std::string rankList(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

}  // namespace

std::string multiRankToText(const MultiRankReport& r, size_t top) {
  std::string out = "ranks     " + std::to_string(r.ranks.size()) +
                    (r.left_out.empty() ? "" : " merged, " + std::to_string(r.left_out.size()) + " left out") + "\n";
  const size_t listed = r.ranks.size() > 16 ? 8 : r.ranks.size();
  for (size_t i = 0; i < listed; ++i) {
    const RankSummary& rr = r.ranks[i];
    out += "  rank " + std::to_string(rr.rank) + "  " + rr.path + ": " + std::to_string(rr.launches) +
           " launches, GPU busy " + durationText(static_cast<double>(rr.gpu_busy_ns)) + ", " +
           std::to_string(rr.candidates) + " candidates\n";
    for (const std::string& n : rr.notices) out += "    NOTE " + n + "\n";
  }
  if (listed < r.ranks.size()) out += "  ... " + std::to_string(r.ranks.size() - listed) + " more ranks\n";
  for (const LeftOutRank& l : r.left_out) out += "  left out " + l.path + ": " + l.why + "\n";
  for (const std::string& n : r.notes) out += "NOTE      " + n + "\n";
  if (!r.stragglers.empty()) {
    out += "stragglers";
    for (int rank : r.stragglers) out += " rank " + std::to_string(rank);
    out += " (GPU busy time above " + fmtRatio() + " the median over the ranks)\n";
  }
  out += "\nmerged recommendations (same pattern on several ranks counted once, savings summed):\n";
  size_t shown = 0;
  for (const MergedRecommendation& m : r.recommendations) {
    if (shown++ >= top) break;
    const Candidate& c = m.representative;
    const RecommendationRow row = recommendationRow(m, r.ranks.size());
    out += std::to_string(shown) + ". " + row.members + "\n   " + row.legality + ", " + row.kind + "; " + row.ranks +
           " ranks, " + row.occurrences + " occurrences, saving " + row.saving + " in all (" + row.per_rank + ")\n";
    if (!m.stragglers.empty()) {
      out += "   slower on";
      for (int rank : m.stragglers) out += " rank " + std::to_string(rank);
      out += " (time per occurrence above " + fmtRatio() + " the median)\n";
    }
    if (!c.remedies.empty()) out += "   => " + c.remedies.front().kind + ": " + c.remedies.front().text + "\n";
  }
  if (r.recommendations.empty()) out += "  (none)\n";
  return out;
}

std::string multiRankToMarkdown(const MultiRankReport& r, size_t top) {
  std::string out = "# kfuse: merged analysis of " + std::to_string(r.ranks.size()) + " ranks\n\n";
  if (!r.left_out.empty()) {
    out += std::to_string(r.left_out.size()) + " inputs left out:\n\n";
    for (const LeftOutRank& l : r.left_out) out += "- `" + mdEscape(l.path) + "`: " + mdEscape(l.why) + "\n";
    out += "\n";
  }
  for (const std::string& n : r.notes) out += "**Note:** " + mdEscape(n) + "\n\n";
  if (!r.stragglers.empty()) {
    out +=
        "**Stragglers** (GPU busy time above " + fmtRatio() + " the median): rank " + rankList(r.stragglers) + "\n\n";
  }
  out += "| # | kernels | kind | legality | ranks | occurrences | saving | slower on ranks | per rank |\n";
  out += "|---|---|---|---|---|---|---|---|---|\n";
  size_t shown = 0;
  for (const MergedRecommendation& m : r.recommendations) {
    if (shown++ >= top) break;
    const RecommendationRow row = recommendationRow(m, r.ranks.size());
    out += "| " + std::to_string(shown) + " | " + mdEscape(row.members) + " | " + row.kind + " | " + row.legality +
           " | " + row.ranks + " | " + row.occurrences + " | " + row.saving + " | " + row.stragglers + " | " +
           row.per_rank + " |\n";
  }
  out += "\n## Ranks\n\n| rank | trace report | launches | GPU busy | candidates |\n|---|---|---|---|---|\n";
  for (const RankSummary& rr : r.ranks) {
    out += "| " + std::to_string(rr.rank) + " | `" + mdEscape(rr.path) + "` | " + std::to_string(rr.launches) + " | " +
           durationText(static_cast<double>(rr.gpu_busy_ns)) + " | " + std::to_string(rr.candidates) + " |\n";
  }
  return out;
}

std::string multiRankToHtml(const MultiRankReport& r, size_t top) {
  auto esc = [](const std::string& s) { return core::htmlEscape(s); };
  std::string out =
      "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'><title>kfuse: merged analysis of " +
      std::to_string(r.ranks.size()) +
      " ranks</title>\n<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
      "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}.slow{color:#b00}</style></head><body>\n"
      "<h1>Merged analysis of " +
      std::to_string(r.ranks.size()) + " ranks</h1>\n";
  if (!r.left_out.empty()) {
    out += "<p>" + std::to_string(r.left_out.size()) + " inputs left out:</p><ul>";
    for (const LeftOutRank& l : r.left_out) out += "<li><code>" + esc(l.path) + "</code>: " + esc(l.why) + "</li>";
    out += "</ul>\n";
  }
  for (const std::string& n : r.notes) out += "<p><strong>Note:</strong> " + esc(n) + "</p>\n";
  if (!r.stragglers.empty()) {
    out += "<p class='slow'><strong>Stragglers</strong> (GPU busy time above " + fmtRatio() + " the median): rank " +
           rankList(r.stragglers) + "</p>\n";
  }
  out +=
      "<h2>Recommendations</h2>\n<table><tr><th>#</th><th>kernels</th><th>kind</th><th>legality</th><th>ranks</th>"
      "<th>occurrences</th><th>saving</th><th>slower on ranks</th><th>per rank</th></tr>\n";
  size_t shown = 0;
  for (const MergedRecommendation& m : r.recommendations) {
    if (shown++ >= top) break;
    const RecommendationRow row = recommendationRow(m, r.ranks.size());
    out += "<tr><td>" + std::to_string(shown) + "</td><td>" + esc(row.members) + "</td><td>" + esc(row.kind) +
           "</td><td>" + esc(row.legality) + "</td><td>" + row.ranks + "</td><td>" + row.occurrences + "</td><td>" +
           row.saving + "</td><td class='slow'>" + row.stragglers + "</td><td>" + row.per_rank + "</td></tr>\n";
  }
  out +=
      "</table>\n<h2>Ranks</h2>\n<table><tr><th>rank</th><th>report</th><th>launches</th><th>GPU busy</th>"
      "<th>candidates</th></tr>\n";
  for (const RankSummary& rr : r.ranks) {
    const bool slow = std::find(r.stragglers.begin(), r.stragglers.end(), rr.rank) != r.stragglers.end();
    out += std::string("<tr") + (slow ? " class='slow'" : "") + "><td>" + std::to_string(rr.rank) + "</td><td>" +
           esc(rr.path) + "</td><td>" + std::to_string(rr.launches) + "</td><td>" +
           durationText(static_cast<double>(rr.gpu_busy_ns)) + "</td><td>" + std::to_string(rr.candidates) +
           "</td></tr>\n";
  }
  out += "</table>\n</body></html>\n";
  return out;
}

nlohmann::json multiRankToJson(const MultiRankReport& r) {
  nlohmann::json j;
  j["format"] = "kfuse-multi-rank-report";
  j["version"] = 2;
  nlohmann::json ranks = nlohmann::json::array();
  for (const RankSummary& rr : r.ranks) {
    ranks.push_back({{"rank", rr.rank},
                     {"path", rr.path},
                     {"launches", rr.launches},
                     {"gpu_busy_ns", rr.gpu_busy_ns},
                     {"gpu_busy_estimated", rr.gpu_busy_estimated},
                     {"candidates", rr.candidates},
                     {"gpu", rr.gpu},
                     {"notices", rr.notices}});
  }
  j["ranks"] = ranks;
  nlohmann::json left = nlohmann::json::array();
  for (const LeftOutRank& l : r.left_out) left.push_back({{"path", l.path}, {"why", l.why}});
  j["left_out"] = left;
  j["stragglers"] = r.stragglers;
  j["straggler_ratio"] = kStragglerRatio;
  j["notes"] = r.notes;
  nlohmann::json recs = nlohmann::json::array();
  for (const MergedRecommendation& m : r.recommendations) {
    nlohmann::json per = nlohmann::json::array();
    for (const RankShare& s : m.ranks) {
      per.push_back({{"rank", s.rank},
                     {"occurrences", s.occurrences},
                     {"saving_ns", s.saving_ns},
                     {"measured_ns_per_occurrence", s.measured_ns}});
    }
    nlohmann::json members = nlohmann::json::array();
    for (size_t i = 0; i < m.representative.names.size(); ++i) {
      members.push_back(i < m.representative.members.size() && !m.representative.members[i].op.empty()
                            ? m.representative.members[i].label
                            : m.representative.names[i]);
    }
    recs.push_back({{"members", members},
                    {"kind", candidateKindName(m.representative.kind)},
                    {"fusion_kind", m.representative.fusion_kind},
                    {"legality", legalityName(m.representative.legality)},
                    {"id", m.representative.id},
                    {"total_saving_ns", m.total_saving_ns},
                    {"stragglers", m.stragglers},
                    {"ranks", per}});
  }
  j["recommendations"] = recs;
  return j;
}

}  // namespace kfuse::analyzer
