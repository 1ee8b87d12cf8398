// Multi-rank analysis: a small thread pool over the inputs, then a merge by pattern.
#include "kfuse/analyzer/multi_rank.h"
#include "report/text_format.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
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

bool traceFile(const std::filesystem::path& p) {
  const std::string name = p.filename().string();
  auto ends = [&](const std::string& s) {
    return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  return ends(".json") || ends(".json.gz") || ends(".sqlite");
}

}  // namespace

Expected<std::vector<std::string>> expandRankInputs(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& p : paths) {
    std::error_code ec;
    const auto status = std::filesystem::status(p, ec);
    if (ec || !std::filesystem::exists(status)) return notFound(p + ": no such file or directory");
    if (!std::filesystem::is_directory(status)) {
      out.push_back(p);
      continue;
    }
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(p, ec)) {
      if (e.is_regular_file() && traceFile(e.path())) files.push_back(e.path().string());
    }
    if (ec) return ioError(p + ": cannot list the directory: " + ec.message());
    if (files.empty()) return invalidArgument(p + ": a directory without trace files (.json, .json.gz, .sqlite)");
    std::sort(files.begin(), files.end());
    out.insert(out.end(), files.begin(), files.end());
  }
  return out;
}

Expected<MultiRankReport> analyzeRanks(const std::vector<std::string>& paths, const AnalysisOptions& options,
                                       unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min<unsigned>(threads, static_cast<unsigned>(std::max<size_t>(1, paths.size())));
  std::vector<std::optional<Expected<RankReport>>> results(paths.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < paths.size(); i = next++) {
      auto in = importTrace(paths[i]);
      if (!in) {
        results[i].emplace(in.status());
        continue;
      }
      auto r = analyze(*in, paths[i], options);
      if (!r) {
        results[i].emplace(r.status());
        continue;
      }
      RankReport rr;
      rr.path = paths[i];
      rr.rank = static_cast<int>(i);
      if (auto it = in->trace.metadata.extra.find("kineto.rank"); it != in->trace.metadata.extra.end()) {
        rr.rank = std::atoi(it->second.c_str());
      }
      rr.report = std::move(*r);
      results[i].emplace(std::move(rr));
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();

  MultiRankReport out;
  for (auto& r : results) {
    if (!r->ok()) return r->status();
    out.ranks.push_back(std::move(**r));
  }
  std::stable_sort(out.ranks.begin(), out.ranks.end(),
                   [](const RankReport& a, const RankReport& b) { return a.rank < b.rank; });
  std::map<std::string, size_t> index;
  std::vector<double> best;  // per recommendation: the largest saving of one rank, whose candidate represents it
  for (const RankReport& rr : out.ranks) {
    for (const Candidate& c : rr.report.candidates) {
      auto [it, inserted] = index.try_emplace(patternKey(c), out.recommendations.size());
      if (inserted) {
        out.recommendations.push_back(MergedRecommendation{c, {}, 0});
        best.push_back(c.total_saving_ns);
      }
      MergedRecommendation& m = out.recommendations[it->second];
      m.ranks.push_back(RankShare{rr.rank, c.occurrences.size(), c.total_saving_ns});
      m.total_saving_ns += c.total_saving_ns;
      if (c.total_saving_ns > best[it->second]) {
        best[it->second] = c.total_saving_ns;
        m.representative = c;
      }
    }
  }
  std::stable_sort(out.recommendations.begin(), out.recommendations.end(),
                   [](const MergedRecommendation& a, const MergedRecommendation& b) {
                     const bool ba = a.representative.legality == Legality::kBlocked;
                     const bool bb = b.representative.legality == Legality::kBlocked;
                     if (ba != bb) return bb;
                     return a.total_saving_ns > b.total_saving_ns;
                   });
  return out;
}

std::string multiRankToText(const MultiRankReport& r, size_t top) {
  std::string out = "ranks     " + std::to_string(r.ranks.size()) + "\n";
  for (const RankReport& rr : r.ranks) {
    out += "  rank " + std::to_string(rr.rank) + "  " + rr.path + ": " + std::to_string(rr.report.launches) +
           " launches, GPU busy " + durationText(static_cast<double>(rr.report.gpu_busy_ns)) + ", " +
           std::to_string(rr.report.candidates.size()) + " candidates\n";
    for (const std::string& n : rr.report.notices) out += "    NOTE " + n + "\n";
  }
  out += "\nmerged recommendations (same pattern on several ranks counted once, savings summed):\n";
  size_t shown = 0;
  for (const MergedRecommendation& m : r.recommendations) {
    if (shown++ >= top) break;
    const Candidate& c = m.representative;
    std::string members;
    for (size_t i = 0; i < c.names.size(); ++i) {
      const bool op = i < c.members.size() && !c.members[i].op.empty();
      members += (i ? (c.kind == CandidateKind::kVertical ? " -> " : " + ") : "") +
                 (op ? c.members[i].label : shortKernelName(c.names[i], 40));
    }
    size_t occurrences = 0;
    for (const RankShare& s : m.ranks) occurrences += s.occurrences;
    out += std::to_string(shown) + ". " + members + "\n   " + legalityName(c.legality) + ", " +
           (c.fusion_kind.empty() ? candidateKindName(c.kind) : c.fusion_kind) + "; " + std::to_string(m.ranks.size()) +
           " of " + std::to_string(r.ranks.size()) + " ranks, " + std::to_string(occurrences) +
           " occurrences, saving " + durationText(m.total_saving_ns) + " in all (";
    for (size_t i = 0; i < m.ranks.size() && i < 8; ++i) {
      out += (i ? ", " : "") + std::string("rank ") + std::to_string(m.ranks[i].rank) + " " +
             durationText(m.ranks[i].saving_ns);
    }
    out += m.ranks.size() > 8 ? ", ...)\n" : ")\n";
    if (!c.remedies.empty()) out += "   => " + c.remedies.front().kind + ": " + c.remedies.front().text + "\n";
  }
  if (r.recommendations.empty()) out += "  (none)\n";
  return out;
}

nlohmann::json multiRankToJson(const MultiRankReport& r) {
  nlohmann::json j;
  j["format"] = "kfuse-multi-rank-report";
  j["version"] = 1;
  nlohmann::json ranks = nlohmann::json::array();
  for (const RankReport& rr : r.ranks) ranks.push_back({{"rank", rr.rank}, {"report", reportToJson(rr.report)}});
  j["ranks"] = ranks;
  nlohmann::json recs = nlohmann::json::array();
  for (const MergedRecommendation& m : r.recommendations) {
    nlohmann::json per = nlohmann::json::array();
    for (const RankShare& s : m.ranks) {
      per.push_back({{"rank", s.rank}, {"occurrences", s.occurrences}, {"saving_ns", s.saving_ns}});
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
                    {"total_saving_ns", m.total_saving_ns},
                    {"ranks", per}});
  }
  j["recommendations"] = recs;
  return j;
}

}  // namespace kfuse::analyzer
