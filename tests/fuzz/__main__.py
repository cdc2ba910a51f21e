"""make fuzz: python -m fuzz [--n N] [--start S] [--modes strict,debug,defer,compiled] [--show K]

Runs seeds S..S+N-1 in each mode and prints, per mode, how many programs
differ from CPU, and the first K of them minimised to standalone repros.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fuzz import programs  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=5000)
    p.add_argument("--start", type=int, default=100_000, help="first seed (CI runs seeds below 100)")
    p.add_argument("--modes", default=",".join(programs.MODES))
    p.add_argument("--show", type=int, default=3, help="minimised repros printed per mode")
    args = p.parse_args()
    import torch_tpu  # noqa: F401
    summary = {}
    for mode in args.modes.split(","):
        t0, bad, shown, excused = time.time(), [], 0, {}
        for seed in range(args.start, args.start + args.n):
            prog = programs.draw(seed)
            m = programs.run(prog, mode)
            if m is None:
                continue
            if m.excused:  # checked up to an excused difference (programs.Mismatch)
                excused[m.excused] = excused.get(m.excused, 0) + 1
                continue
            bad.append(m)
            print(f"[{mode}] MISMATCH seed {seed} step {m.step}: {m.what.splitlines()[0][:200]}", flush=True)
            if shown < args.show:
                print(programs.report(prog, m), "\n", flush=True)
                shown += 1
        summary[mode] = (len(bad), time.time() - t0)
        print(f"[{mode}] {len(bad)} of {args.n} programs differ from CPU ({time.time() - t0:.0f} s); "
              f"checked only up to an excused difference: {excused or 'none'}", flush=True)
    print("\nsummary (seeds %d..%d):" % (args.start, args.start + args.n - 1))
    for mode, (n_bad, secs) in summary.items():
        print(f"  {mode:9s} {n_bad:5d} mismatches of {args.n}  ({secs:.0f} s)")
    sys.exit(1 if any(n for n, _ in summary.values()) else 0)


if __name__ == "__main__":
    main()
