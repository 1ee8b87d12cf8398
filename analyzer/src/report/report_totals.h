// Totals the report writers share (JSON, text, Markdown, HTML). Private to the analyzer.
#pragma once

#include "kfuse/analyzer/analysis.h"

namespace kfuse::analyzer {

// Savings of non-blocked candidates taken greedily by rank, skipping any that shares a launch with one taken:
// what applying the recommendations together would save, without counting a launch twice.
double disjointSaving(const Report& r);

}  // namespace kfuse::analyzer
