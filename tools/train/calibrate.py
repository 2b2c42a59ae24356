#!/usr/bin/python3
"""calibrate.py: an archive's no-call bias, chosen on validation requests the evaluation never asks.

    /usr/bin/python3 tools/train/calibrate.py --archive build/train/needlework-tools.cact
        [--data build/train/data] [--skip 500] [--count 500] [--biases 0,0.5,1,1.5,2]
        [--build build] [--out build/train/calibration] [--jobs 2] [--reuse]

The no-call bias (docs/toolcall.md, "The no-call bias") is added to the log-odds of an empty call
list where the list opens. About one training example in five answers [] (22% of the last run's
data); one evaluation request in three does (all of split C). A model trained on the first share says
[] too seldom for the second, and a bias moves that one decision and nothing else.

The evaluation scores the first 500 requests of each held-out split; the validation requests are the
next --count of each (after --skip). For each bias of --biases, needle-run answers all of them
(`evaluate.py --engines needle-run --skip S --count N --no-call-bias B`, --jobs at a time); the bias
with the most exact matches over A, B and C together (equal counts per split, so the mean of the
three accuracies; the smallest bias on a tie) is the archive's. Writes OUT/calibration.json:

    {"archive": {path, bytes, sha256}, "skip": 500, "count": 500, "no_call_bias": 1.5,
     "by_bias": {"0": {"A": 257, "B": 107, "C": 345, "total": 709}, ...}}

and OUT/bias-B/ (each evaluation's results), and prints the table. evaluate.py takes the bias of
calibration/calibration.json beside the archive when its sha256 is the archive's (docs/evaluation.md).

With --reuse, a bias whose OUT/bias-B/results.json is already there for the same archive (sha256),
data, validation requests, bias, max tokens and span strings is read instead of evaluated again (to
widen a grid by hand; needle-run must be the build that wrote it: the file does not say which).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import evaluate  # noqa: E402

# Half steps: quarter steps between 1 and 2 moved the shipped archive's validation total by a few
# requests either way, within its noise (docs/evaluation.md, "The no-call bias").
DEFAULT_BIASES = "0,0.5,1,1.5,2"


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--archive", default="build/train/needlework-tools.cact", help="the packed archive")
    ap.add_argument("--data", default="build/train/data", help="directory with A.jsonl, B.jsonl, C.jsonl")
    ap.add_argument("--skip", type=int, default=500, help="validation starts after this many examples of "
                    "each split (default 500: the evaluation's)")
    ap.add_argument("--count", type=int, default=500, help="validation requests per split (default 500)")
    ap.add_argument("--biases", default=DEFAULT_BIASES, help=f"the biases tried (default {DEFAULT_BIASES})")
    ap.add_argument("--build", default="build", help="build directory with bin/needle-run")
    ap.add_argument("--out", default=None, help="output directory (default: calibration/ beside the archive)")
    ap.add_argument("--jobs", type=int, default=2, help="evaluations at a time (default 2; one core each)")
    ap.add_argument("--reuse", action="store_true", help="read a bias's earlier results.json in OUT when it "
                    "is for the same archive, data, requests and settings instead of evaluating it again")
    args = ap.parse_args(argv)
    try:
        args.biases = sorted({float(b) for b in args.biases.split(",") if b.strip()})
    except ValueError:
        ap.error(f"--biases: not a comma list of numbers: {args.biases!r}")
    if not args.biases:
        ap.error("--biases: give at least one bias")
    if args.skip < 0 or args.count < 1 or args.jobs < 1:
        ap.error("--skip must be at least 0, --count and --jobs at least 1")
    if args.out is None:
        args.out = os.path.dirname(evaluate.calibration_path(args.archive))
    return args


def evaluation_command(args, bias: float, out: str) -> list:
    return [sys.executable, os.path.join(HERE, "evaluate.py"), "--archive", args.archive, "--data", args.data,
            "--build", args.build, "--engines", "needle-run", "--skip", str(args.skip), "--count",
            str(args.count), "--no-call-bias", repr(bias), "--out", out]


def earlier_results(args, bias: float, out: str, archive_sha256: str) -> dict | None:
    """--reuse: OUT/bias-B/results.json when it answers this very evaluation, else None."""
    path = os.path.join(out, "results.json")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        results = json.load(f)
    wanted = {"skip": args.skip, "count_per_split": args.count, "no_call_bias": bias,
              "max_tokens": evaluate.DEFAULT_MAX_TOKENS, "span_strings": True,
              "data": os.path.abspath(args.data)}
    if results.get("archive", {}).get("sha256") != archive_sha256 or "needle-run" not in results.get("exact_match", {}):
        return None
    return results if all(results.get(k) == v for k, v in wanted.items()) else None


def exact_by_split(results: dict) -> dict:
    figures = results["exact_match"]["needle-run"]
    row = {s: figures[s]["exact"]["count"] for s in evaluate.SPLITS}
    row["total"] = sum(row.values())
    return row


def main(argv=None) -> int:
    args = parse_args(argv)
    if not os.path.exists(args.archive):
        raise SystemExit(f"--archive {args.archive} does not exist")
    os.makedirs(args.out, exist_ok=True)
    archive = evaluate.file_facts(args.archive)
    pending, running, by_bias = [], [], {}
    for bias in args.biases:
        earlier = earlier_results(args, bias, os.path.join(args.out, f"bias-{bias:g}"), archive["sha256"]) \
            if args.reuse else None
        if earlier:
            by_bias[bias] = exact_by_split(earlier)
            print(f"calibrate: bias {bias:g}: the earlier evaluation in {args.out}")
        else:
            pending.append(bias)
    while pending or running:
        while pending and len(running) < args.jobs:
            bias = pending.pop(0)
            out = os.path.join(args.out, f"bias-{bias:g}")
            log = open(out + ".log", "w", encoding="utf-8")
            running.append((bias, out, log, subprocess.Popen(evaluation_command(args, bias, out), stdout=log,
                                                             stderr=subprocess.STDOUT)))
        bias, out, log, process = running.pop(0)
        status = process.wait()
        log.close()
        if status != 0:
            for _b, _o, other_log, other in running:  # a failure leaves nothing running
                other.kill()
                other.wait()
                other_log.close()
            raise SystemExit(f"calibrate: the evaluation at bias {bias:g} failed (status {status}); see {out}.log")
        with open(os.path.join(out, "results.json"), encoding="utf-8") as f:
            by_bias[bias] = exact_by_split(json.load(f))
    best = max(args.biases, key=lambda b: (by_bias[b]["total"], -b))
    calibration = {"archive": archive, "skip": args.skip, "count": args.count,
                   "no_call_bias": best, "by_bias": {f"{b:g}": by_bias[b] for b in args.biases}}
    path = os.path.join(args.out, "calibration.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(calibration, f, indent=1)
        f.write("\n")
    print(f"validation: examples {args.skip + 1}..{args.skip + args.count} of each split, needle-run")
    print("bias        A      B      C   total")
    for b in args.biases:
        row = by_bias[b]
        print(f"{b:>4g}  " + "".join(f"{row[s]:>7}" for s in evaluate.SPLITS) + f"{row['total']:>8}"
              + ("   <- chosen" if b == best else ""))
    print(f"calibrate: no-call bias {best:g}; wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
