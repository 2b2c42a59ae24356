#!/usr/bin/python3
"""calibrate.py: an archive's no-call bias and doubt, chosen on validation requests the evaluation
never asks.

    /usr/bin/python3 tools/train/calibrate.py --archive build/train/needlework-tools.cact
        [--data build/train/data] [--skip 500] [--count 500] [--biases 0,0.5,1,1.5,2]
        [--doubts 0.5,1,1.5,2,2.5,3,4] [--named 2,4,6,8] [--build build] [--out build/train/calibration]
        [--jobs 2] [--reuse]

The no-call bias (docs/toolcall.md, "The no-call bias") is added to the log-odds of an empty call
list where the list opens. About one training example in five answers [] (22% of the last run's
data); one evaluation request in three does (all of split C). A model trained on the first share says
[] too seldom for the second, and a bias moves that one decision and nothing else.

The evaluation scores the first 500 requests of each held-out split; the validation requests are the
next --count of each (after --skip). For each bias of --biases, needle-run answers all of them
(`evaluate.py --engines needle-run --skip S --count N --no-call-bias B`, --jobs at a time); the bias
with the most exact matches over A, B and C together (equal counts per split, so the mean of the
three accuracies; the smallest bias on a tie) is the archive's.

The no-call doubt (the weight of a drawn call's doubt in the same decision: its calls are withdrawn
when margin + bias + doubt weight x doubt > 0) is chosen from one more evaluation, at bias -100
(OUT/forced/): every request gets its call, and its envelope gives the decision's margin and the
call's doubt. With greedy decoding the call drawn after the decision does not depend on the bias, so
each (bias, weight) of --biases x --doubts is worked out from those envelopes instead of asked
again; the same working at weight 0 must give every bias's evaluated counts, or calibrate.py stops
(the check that the working is the session's). A pair with a weight is chosen over the best bias
alone only when its total is higher (the smallest weight, then the smallest bias, on a tie); --doubts
"" leaves the doubt out.

The named credit (no_call_named: subtracted in that sum when the request names every called tool,
the envelope's calls_named; the list opens unless margin + bias - credit > 0) is worked out from the
same forced calls, for each credit of --named with every weight (0 and --doubts) and bias, and chosen
with them the same way (the smallest credit first on a tie); --named "" leaves it out.

The named steer (steer_named: the first call's name is the one offered tool the request names) changes
the calls the model writes, not the decision's margin, so it takes one more evaluation with the calls
forced, with the steer (OUT/forced-steered/), from which every credit (0 too), weight and bias is
worked out as above; the steer is chosen when its best beats the best without it (--no-steer leaves
it out). Writes OUT/calibration.json:

    {"archive": {path, bytes, sha256}, "skip": 500, "count": 500, "no_call_bias": 1, "no_call_doubt": 1,
     "no_call_named": 6, "steer_named": true,
     "by_bias": {"0": {"A": 257, "B": 107, "C": 345, "total": 709}, ...},
     "by_doubt": {"0.5": {"0": {"A": ..., "total": ...}, ...}, ...},
     "by_named": {"6": {"0": {"0": {"A": ..., "total": ...}, ...}, ...}, ...},
     "by_steered": {"0": {"0": {"0": {"A": ..., "total": ...}, ...}, ...}, ...}}

and OUT/bias-B/, OUT/forced/ and OUT/forced-steered/ (each evaluation's results), and prints the
table. evaluate.py takes the bias, doubt, credit and steer of calibration/calibration.json beside the
archive when its sha256 is the archive's (docs/evaluation.md).

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
DEFAULT_DOUBTS = "0.5,1,1.5,2,2.5,3,4"
DEFAULT_NAMED = "2,4,6,8"
FORCED_BIAS = -100.0  # every request gets its call (the session's limit)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--archive", default="build/train/needlework-tools.cact", help="the packed archive")
    ap.add_argument("--data", default="build/train/data", help="directory with A.jsonl, B.jsonl, C.jsonl")
    ap.add_argument("--skip", type=int, default=500, help="validation starts after this many examples of "
                    "each split (default 500: the evaluation's)")
    ap.add_argument("--count", type=int, default=500, help="validation requests per split (default 500)")
    ap.add_argument("--biases", default=DEFAULT_BIASES, help=f"the biases tried (default {DEFAULT_BIASES})")
    ap.add_argument("--doubts", default=DEFAULT_DOUBTS, help="the no-call doubt weights tried with each bias, "
                    f"worked out from one evaluation at bias -100 (default {DEFAULT_DOUBTS}; \"\": none)")
    ap.add_argument("--named", default=DEFAULT_NAMED, help="the named credits tried with each weight and bias, "
                    f"worked out from the same evaluation (default {DEFAULT_NAMED}; \"\": none)")
    ap.add_argument("--no-steer", dest="steer", action="store_false", help="leave the named steer out (one "
                    "evaluation fewer: the calls forced with steer_named)")
    ap.add_argument("--build", default="build", help="build directory with bin/needle-run")
    ap.add_argument("--out", default=None, help="output directory (default: calibration/ beside the archive)")
    ap.add_argument("--jobs", type=int, default=2, help="evaluations at a time (default 2; one core each)")
    ap.add_argument("--reuse", action="store_true", help="read a bias's earlier results.json in OUT when it "
                    "is for the same archive, data, requests and settings instead of evaluating it again")
    args = ap.parse_args(argv)

    def numbers(flag: str, text: str, low: float | None = None, what: str = "") -> list:
        """A flag's comma list as sorted distinct numbers; with `low`, each above it and at most 100."""
        try:
            values = sorted({float(x) for x in text.split(",") if x.strip()})
        except ValueError:
            ap.error(f"{flag}: not a comma list of numbers: {text!r}")
        if low is not None and any(not low < x <= 100 for x in values):
            ap.error(f"{flag}: each {what} must be above {low:g} and at most 100")
        return values

    args.biases = numbers("--biases", args.biases)
    if not args.biases:
        ap.error("--biases: give at least one bias")
    args.doubts = numbers("--doubts", args.doubts, 0, "weight")
    args.named = numbers("--named", args.named, 0, "credit")
    if args.skip < 0 or args.count < 1 or args.jobs < 1:
        ap.error("--skip must be at least 0, --count and --jobs at least 1")
    if args.out is None:
        args.out = os.path.dirname(evaluate.calibration_path(args.archive))
    return args


def evaluation_command(args, bias: float, out: str, steer: bool = False) -> list:
    return [sys.executable, os.path.join(HERE, "evaluate.py"), "--archive", args.archive, "--data", args.data,
            "--build", args.build, "--engines", "needle-run", "--skip", str(args.skip), "--count",
            str(args.count), "--no-call-bias", repr(bias), "--out", out] + (["--steer-named"] if steer else [])


def earlier_results(args, bias: float, out: str, archive_sha256: str, steer: bool = False) -> dict | None:
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
    if results.get("steer_named", False) is not steer:
        return None
    return results if all(results.get(k) == v for k, v in wanted.items()) else None


def exact_by_split(results: dict) -> dict:
    figures = results["exact_match"]["needle-run"]
    row = {s: figures[s]["exact"]["count"] for s in evaluate.SPLITS}
    row["total"] = sum(row.values())
    return row


def forced_rows(args, out: str) -> list:
    """(split, gold, margin, doubt, calls, named) per validation request from the evaluation at bias -100 in
    OUT (the envelopes of evaluate.py, in its order: the splits, then the requests)."""
    golds = []
    for split in evaluate.SPLITS:
        golds += [(split, gold) for _ex, gold in
                  evaluate.load_split(os.path.join(args.data, f"{split}.jsonl"), args.count, args.skip)]
    with open(os.path.join(out, "envelopes-needle-run.jsonl"), encoding="utf-8") as f:
        envelopes = [evaluate.parse_exact(line) for line in f if line.strip()]
    if len(envelopes) != len(golds):
        raise SystemExit(f"calibrate: {out} holds {len(envelopes)} envelopes for {len(golds)} requests")
    return [(split, gold, e.get("no_call_margin"), e.get("call_doubt"), e["function_calls"], e.get("calls_named"))
            for (split, gold), e in zip(golds, envelopes)]


def worked_out(rows: list, bias: float, doubt: float, named: float = 0.0) -> dict:
    """The exact matches per split of asking with (bias, doubt, named), worked out from the forced calls
    as the session decides (docs/toolcall.md §8.4): the list is empty when margin + bias - named > 0,
    and the calls are withdrawn when margin + bias + doubt x the call's doubt - named x [the request
    names them] > 0; a reply with no decision (no margin) stands. (The session subtracts the credit
    where the list opens only when the request names an offered tool; where it names none, its calls
    are unnamed and withdrawn by the second rule whenever the first would close the list, so the
    outcome is the same.)"""
    row = {s: 0 for s in evaluate.SPLITS}
    for split, gold, margin, call_doubt, calls, calls_named in rows:
        if margin is not None:
            margin = float(margin)
            credit = named if calls_named else 0.0
            if margin + bias - named > 0:
                calls = []
            elif (doubt or named) and calls and margin + bias + doubt * float(call_doubt or 0) - credit > 0:
                calls = []
        row[split] += evaluate.exact_match(calls, gold)
    row["total"] = sum(row[s] for s in evaluate.SPLITS)
    return row


def run_evaluations(args, settings: list, archive: dict) -> dict:
    """settings: [(bias, OUT subdirectory, named steer)]; evaluates each (--jobs at a time, or reads it
    with --reuse); returns subdirectory -> its results.json."""
    pending, running, done = [], [], {}
    for bias, name, steer in settings:
        out = os.path.join(args.out, name)
        earlier = earlier_results(args, bias, out, archive["sha256"], steer) if args.reuse else None
        if earlier:
            done[name] = earlier
            print(f"calibrate: bias {bias:g}{' steered' if steer else ''}: the earlier evaluation in {out}")
        else:
            pending.append((bias, name, steer))
    while pending or running:
        while pending and len(running) < args.jobs:
            bias, name, steer = pending.pop(0)
            out = os.path.join(args.out, name)
            log = open(out + ".log", "w", encoding="utf-8")
            running.append((bias, name, log, subprocess.Popen(evaluation_command(args, bias, out, steer), stdout=log,
                                                              stderr=subprocess.STDOUT)))
        bias, name, log, process = running.pop(0)
        status = process.wait()
        log.close()
        if status != 0:
            for _b, _n, other_log, other in running:  # a failure leaves nothing running
                other.kill()
                other.wait()
                other_log.close()
            raise SystemExit(f"calibrate: the evaluation at bias {bias:g} failed (status {status}); "
                             f"see {os.path.join(args.out, name)}.log")
        with open(os.path.join(args.out, name, "results.json"), encoding="utf-8") as f:
            done[name] = json.load(f)
    return done


def main(argv=None) -> int:
    args = parse_args(argv)
    if not os.path.exists(args.archive):
        raise SystemExit(f"--archive {args.archive} does not exist")
    os.makedirs(args.out, exist_ok=True)
    archive = evaluate.file_facts(args.archive)
    settings = [(bias, f"bias-{bias:g}", False) for bias in args.biases]
    if args.doubts or args.named:
        settings.append((FORCED_BIAS, "forced", False))
    if args.steer:
        settings.append((FORCED_BIAS, "forced-steered", True))
    results = run_evaluations(args, settings, archive)
    by_bias = {bias: exact_by_split(results[f"bias-{bias:g}"]) for bias in args.biases}
    # (named steer, credit, weight, bias) -> counts; the smaller of each, the steer off, on a tie
    grid = {(False, 0.0, 0.0, b): by_bias[b] for b in args.biases}
    weights = [0.0] + args.doubts
    by_doubt, by_named, by_steered = {}, {}, {}
    if args.doubts or args.named:
        rows = forced_rows(args, os.path.join(args.out, "forced"))
        for bias in args.biases:
            if worked_out(rows, bias, 0.0) != by_bias[bias]:
                raise SystemExit(f"calibrate: the forced calls work out to {worked_out(rows, bias, 0.0)} at bias "
                                 f"{bias:g}, but its evaluation gave {by_bias[bias]}: the working is not the "
                                 "session's, so no doubt or credit is chosen from it")
        by_doubt = {w: {b: worked_out(rows, b, w) for b in args.biases} for w in args.doubts}
        by_named = {v: {w: {b: worked_out(rows, b, w, v) for b in args.biases} for w in weights} for v in args.named}
        grid.update({(False, 0.0, w, b): by_doubt[w][b] for w in args.doubts for b in args.biases})
        grid.update({(False, v, w, b): by_named[v][w][b] for v in args.named for w in weights for b in args.biases})
    if args.steer:
        # The steer changes the calls, not the decision's margin: its own forced calls, every credit
        # (0 too), weight and bias worked out from them.
        rows = forced_rows(args, os.path.join(args.out, "forced-steered"))
        by_steered = {v: {w: {b: worked_out(rows, b, w, v) for b in args.biases} for w in weights}
                      for v in [0.0] + args.named}
        grid.update({(True, v, w, b): by_steered[v][w][b] for v in by_steered for w in weights for b in args.biases})
    top = max(grid, key=lambda k: (grid[k]["total"], not k[0], -k[1], -k[2], -k[3]))
    chosen = (top[3], top[2], top[1], top[0])  # bias, doubt weight, named credit, named steer

    def keyed(table: dict, depth: int) -> dict:
        """Number keys as JSON strings, `depth` levels down (the counts below them as they are)."""
        return {f"{k:g}": keyed(v, depth - 1) if depth > 1 else v for k, v in table.items()}

    calibration = {"archive": archive, "skip": args.skip, "count": args.count,
                   "no_call_bias": chosen[0], "no_call_doubt": chosen[1], "no_call_named": chosen[2],
                   "steer_named": chosen[3],
                   "by_bias": keyed(by_bias, 1), "by_doubt": keyed(by_doubt, 2), "by_named": keyed(by_named, 3),
                   "by_steered": keyed(by_steered, 3)}
    path = os.path.join(args.out, "calibration.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(calibration, f, indent=1)
        f.write("\n")
    print(f"validation: examples {args.skip + 1}..{args.skip + args.count} of each split, needle-run")
    print("steer  named  doubt  bias        A      B      C   total")
    for (steer, v, w, b), row in sorted(grid.items()):
        print(f"{'on' if steer else 'off':>5}  {v:>5g}  {w:>5g}  {b:>4g}  " + "".join(f"{row[s]:>7}" for s in evaluate.SPLITS)
              + f"{row['total']:>8}" + ("   <- chosen" if (b, w, v, steer) == chosen else ""))
    if args.doubts or args.named or args.steer:
        print("(steer off, named 0, doubt 0: evaluated; the others worked out from the forced calls, which give "
              "every such row again)")
    print(f"calibrate: no-call bias {chosen[0]:g}, doubt {chosen[1]:g}, named credit {chosen[2]:g}, named steer "
          f"{'on' if chosen[3] else 'off'}; wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
