#!/usr/bin/env python3
"""Build the figures table of a tests/gpu/run.sh run from its JSON results.

Usage: summarize.py OUTDIR BATCH [REPS]

Reads OUTDIR/{cpu,direct,broker,policy}-b{1,BATCH}[-REP].json (epbroker-run --json)
and prints a Markdown table: per path and batch, p50/p99 latency, throughput, where
the graph ran (EP: nodes, device), the speed-up over the CPU EP (throughput) and the
broker's p50 against the direct registration's (medians over the repetitions).
"""
import json
import os
import statistics
import sys


def load(outdir, name):
    path = os.path.join(outdir, name + ".json")
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def placed(j):
    parts = []
    for p in j.get("assignment", []):
        devs = {f"{d['type']} {d['vendor_id']:#06x}:{d['device_id']:#06x}" for d in p["devices"]}
        lib = "plugin" if any(d.get("library_path") for d in p["devices"]) else "built-in"
        parts.append(f"{p['ep']} ({lib}): {p['nodes']} nodes on {', '.join(sorted(devs)) or '?'}")
    return "; ".join(parts)


def utilisation(outdir, b):
    try:
        with open(os.path.join(outdir, f"gpu-util-b{b}.csv")) as f:
            rows = [line.split(",") for line in f if line.count(",") == 2]
    except OSError:
        return None
    util = [int(r[1].strip().rstrip(" %")) for r in rows if r[1].strip().rstrip(" %").isdigit()]
    mem = [int(r[2].strip().split()[0]) for r in rows if r[2].strip().split()[0].isdigit()]
    if not util:
        return None
    return (f"{len(util)} samples, median {statistics.median(util)}%, max {max(util)}%; "
            f"memory used up to {max(mem) if mem else '?'} MiB")


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    outdir, big = sys.argv[1], int(sys.argv[2])
    reps = int(sys.argv[3]) if len(sys.argv) == 4 else 2
    print("| path | batch | p50 ms | p99 ms | items/s | vs CPU EP | placement |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    summary = []
    for b in (1, big):
        cpu = load(outdir, f"cpu-b{b}")
        cpu_tp = cpu["latency"]["throughput_per_s"] if cpu else None
        p50 = {}
        for path in ("cpu", "direct", "broker", "policy"):
            names = [f"{path}-b{b}"] if path in ("cpu", "policy") else [
                f"{path}-b{b}-{r}" for r in range(1, reps + 1)]
            for name in names:
                j = load(outdir, name)
                if j is None:
                    print(f"| {name} | {b} | failed (no JSON; see run.log) | | | | |")
                    continue
                lat = j["latency"]
                speed = f"{lat['throughput_per_s'] / cpu_tp:.1f}x" if cpu_tp else "?"
                note = ""
                if j.get("check"):
                    c = j["check"]
                    note = (f"; check vs CPU EP: max abs {c['max_abs']:.2e}, max rel "
                            f"{c['max_rel']:.2e}, within tolerance: {c['within_tolerance']}")
                print(f"| {name} | {b} | {lat['p50_ms']:.3f} | {lat['p99_ms']:.3f} | "
                      f"{lat['throughput_per_s']:.1f} | {speed} | {placed(j)}{note} |")
                p50.setdefault(path, []).append(lat["p50_ms"])
        if "direct" in p50 and "broker" in p50:
            d, r = statistics.median(p50["direct"]), statistics.median(p50["broker"])
            summary.append(f"batch {b}: broker p50 {r:.3f} ms vs direct {d:.3f} ms "
                           f"({100 * (r - d) / d:+.2f}%; runs direct {p50['direct']}, "
                           f"broker {p50['broker']})")
        if "broker" in p50 and "cpu" in p50:
            r = statistics.median(p50["broker"])
            summary.append(f"batch {b}: broker p50 {r:.3f} ms vs CPU EP {p50['cpu'][0]:.3f} ms "
                           f"({p50['cpu'][0] / r:.1f}x faster)")
    for b in (1, big):
        util = utilisation(outdir, b)
        if util:
            summary.append(f"batch {b}: GPU utilisation during the first brokered run "
                           f"(nvidia-smi, every 100 ms): {util}")
    print()
    for line in summary:
        print("- " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
