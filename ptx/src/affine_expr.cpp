// AffineExpr: polynomials over address atoms (the affine forms of analysis.h), with their canonical text.
#include <algorithm>
#include <string>
#include <vector>

#include "kfuse/core/status.h"
#include "kfuse/ptx/analysis.h"

namespace kfuse::ptx {

namespace {

int atomRank(const std::string& a) {
  if (a.rfind("param", 0) == 0) return 0;
  if (a.rfind("ctaid", 0) == 0) return 1;
  if (a.rfind("ntid", 0) == 0) return 2;
  if (a.rfind("nctaid", 0) == 0) return 3;
  if (a.rfind("tid", 0) == 0) return 4;
  return 5;
}

bool atomLess(const std::string& a, const std::string& b) {
  const int ra = atomRank(a), rb = atomRank(b);
  return ra != rb ? ra < rb : a < b;
}

bool monoLess(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  if (a.empty() != b.empty()) return b.empty();  // constant last
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(), atomLess);
}

// Coefficients wrap modulo 2^64 like the 64-bit address arithmetic they model (and signed overflow stays
// defined behaviour).
int64_t wrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

bool keyLess(const AffineTerms::value_type& t, const AffineTerms::key_type& k) {
  return t.first < k;
}

}  // namespace

AffineTerms::const_iterator AffineTerms::find(const key_type& k) const {
  auto it = std::lower_bound(terms_.begin(), terms_.end(), k, keyLess);
  return it != terms_.end() && it->first == k ? it : terms_.end();
}

int64_t AffineTerms::at(const key_type& k) const {
  auto it = find(k);
  KFUSE_CHECK(it != end());
  return it->second;
}

int64_t& AffineTerms::operator[](const key_type& k) {
  auto it = std::lower_bound(terms_.begin(), terms_.end(), k, keyLess);
  if (it == terms_.end() || it->first != k) it = terms_.insert(it, value_type(k, 0));
  return it->second;
}

size_t AffineTerms::erase(const key_type& k) {
  auto it = find(k);
  if (it == end()) return 0;
  terms_.erase(it);
  return 1;
}

AffineExpr AffineExpr::constant(int64_t c) {
  AffineExpr e;
  if (c != 0) e.terms[{}] = c;
  return e;
}

AffineExpr AffineExpr::atom(const std::string& a) {
  AffineExpr e;
  e.terms[{a}] = 1;
  return e;
}

AffineExpr AffineExpr::operator+(const AffineExpr& o) const {
  AffineExpr r = *this;
  for (const auto& [k, v] : o.terms) {
    int64_t& c = r.terms[k];
    c = wrapAdd(c, v);
    if (c == 0) r.terms.erase(k);
  }
  return r;
}

AffineExpr AffineExpr::operator-(const AffineExpr& o) const {
  AffineExpr r = *this;
  for (const auto& [k, v] : o.terms) {
    int64_t& c = r.terms[k];
    c = wrapAdd(c, wrapMul(v, -1));
    if (c == 0) r.terms.erase(k);
  }
  return r;
}

AffineExpr AffineExpr::operator*(const AffineExpr& o) const {
  AffineExpr r;
  for (const auto& [ka, va] : terms) {
    for (const auto& [kb, vb] : o.terms) {
      std::vector<std::string> k = ka;
      k.insert(k.end(), kb.begin(), kb.end());
      std::sort(k.begin(), k.end(), atomLess);
      int64_t& c = r.terms[k];
      c = wrapAdd(c, wrapMul(va, vb));
      if (c == 0) r.terms.erase(k);
    }
  }
  return r;
}

int64_t AffineExpr::constantTerm() const {
  auto it = terms.find({});
  return it == terms.end() ? 0 : it->second;
}

int AffineExpr::degree() const {
  size_t d = 0;
  for (const auto& [k, v] : terms) d = std::max(d, k.size());
  return static_cast<int>(d);
}

std::string AffineExpr::toString() const {
  if (terms.empty()) return "0";
  std::vector<std::pair<std::vector<std::string>, int64_t>> sorted(terms.begin(), terms.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return monoLess(a.first, b.first); });
  std::string s;
  bool first = true;
  for (const auto& [k, v] : sorted) {
    // magnitude as unsigned so that INT64_MIN prints correctly
    const bool negative = v < 0;
    const uint64_t c = negative ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
    if (first) {
      if (negative) s += "-";
    } else {
      s += negative ? " - " : " + ";
    }
    first = false;
    if (k.empty()) {
      s += std::to_string(c);
      continue;
    }
    if (c != 1) s += std::to_string(c) + "*";
    for (size_t i = 0; i < k.size(); ++i) {
      if (i) s += "*";
      s += k[i];
    }
  }
  return s;
}

}  // namespace kfuse::ptx
