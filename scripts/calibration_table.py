#!/usr/bin/env python3
"""Turns the calibration.tsv that scripts/gpu_check.sh writes into a Markdown table (on stdout).

One row per plan: the cost model's predicted saving per occurrence (the plan's `prediction.saving_ns`) against the
measured one, the relative error (predicted - measured) / |measured|, and, per program and over all plans, whether
ranking the plans by predicted saving gives the same order as ranking them by measured saving.

The measured saving per occurrence is the originals' median minus the fused kernel's median from `kfuse run
--validate`'s run statistics (`timing`); where the run did not time a plan, the one `kfuse validate --backend gpu`
recorded in plan.json (per argument set). Where neither exists (no GPU: the stand-in) the row says "not timed" and
the plan takes no part in the rankings.

usage: calibration_table.py CALIBRATION_TSV
"""

import csv
import sys


def number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def us(ns):
    return "not timed" if ns is None else f"{ns / 1e3:.2f} µs"


def measured(row):
    """The measured saving per occurrence in ns and where it comes from, or (None, why)."""
    run = number(row.get("measured_saving_ns"))
    if run is not None:
        return run, "kfuse run --validate"
    validate = number(row.get("validate_saving_ns"))
    if validate is not None:
        return validate, "kfuse validate --backend gpu"
    return None, row.get("not_timed") or "not timed"


def ranking_matches(plans):
    """Whether ordering `plans` ((name, predicted, measured), all numbers) by predicted saving gives the measured
    order. Ties in the measured savings accept either order."""
    by_predicted = sorted(plans, key=lambda p: -p[1])
    return all(a[2] >= b[2] for a, b in zip(by_predicted, by_predicted[1:]))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    with open(sys.argv[1], newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))

    print("| program | plan | fusion | predicted saving / occurrence | measured saving / occurrence | relative error |"
          " measured by |")
    print("|---|---|---|---|---|---|---|")
    timed = {}  # program -> [(plan, predicted, measured)]
    for row in rows:
        predicted = number(row.get("predicted_saving_ns"))
        got, source = measured(row)
        error = "—"
        if got is not None and predicted is not None:
            error = f"{(predicted - got) / abs(got) * 100:+.0f} %" if got != 0 else "— (measured 0)"
            timed.setdefault(row["program"], []).append((row["plan"], predicted, got))
        print(f"| {row['program']} | {row['plan']} | {row.get('fusion', '')} | {us(predicted)} | {us(got)} | {error} |"
              f" {source} |")
    if not rows:
        print("| (no plans) | | | | | | |")

    print()
    if not timed:
        print("No plan was timed on a GPU, so the ranking by predicted saving cannot be compared with a measured one.")
        return
    for program, plans in timed.items():
        if len(plans) < 2:
            print(f"- {program}: one timed plan, nothing to rank.")
            continue
        verdict = "matches" if ranking_matches(plans) else "does not match"
        order = ", ".join(p[0] for p in sorted(plans, key=lambda p: -p[1]))
        print(f"- {program}: the ranking by predicted saving ({order}) {verdict} the measured ranking.")
    everything = [p for plans in timed.values() for p in plans]
    if len(everything) >= 2:
        verdict = "matches" if ranking_matches(everything) else "does not match"
        print(f"- All {len(everything)} timed plans together: the ranking by predicted saving {verdict} the measured"
              " ranking.")


if __name__ == "__main__":
    main()
