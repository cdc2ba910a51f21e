#!/usr/bin/env python
"""Run PyTorch's OpenReg test-suite against the 'tpu' device and summarise the outcome.

OpenReg (pytorch/pytorch, test/cpp_extensions/open_registration_extension/torch_openreg)
is PyTorch's reference PrivateUse1 backend; its tests/ folder is the closest thing to a
conformance suite for out-of-tree device backends. This script takes a folder of those test
files (``--src``; the user fetches them, this script never downloads anything), writes
adapted copies to ``--out``, runs pytest on each copy in its own process, and prints a table
(file, passed, failed, errored, skipped, not applicable) with the overall pass rate and the
failure reasons grouped by their first line. ``--json PATH`` writes everything as JSON.

    python tools/openreg_suite.py --src DIR --out DIR [--json PATH] [--timeout 300]
                                  [--only test_ops.py,...] [--devices 2]

Rewrites (plain text, applied in this order to every source file, outside bytes literals;
bytes literals are left alone because they hold length-prefixed binary fixtures):
  1. ``torch_openreg`` -> ``torch_tpu``   (the backend's Python package: ``import torch_openreg``)
  2. ``OPENREG``       -> ``TPU``         (enum aliases such as ``ProfilerActivity.OPENREG``)
  3. ``OpenReg``       -> ``TPU``         (prose and error-message patterns)
  4. ``openreg``       -> ``tpu``         (device strings ``"openreg:1"``, ``torch.openreg``,
                                           ``Tensor.openreg()``/``is_openreg``, backend names
                                           such as ``torch.compile(backend="openreg")``)
Nothing else is changed: an adapted test checks the same thing as the original, with the
device called 'tpu'. OpenReg's suite assumes exactly two devices, so the tests run with
``TORCH_TPU_CPU_DEVICES=2`` (``--devices``); torch_tpu is loaded by torch's backend
autoload, as torch_openreg is for the files that do not import it.

Not applicable (reported apart, never run, not counted in the pass rate). A test is "not
applicable" when its code (comments excluded; a class's setUp/setUpClass counts as part of
each of its tests; module-level code counts for the whole file) matches one of:
  NA1 ``torch.ops.openreg.``          custom operators compiled into OpenReg's own C++
                                      extension (custom_abs, custom_autograd_fn_*): not part
                                      of the PrivateUse1 contract.
  NA2 ``torch_openreg.<attr>`` or ``from torch_openreg import``  OpenReg's own Python/C++
                                      module internals (e.g. ``torch_openreg._C``).
  NA3 ``occl``                        OpenReg's own dummy c10d collective backend.
  NA4 a bytes literal containing ``openreg``  a serialized fixture that names the openreg
                                      device inside a checksummed archive, which a textual
                                      rename cannot adapt.
A plain ``import torch_openreg`` is *not* a reason: it is rewritten to ``import torch_tpu``.

Crashes and hangs: each file runs under ``timeout``; if the process dies (signal, timeout)
the test that was running is recorded as "crashed"/"timeout" (with the last stderr lines)
and the file is run again without it, until the run completes (at most 10 tries per file).

Pass rate = passed / (passed + failed + errored + crashed), i.e. skips and not-applicable
tests are excluded.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tokenize
import xml.etree.ElementTree as ET
from collections import defaultdict

RENAMES = [
    ("torch_openreg", "torch_tpu"),
    ("OPENREG", "TPU"),
    ("OpenReg", "TPU"),
    ("openreg", "tpu"),
]

NA_RULES = [
    ("NA1", re.compile(r"torch\.ops\.openreg\."),
     "uses custom operators of OpenReg's own C++ extension (torch.ops.openreg.*)"),
    ("NA2", re.compile(r"\btorch_openreg\.\w|\bfrom\s+torch_openreg\b"),
     "uses OpenReg's own module internals (torch_openreg.<attr>)"),
    ("NA3", re.compile(r"\boccl\b"),
     "needs OpenReg's own c10d backend 'occl'"),
]
NA4_REASON = "binary fixture (bytes literal) names the openreg device; cannot be renamed textually"

MAX_TRIES = 10
PLUGIN_NAME = "_openreg_suite_plugin"

# A pytest plugin (written into --out) that deselects the not-applicable tests. Tests made by
# instantiate_device_type_tests get a device suffix on class and method names, so matching is
# by prefix: class name starts with the original class, method name equals the original or
# starts with it followed by "_".
PLUGIN_SOURCE = '''\
import json, os

_NA = json.load(open(os.path.join(os.path.dirname(__file__), "_openreg_suite_na.json")))


def _match(path, cls, name):
    for entry in _NA.get(path, []):
        if cls.startswith(entry["cls"]) and (name == entry["name"] or name.startswith(entry["name"] + "_")):
            return True
    return False


def pytest_collection_modifyitems(config, items):
    keep, drop = [], []
    for item in items:
        path = os.path.basename(str(item.fspath))
        cls = item.cls.__name__ if getattr(item, "cls", None) is not None else ""
        name = getattr(item, "originalname", None) or item.name
        (drop if _match(path, cls, name) else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
'''


def rename(text: str) -> str:
    for old, new in RENAMES:
        text = text.replace(old, new)
    return text


def _bytes_literal_spans(src: str):
    """(start, end) character offsets of every bytes literal token in ``src``."""
    line_starts = [0]
    for line in src.splitlines(keepends=True):
        line_starts.append(line_starts[-1] + len(line))
    spans = []
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.STRING:
            prefix = re.match(r"[A-Za-z]*", tok.string).group(0).lower()
            if "b" in prefix:
                start = line_starts[tok.start[0] - 1] + tok.start[1]
                end = line_starts[tok.end[0] - 1] + tok.end[1]
                spans.append((start, end))
    return spans


def adapt_source(src: str) -> str:
    """Apply RENAMES to everything except bytes literals."""
    out, pos = [], 0
    for start, end in _bytes_literal_spans(src):
        out.append(rename(src[pos:start]))
        out.append(src[start:end])
        pos = end
    out.append(rename(src[pos:]))
    return "".join(out)


def _strip_comments(code: str) -> str:
    try:
        toks = [t for t in tokenize.generate_tokens(io.StringIO(code).readline)
                if t.type != tokenize.COMMENT]
        return tokenize.untokenize(toks)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return code


def _na_reason(code: str, node: ast.AST | None = None) -> str | None:
    text = _strip_comments(code)
    for rule, pattern, reason in NA_RULES:
        if pattern.search(text):
            return f"{rule}: {reason}"
    if node is not None:
        for sub in ast.walk(node):
            if (isinstance(sub, ast.Constant) and isinstance(sub.value, bytes)
                    and b"openreg" in sub.value):
                return f"NA4: {NA4_REASON}"
    return None


def analyse(src: str):
    """Static view of one original file.

    Returns (file_reason, tests) where file_reason is a not-applicable reason for the whole
    file (or None) and tests is a list of dicts {cls, name, na} for every test method,
    with names already renamed as in the adapted copy.
    """
    tree = ast.parse(src)
    module_level = [n for n in tree.body
                    if not isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]
    file_reason = None
    for n in module_level:
        seg = ast.get_source_segment(src, n) or ""
        file_reason = _na_reason(seg, n)
        if file_reason:
            break
    tests = []
    for cls in [n for n in tree.body if isinstance(n, ast.ClassDef)]:
        methods = [m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
        setup = [m for m in methods if m.name in ("setUp", "setUpClass")]
        setup_code = "\n".join(ast.get_source_segment(src, m) or "" for m in setup)
        for m in methods:
            if not m.name.startswith("test"):
                continue
            code = (ast.get_source_segment(src, m) or "") + "\n" + setup_code
            reason = file_reason or _na_reason(code, ast.Module(body=[m] + setup, type_ignores=[]))
            tests.append({"cls": rename(cls.name), "name": rename(m.name), "na": reason})
    return file_reason, tests


# ----------------------------------------------------------------------------------------
# running

_OUTCOME_RE = re.compile(r"^(\S+::\S+)\s+(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")
_NODE_RE = re.compile(r"^(\S+\.py::\S+)")


def _in_progress(stdout: str, finished: set[str]) -> str | None:
    """The node id pytest -v printed last without an outcome (the test that was running)."""
    last = None
    for line in stdout.splitlines():
        m = _NODE_RE.match(line.strip())
        if m and m.group(1) not in finished and not _OUTCOME_RE.match(line.strip()):
            last = m.group(1)
    return last


def _first_line(text: str | None) -> str:
    for line in (text or "").splitlines():
        line = line.strip()
        if line:
            return line[:300]
    return "(no message)"


def _parse_junit(path: str, fname: str):
    results = []
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, FileNotFoundError):
        return None
    for case in root.iter("testcase"):
        cls = (case.get("classname") or "").split(".")[-1]
        name = case.get("name") or ""
        node = f"{fname}::{cls}::{name}" if cls else f"{fname}::{name}"
        outcome, message = "passed", None
        for child in case:
            if child.tag == "failure":
                outcome, message = "failed", child.get("message") or child.text
            elif child.tag == "error":
                # An error in teardown after a failure: keep the failure.
                if outcome != "failed":
                    outcome, message = "errored", child.get("message") or child.text
            elif child.tag == "skipped":
                if outcome == "passed":
                    outcome, message = "skipped", child.get("message") or child.text
        results.append({"test": node, "outcome": outcome, "reason": _first_line(message)
                        if outcome != "passed" else None})
    return results


_CRASH_LINE = re.compile(r"Fatal Python error|terminate called|what\(\):|Check failed|"
                         r"^F\d{4} |Aborted|Segmentation fault|\bSIGSEGV\b|\bSIGABRT\b")


def _crash_detail(returncode: int, output: str) -> str:
    """One line saying how the process died, with the most telling line of its output."""
    if returncode < 0:
        try:
            import signal
            how = f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            how = f"killed by signal {-returncode}"
    else:
        how = f"exit {returncode}"
    lines = [l.strip() for l in output.splitlines() if l.strip()]
    telling = [l for l in lines if _CRASH_LINE.search(l)]
    return f"process died ({how}): " + (" | ".join(telling[:2]) if telling else
                                        (lines[-1] if lines else ""))[:300]


def run_file(fname: str, out_dir: str, timeout: int, env: dict) -> list[dict]:
    """Run one adapted file; returns one result dict per test (crashes included)."""
    casualties: list[dict] = []  # tests that crashed / hung, excluded on the next try
    junit = os.path.join(out_dir, f".{fname}.junit.xml")
    for attempt in range(MAX_TRIES):
        if os.path.exists(junit):
            os.remove(junit)
        cmd = ["timeout", "-k", "10", str(timeout), sys.executable, "-m", "pytest", fname,
               "-v", "-rA", "-p", "no:cacheprovider", "-p", PLUGIN_NAME,
               f"--junitxml={junit}", "-o", "junit_family=xunit1"]
        for c in casualties:
            cmd.append(f"--deselect={c['test']}")
        t0 = time.time()
        proc = subprocess.run(cmd, cwd=out_dir, env=env, capture_output=True, text=True,
                              errors="replace")
        elapsed = time.time() - t0
        results = _parse_junit(junit, fname)
        clean = proc.returncode in (0, 1, 2, 5) and results is not None
        if clean:
            return results + casualties
        # died: find the test that was running
        finished = {m.group(1) for m in map(_OUTCOME_RE.match,
                                             (l.strip() for l in proc.stdout.splitlines())) if m}
        running = _in_progress(proc.stdout, finished)
        timed_out = proc.returncode in (124, 137) and elapsed >= timeout - 1
        kind = "timeout" if timed_out else "crashed"
        detail = (f"timeout after {timeout}s" if timed_out
                  else _crash_detail(proc.returncode, proc.stderr + "\n" + proc.stdout))
        if running is None:
            # died outside a test (import, collection, exit): report the file as one entry
            return casualties + [{"test": f"{fname}::<file>", "outcome": kind, "reason": detail}]
        casualties.append({"test": running, "outcome": kind, "reason": detail})
    return casualties + [{"test": f"{fname}::<file>", "outcome": "crashed",
                          "reason": f"gave up after {MAX_TRIES} crashed runs"}]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="folder holding the OpenReg test_*.py files")
    ap.add_argument("--out", required=True, help="folder for the adapted copies (recreated)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per pytest run")
    ap.add_argument("--only", help="comma-separated file names to run")
    ap.add_argument("--devices", default="2", help="TORCH_TPU_CPU_DEVICES for the runs")
    args = ap.parse_args(argv)

    files = sorted(f for f in os.listdir(args.src) if f.startswith("test_") and f.endswith(".py"))
    if args.only:
        wanted = {w.strip() for w in args.only.split(",")}
        files = [f for f in files if f in wanted]
    if not files:
        print(f"no test_*.py files in {args.src}", file=sys.stderr)
        return 2

    out_dir = os.path.abspath(args.out)
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    with open(os.path.join(out_dir, "pytest.ini"), "w") as f:
        f.write("[pytest]\npython_files = test_*.py\naddopts =\n")
    with open(os.path.join(out_dir, PLUGIN_NAME + ".py"), "w") as f:
        f.write(PLUGIN_SOURCE)

    na_by_file: dict[str, list] = {}
    static: dict[str, tuple] = {}
    for fname in files:
        src = open(os.path.join(args.src, fname), encoding="utf-8").read()
        file_reason, tests = analyse(src)
        static[fname] = (file_reason, tests)
        na_by_file[fname] = [{"cls": t["cls"], "name": t["name"]} for t in tests if t["na"]]
        with open(os.path.join(out_dir, fname), "w", encoding="utf-8") as f:
            f.write(adapt_source(src))
    with open(os.path.join(out_dir, "_openreg_suite_na.json"), "w") as f:
        json.dump(na_by_file, f)

    env = dict(os.environ)
    env["TORCH_TPU_CPU_DEVICES"] = str(args.devices)
    env["PYTHONPATH"] = out_dir + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("PYTORCH_TEST_WITH_DYNAMO", None)
    env["PYTHONFAULTHANDLER"] = "1"

    report = {"src": os.path.abspath(args.src), "out": out_dir, "renames": RENAMES,
              "files": {}, "tests": []}
    for fname in files:
        file_reason, tests = static[fname]
        na = [{"test": f"{fname}::{t['cls']}::{t['name']}", "outcome": "not_applicable",
               "reason": t["na"]} for t in tests if t["na"]]
        t0 = time.time()
        if file_reason:
            results = []
            print(f"[openreg_suite] {fname}: not applicable ({file_reason})", flush=True)
        else:
            print(f"[openreg_suite] {fname} ...", end=" ", flush=True)
            results = run_file(fname, out_dir, args.timeout, env)
            print(f"{time.time() - t0:.0f}s", flush=True)
        counts = defaultdict(int)
        for r in results:
            counts[r["outcome"]] += 1
        counts["not_applicable"] = len(na)
        report["files"][fname] = dict(counts, seconds=round(time.time() - t0, 1))
        report["tests"].extend(results + na)

    _print_summary(report)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
        print(f"\nJSON: {args.json}")
    return 0


def _print_summary(report: dict) -> None:
    cols = ["passed", "failed", "errored", "crashed", "timeout", "skipped", "not_applicable"]
    heads = ["pass", "fail", "error", "crash", "t/o", "skip", "n/a"]
    width = max(len(f) for f in report["files"]) + 2
    print("\n" + "file".ljust(width) + "".join(h.rjust(7) for h in heads))
    totals = defaultdict(int)
    for fname, c in report["files"].items():
        print(fname.ljust(width) + "".join(str(c.get(k, 0)).rjust(7) for k in cols))
        for k in cols:
            totals[k] += c.get(k, 0)
    print("TOTAL".ljust(width) + "".join(str(totals[k]).rjust(7) for k in cols))
    bad = totals["failed"] + totals["errored"] + totals["crashed"] + totals["timeout"]
    denom = totals["passed"] + bad
    rate = 100.0 * totals["passed"] / denom if denom else 0.0
    report["totals"] = dict(totals)
    report["pass_rate"] = round(rate, 2)
    print(f"\npass rate: {totals['passed']}/{denom} = {rate:.1f}% "
          f"(skipped {totals['skipped']} and not applicable {totals['not_applicable']} excluded)")

    groups = defaultdict(list)
    for t in report["tests"]:
        if t["outcome"] in ("failed", "errored", "crashed", "timeout"):
            groups[t["reason"]].append(t["test"])
    if groups:
        print("\nfailure reasons (first line), most frequent first:")
        for reason, tests in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            print(f"  [{len(tests)}] {reason}")
            for name in tests:
                print(f"        {name}")
    na_groups = defaultdict(list)
    for t in report["tests"]:
        if t["outcome"] == "not_applicable":
            na_groups[t["reason"]].append(t["test"])
    if na_groups:
        print("\nnot applicable:")
        for reason, tests in na_groups.items():
            print(f"  [{len(tests)}] {reason}")
            for name in tests:
                print(f"        {name}")


if __name__ == "__main__":
    sys.exit(main())
