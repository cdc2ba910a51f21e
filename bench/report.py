"""Markdown results table from a bench JSON file (for the README).

    python bench/report.py [bench/results/latest.json]
"""
import json
import sys


def fmt(x, digits=4):
    return "–" if x is None else f"{x:.{digits}f}"


def main(path):
    with open(path) as f:
        data = json.load(f)
    meta, records = data["meta"], data["records"]
    modes = [m for m in meta["modes"] if m != "cpu"]
    print(f"Measured {meta['date']} on {meta['machine']}, torch {meta['torch']}, plugin "
          f"{meta['plugin']['platform_name']} (PJRT API {meta['plugin']['pjrt_api_version']}), "
          f"command `{meta['command']}`.\n")
    label = {"inductor": "CPU torch.compile inductor ms", "compiled": "tpu torch.compile ms"}
    head = "| case | CPU eager ms | " + " | ".join(f"{label.get(m, 'tpu ' + m + ' ms')} | {m} / CPU" for m in modes) + " |"
    print(head)
    print("|" + "---|" * (2 + 2 * len(modes)))
    by = {}
    for r in records:
        by.setdefault(r["name"], {})[r["mode"]] = r
    for name, per_mode in by.items():
        cpu = per_mode.get("cpu", {}).get("median_ms")
        cells = [name, fmt(cpu)]
        for m in modes:
            rec = per_mode.get(m, {})
            t = rec.get("median_ms")
            if rec.get("error"):
                op = rec["error"].split("'")[1] if rec["error"].count("'") >= 2 else rec["error"].split(" ")[1]
                cells += [f"not yet ({op} missing)", "–"]
                continue
            extra = ""
            if "gflops" in rec:
                extra = f" ({rec['gflops']:.1f} GFLOP/s)"
            ratio = rec.get("ratio_vs_cpu") or (t / cpu if (t and cpu) else None)
            spread = f" ({rec['ratio_iqr'][0]:.2f}–{rec['ratio_iqr'][1]:.2f})" if "ratio_iqr" in rec else ""
            cells += [fmt(t) + extra, (fmt(ratio, 2) + spread) if ratio else "–"]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "bench/results/latest.json")
