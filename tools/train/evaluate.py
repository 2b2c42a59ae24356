#!/usr/bin/python3
"""evaluate.py: exact-match accuracy of our trained model on the held-out splits, in every engine.

    /usr/bin/python3 tools/train/evaluate.py [--archive build/train/needlework-tools.cact]
        [--checkpoint build/train/checkpoint.pt] [--tokenizer build/train/tokenizer/tokenizer.model]
        [--data build/train/data] [--build build] [--out build/eval] [--count 500] [--skip 0]
        [--engines float,needle-run,wasm[,needle-run-f32,float-nosink]] [--max-tokens 256]
        [--no-call-bias B] [--no-span-strings]

For each split (A, B, C: the first --count examples of DATA/{split}.jsonl after the first --skip)
every example becomes the tool-call session's request (its tools, query and system turn; greedy,
constrained, --max-tokens, --no-call-bias when it is not 0, and span strings unless
--no-span-strings: our data's free string values are all spans of the request, docs/toolcall.md
§8.5), and every engine answers all of them
through the one C++ session (docs/toolcall.md):

    float           the checkpoint's float weights (decode.py) in the session of libneedle_toolcall.so
    needle-run      `needle-run --batch` on the archive: A8 activations, int8 KV (the engine's numerics)
    wasm            `node tools/needle-wasm.mjs --batch` on the archive: the wasm engine
    needle-run-f32  `needle-run --batch --act f32 --kv f32`: the packed weights in exact f32 math
    float-nosink    the float model with no pinned positions (the window only, as in training; the
                    engines pin the tools block): what pinning does to a model trained without it
    float-unconstrained  the float model with "constrain": false (no masks, no forced fragments; the
                    reply read back the same way): the model's own answers, without the call grammar

needle-run and wasm run side by side (one core each), then float (and needle-run-f32 beside it).
A request is an exact match when the envelope's function_calls equal the gold calls: the same
number of calls in the same order, the same names, argument objects equal as parsed JSON (key order
ignored, strings exact, numbers by value, true/false never equal to numbers). The engines agree on a
request when needle-run's and wasm's function_calls are identical (and, separately, their reply_ids).

Writes OUT/results.json (figures, timings, the archive's size and sha256, and every request that some
engine got wrong or on which the engines disagree, with the gold and each output), OUT/mismatches.md
(failures by family, then the first ones in full), and the envelopes and logs of each engine. Prints
a table. docs/evaluation.md describes all of it.

    evaluate.py --write-fixture tests/fixtures/heldout-10.jsonl [--ids A-000001,B-000002,...]

writes the given examples (by default the ten results.json suggests: 4 of A, 3 of B, 3 of C that
every engine got right, from different families) as the fixture of tests/node/shipped-model.test.mjs,
one line each: id, split, family, the request, the gold calls.
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as train.py: no spinning OpenMP threads on a shared machine

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from decimal import Decimal  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

SPLITS = ("A", "B", "C")
ENGINES = ("float", "needle-run", "wasm", "needle-run-f32", "float-nosink", "float-unconstrained")
DEFAULT_ENGINES = ("float", "needle-run", "wasm")
# The bar on the shipped archive, in both engines (needle-run and wasm).
TARGETS = {"A": 0.95, "B": 0.80, "C": 0.95}
AGREEMENT_TARGET = 0.99
SHOWN_IN_FULL = 40  # mismatches.md: failures shown in full
DEFAULT_MAX_TOKENS = 256  # reply tokens per request, as the page's default
MODELS_JSON = os.path.join(ROOT, "site", "models.json")  # the page's models and how it asks them


# ---------------------------------------------------------------------------------------------
# Requests, gold calls, exact match
# ---------------------------------------------------------------------------------------------

def parse_exact(text: str):
    """JSON with every number as a Decimal of its literal (so numbers compare by value, exactly)."""
    return json.loads(text, parse_float=Decimal, parse_int=Decimal)


def load_split(path: str, count: int, skip: int = 0) -> list:
    """`count` examples of a split after its first `skip`: [(example, gold calls parsed exactly)]."""
    if not os.path.exists(path):
        raise SystemExit(f"{path} is missing: make the data (tools/train/data.py, or npm run train)")
    out = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if len(out) == count:
                break
            if not line.strip() or number <= skip:
                continue
            try:
                out.append((json.loads(line), parse_exact(line)["calls"]))
            except (json.JSONDecodeError, KeyError) as e:
                raise SystemExit(f"{path} line {number}: not an example ({e})") from None
    return out


def calibration_path(archive: str) -> str:
    """Where calibrate.py writes an archive's calibration: calibration/calibration.json beside it."""
    return os.path.join(os.path.dirname(os.path.abspath(archive)), "calibration", "calibration.json")


def calibrated_decision(archive: str, models_json: str = MODELS_JSON) -> tuple[float, float, float, bool, str]:
    """The no-call bias, doubt and named credit and the named steer calibrate.py chose for this
    archive (calibration_path, when its sha256 is the archive's), else the ones the page asks a model
    of the archive's sha256 with (site/models.json: the shipped archive, whose calibration stays in
    build/), and where they came from; (0, 0, 0, False, "none") when neither knows the archive."""
    sha256 = file_facts(archive)["sha256"]
    path = calibration_path(archive)

    def decision(entry: dict, source: str) -> tuple[float, float, float, bool, str]:
        return (float(entry.get("no_call_bias", 0.0)), float(entry.get("no_call_doubt", 0.0)),
                float(entry.get("no_call_named", 0.0)), entry.get("steer_named") is True, source)

    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            calibration = json.load(f)
        if calibration.get("archive", {}).get("sha256") == sha256:
            return decision(calibration, os.path.relpath(path))
        say(f"{path} is another archive's calibration")
    if os.path.exists(models_json):
        with open(models_json, encoding="utf-8") as f:
            for model in json.load(f):
                if model.get("sha256") == sha256:
                    return decision(model, os.path.relpath(models_json))
    return 0.0, 0.0, 0.0, False, "none"


def request_of(example: dict, max_tokens: int, no_call_bias: float = 0.0, span_strings: bool = False,
               no_call_doubt: float = 0.0, no_call_named: float = 0.0, steer_named: bool = False) -> dict:
    """The session's request JSON (docs/toolcall.md §9) for an example: greedy and constrained, with
    the no-call bias, doubt and named credit (§8.4) when they are not 0, and the named steer (§8.4)
    and span strings (§8.5) when asked."""
    request = {"tools": example["tools"], "request": example["query"], "max_tokens": max_tokens}
    if example.get("system"):
        request["system"] = example["system"]
    if no_call_bias:
        request["no_call_bias"] = no_call_bias
    if no_call_doubt:
        request["no_call_doubt"] = no_call_doubt
    if no_call_named:
        request["no_call_named"] = no_call_named
    if steer_named:
        request["steer_named"] = True
    if span_strings:
        request["span_strings"] = True
    return request


def same_value(a, b) -> bool:
    """JSON values equal: objects by members (any order), arrays in order, strings exactly, numbers
    by value (Decimals), booleans only to booleans."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, Decimal) or isinstance(b, Decimal):
        return isinstance(a, Decimal) and isinstance(b, Decimal) and a == b
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys() and \
            all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and \
            all(same_value(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b  # strings, null


def exact_match(calls, gold) -> bool:
    """The same calls in the same order: names equal, arguments equal as JSON (same_value)."""
    return isinstance(calls, list) and len(calls) == len(gold) and all(
        isinstance(c, dict) and c.keys() == {"name", "arguments"} and same_value(c["name"], g["name"])
        and same_value(c["arguments"], g["arguments"]) for c, g in zip(calls, gold))


# What went wrong in a reply that is not an exact match, from the first difference a reader would
# look for: the call-or-[] decision, then the tools called, then the argument keys, then the values.
ERROR_KINDS = ("no reply", "a call where no tool fits", "no call", "other tools",
               "the tools, other argument keys", "the tools and keys, other values")


def error_kind(calls, gold) -> str | None:
    """None for an exact match, else the first of ERROR_KINDS that describes the reply `calls` (the
    envelope's function_calls; None when there is no valid reply) against `gold`."""
    if exact_match(calls, gold):
        return None
    if not isinstance(calls, list):
        return "no reply"
    if not gold:
        return "a call where no tool fits"
    if not calls:
        return "no call"
    if [c.get("name") for c in calls] != [g["name"] for g in gold]:
        return "other tools"
    if any(set(c.get("arguments", {})) != set(g["arguments"]) for c, g in zip(calls, gold)):
        return "the tools, other argument keys"
    return "the tools and keys, other values"


def error_kinds(items: list, outputs: dict) -> dict:
    """engine -> split -> {kind: count} over the wrong replies (error_kind)."""
    out = {}
    for engine, envelopes in outputs.items():
        per = {}
        for (split, _ex, gold), e in zip(items, envelopes):
            kind = error_kind(e["function_calls"], gold)
            if kind:
                per.setdefault(split, Counter())[kind] += 1
        out[engine] = {split: dict(sorted(c.items(), key=lambda kv: ERROR_KINDS.index(kv[0])))
                       for split, c in per.items()}
    return out


# Whether a request names the tools it needs: every gold tool's name shares a word with the request
# (identifier words split at every non-letter and at camelCase, compared in lower case without a final "s", three
# letters or more: "Look for hotels in Warsaw" names hotels.find; "Where is my parcel?" does not
# name track_package). Split B's families are unseen, so a model that reads the tools should get the
# requests that name them right first (docs/evaluation.md, "Metrics").
_NAME_WORD = re.compile(r"[A-Za-z]{3,}")


def name_words(text: str) -> set:
    """The words of `text` as names_its_tools compares them."""
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    return {w.lower().removesuffix("s") for w in _NAME_WORD.findall(text)}


def names_its_tools(query: str, gold) -> bool | None:
    """True when every tool of `gold` shares a word with `query`; None for a `[]` gold."""
    if not gold:
        return None
    words = name_words(query)
    return all(name_words(call["name"]) & words for call in gold)


def by_naming(items: list, outputs: dict) -> dict:
    """engine -> split -> {"named": share, "not named": share} of exact matches, for the splits
    whose gold calls a tool (names_its_tools)."""
    out = {}
    for engine, envelopes in outputs.items():
        per = {}
        for (split, ex, gold), e in zip(items, envelopes):
            named = names_its_tools(ex["query"], gold)
            if named is None:
                continue
            cell = per.setdefault(split, {"named": [0, 0], "not named": [0, 0]})["named" if named else "not named"]
            cell[0] += exact_match(e["function_calls"], gold)
            cell[1] += 1
        out[engine] = {split: {k: share(*v) for k, v in cells.items()} for split, cells in per.items()}
    return out


# ---------------------------------------------------------------------------------------------
# The engines
# ---------------------------------------------------------------------------------------------

def engine_command(engine: str, args, requests_path: str) -> list:
    """The command line of a batch engine."""
    if engine.startswith("needle-run"):
        cmd = [os.path.join(args.build, "bin", "needle-run"), "--archive", args.archive, "--batch", requests_path]
        return cmd + (["--act", "f32", "--kv", "f32"] if engine == "needle-run-f32" else [])
    return ["node", os.path.join(ROOT, "tools", "needle-wasm.mjs"), "--archive", args.archive, "--batch",
            requests_path, "--threads", "1", "--wasm", os.path.join(args.build, "engine.wasm"),
            "--toolcall", os.path.join(args.build, "toolcall.mjs")]


def start_batch(engine: str, args, requests_path: str) -> dict:
    """Starts a batch engine writing OUT/envelopes-ENGINE.jsonl and OUT/ENGINE.log."""
    cmd = engine_command(engine, args, requests_path)
    if not os.path.exists(cmd[0]) and cmd[0] != "node":
        raise SystemExit(f"{cmd[0]} is missing: build it (scripts/eval.sh builds what it needs)")
    out = open(os.path.join(args.out, f"envelopes-{engine}.jsonl"), "w", encoding="utf-8")
    log = open(os.path.join(args.out, f"{engine}.log"), "w", encoding="utf-8")
    say(f"{engine}: {' '.join(cmd)}")
    process = subprocess.Popen(cmd, stdout=out, stderr=log, cwd=ROOT)
    return {"engine": engine, "cmd": cmd, "process": process, "files": (out, log), "start": time.perf_counter()}


def finish_batch(job: dict, count: int) -> tuple[list, float]:
    """Waits for a batch engine; returns its envelopes (one per request) and wall time."""
    rc = job["process"].wait()
    wall = time.perf_counter() - job["start"]
    for f in job["files"]:
        f.close()
    engine = job["engine"]
    path = job["files"][0].name
    with open(path, encoding="utf-8") as f:
        envelopes = [parse_exact(line) for line in f if line.strip()]
    # Exit 1 means some request was refused (its error envelope is in the output); anything else
    # that is not 0, or a missing envelope, is a failure of the run.
    if rc not in (0, 1) or len(envelopes) != count:
        log = job["files"][1].name
        with open(log, encoding="utf-8", errors="replace") as f:
            tail = f.read()[-2000:]
        raise SystemExit(f"{engine} exited with status {rc} after {len(envelopes)} of {count} envelopes; "
                         f"the end of {log}:\n{tail}")
    say(f"{engine}: {count} requests in {wall:.1f} s")
    return envelopes, wall


def run_float(args, requests: list, threads: int, engine: str = "float") -> tuple[list, float, list]:
    """The checkpoint's float weights (decode.py) as the backend of libneedle_toolcall.so's session
    (engine float-nosink: with no pinned positions; float-unconstrained: "constrain": false). Also
    returns the prompt ids each request fed (the session's first feed after its reset)."""
    import torch
    import decode
    import export
    torch.set_num_threads(threads)
    net = export.load_model(args.checkpoint)
    check_geometry(net.g, args.archive)
    session = decode.DecodeSession(net, "float")
    library = os.path.join(args.build, "lib", "libneedle_toolcall.so")
    envelopes, prompts = [], []
    start = time.perf_counter()
    path = os.path.join(args.out, f"envelopes-{engine}.jsonl")
    with decode.ToolcallModel(library, decode.archive_tokenizer_blob(args.archive), net.g) as model, \
            open(path, "w", encoding="utf-8") as out:
        for k, request in enumerate(requests, 1):
            if engine == "float-unconstrained":
                request = dict(request, constrain=False)
            _status, envelope = model.complete(request, session, pin=engine != "float-nosink")
            line = json.dumps(envelope, ensure_ascii=False)
            out.write(line + "\n")
            envelopes.append(parse_exact(line))
            prompts.append(session.tokens[:envelope["prompt_tokens"]].tolist())
            if k % 100 == 0 or k == len(requests):
                say(f"{engine}: {k}/{len(requests)} requests, {time.perf_counter() - start:.0f} s")
    return envelopes, time.perf_counter() - start, prompts


def check_geometry(g, archive: str) -> None:
    """The archive's header fields equal the checkpoint's geometry (the archive was packed from it)."""
    import cact
    header = cact.read(archive).header
    for field in ("vocab", "d_model", "num_heads", "num_kv_heads", "num_layers", "head_dim", "max_seq_len",
                  "hada_n", "engram_slots", "engram_sub_dim", "num_engram_tables", "engram_orders",
                  "engram_sites", "kv_window"):
        if header[field] != getattr(g, field):
            raise SystemExit(f"{archive}: header field {field} is {header[field]}, the checkpoint's geometry "
                             f"has {getattr(g, field)}: the archive was not packed from this checkpoint")


# ---------------------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------------------

def timing_of(envelopes: list, wall: float) -> dict:
    """Wall time and the envelopes' own figures (means over the requests)."""
    n = len(envelopes)

    def mean(key):
        return round(float(sum(float(e[key]) for e in envelopes) / n), 3) if n else 0.0
    return {"wall_s": round(wall, 1), "requests_per_s": round(n / wall, 3) if wall else None,
            "mean_prompt_tokens": mean("prompt_tokens"), "mean_generated_tokens": mean("generated_tokens"),
            "mean_forced_tokens": mean("forced_tokens"), "mean_prefill_tps": mean("prefill_tps"),
            "mean_decode_tps": mean("decode_tps"), "mean_time_to_first_token_ms": mean("time_to_first_token_ms"),
            "mean_constraint_ms": mean("constraint_ms")}


def share(k: int, n: int) -> dict:
    return {"count": k, "total": n, "share": round(k / n, 4) if n else None}


def identical(a, b) -> bool:
    """The same JSON, byte for byte (both engines read replies with the same parser)."""
    return json.dumps(a, sort_keys=False, default=str) == json.dumps(b, sort_keys=False, default=str)


def score(items: list, outputs: dict) -> dict:
    """items: [(split, example, gold)]; outputs: engine -> envelopes. Exact match per engine and split,
    valid replies, agreement of needle-run and wasm."""
    figures = {}
    for engine, envelopes in outputs.items():
        per = {}
        for split in SPLITS:
            rows = [(e, gold) for (s, _ex, gold), e in zip(items, envelopes) if s == split]
            if rows:
                per[split] = {"exact": share(sum(exact_match(e["function_calls"], g) for e, g in rows), len(rows)),
                              "valid": share(sum(bool(e["success"]) for e, _ in rows), len(rows))}
        figures[engine] = per
    agreement = None
    if "needle-run" in outputs and "wasm" in outputs:
        pairs = list(zip(items, outputs["needle-run"], outputs["wasm"]))
        agreement = {"calls": share(sum(identical(a["function_calls"], b["function_calls"]) for _, a, b in pairs),
                                    len(pairs)),
                     "reply_ids": share(sum(a["reply_ids"] == b["reply_ids"] for _, a, b in pairs), len(pairs)),
                     "per_split": {split: share(sum(identical(a["function_calls"], b["function_calls"])
                                                    for (s, _, _), a, b in pairs if s == split),
                                                sum(1 for (s, _, _) in items if s == split))
                                   for split in SPLITS if any(s == split for s, _, _ in items)}}
    return {"exact_match": figures, "agreement": agreement}


def verdict(figures: dict) -> dict:
    """The issue's bar: A >= 95%, B >= 80%, C >= 95% in needle-run and in wasm; agreement >= 99%."""
    checks = {}
    for engine in ("needle-run", "wasm"):
        for split, target in TARGETS.items():
            got = figures["exact_match"].get(engine, {}).get(split)
            if got:
                checks[f"{engine} {split} >= {target:.0%}"] = got["exact"]["share"] >= target
    if figures["agreement"]:
        checks[f"agreement >= {AGREEMENT_TARGET:.0%}"] = figures["agreement"]["calls"]["share"] >= AGREEMENT_TARGET
    complete = all(f"{e} {s} >= {t:.0%}" in checks for e in ("needle-run", "wasm") for s, t in TARGETS.items())
    return {"checks": checks, "complete": complete and bool(figures["agreement"]),
            "pass": complete and bool(figures["agreement"]) and all(checks.values())}


def mismatches(items: list, outputs: dict) -> list:
    """Every request some engine got wrong, or on which needle-run and wasm disagree."""
    out = []
    for k, (split, ex, gold) in enumerate(items):
        wrong = [e for e, envs in outputs.items() if not exact_match(envs[k]["function_calls"], gold)]
        disagree = "needle-run" in outputs and "wasm" in outputs and \
            not identical(outputs["needle-run"][k]["function_calls"], outputs["wasm"][k]["function_calls"])
        if wrong or disagree:
            out.append({"id": ex["id"], "split": split, "family": ex["family"], "query": ex["query"],
                        "system": ex.get("system", ""), "tools": [t["name"] for t in ex["tools"]],
                        "gold": ex["calls"], "wrong_in": wrong, "engines_disagree": disagree,
                        "outputs": {e: {"function_calls": envs[k]["function_calls"], "error": envs[k]["error"],
                                        "text": envs[k]["text"]} for e, envs in outputs.items()}})
    return out


def fixture_suggestion(items: list, outputs: dict) -> list:
    """Ten ids for tests/fixtures/heldout-10.jsonl: 4 of A, 3 of B, 3 of C that every engine got right
    (needle-run and wasm identically), each from a family not yet taken, preferring in A a two-call
    request, an invented tool and a non-ASCII argument."""
    right = [k for k, (_s, _ex, gold) in enumerate(items)
             if all(exact_match(envs[k]["function_calls"], gold) for envs in outputs.values())]
    chosen, families = [], set()

    def take(split, want, prefer=lambda ex: True):
        for k in right:
            split_k, ex, _ = items[k]
            if len([c for c in chosen if items[c][0] == split]) >= want:
                return
            if split_k == split and ex["family"] not in families and k not in chosen and prefer(ex):
                chosen.append(k)
                families.add(ex["family"])
    take("A", 1, lambda ex: len(ex["calls"]) == 2)
    take("A", 2, lambda ex: ex["family"] == "invented")
    take("A", 3, lambda ex: any(ord(ch) > 127 for ch in json.dumps(ex["calls"], ensure_ascii=False)))
    for split, want in (("A", 4), ("B", 3), ("C", 3)):
        take(split, want)
    return [items[k][1]["id"] for k in sorted(chosen)]


# ---------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------

def table(results: dict) -> str:
    engines = list(results["exact_match"])
    lines = [f"no-call bias {results['no_call_bias']:g}"] if results.get("no_call_bias") else []
    if results.get("no_call_doubt"):
        lines.append(f"no-call doubt {results['no_call_doubt']:g}")
    if results.get("no_call_named"):
        lines.append(f"no-call named credit {results['no_call_named']:g}")
    if results.get("steer_named"):
        lines.append("named steer")
    if results.get("span_strings"):
        lines.append("span strings")
    lines.append("exact match     " + "".join(f"{e:>18}" for e in engines))
    for split in SPLITS:
        cells = []
        for e in engines:
            got = results["exact_match"][e].get(split)
            cells.append(f"{got['exact']['count']:>5}/{got['exact']['total']:<5} {got['exact']['share']:6.1%}"
                         if got else "-")
        if any(c != "-" for c in cells):
            lines.append(f"  {split:<14}" + "".join(f"{c:>18}" for c in cells))
    lines.append("valid replies   " + "".join(
        f"{sum(v['valid']['count'] for v in results['exact_match'][e].values()):>18}" for e in engines))
    lines.append("wall time       " + "".join(f"{results['timing'][e]['wall_s']:>16.0f} s" for e in engines))
    a = results["agreement"]
    if a:
        lines.append(f"needle-run = wasm: calls {a['calls']['count']}/{a['calls']['total']} "
                     f"({a['calls']['share']:.1%}), reply ids {a['reply_ids']['count']}/{a['reply_ids']['total']} "
                     f"({a['reply_ids']['share']:.1%})")
    v = results["verdict"]
    if v["checks"]:
        lines.append("targets: " + ", ".join(f"{k} {'ok' if ok else 'NOT MET'}" for k, ok in v["checks"].items()))
    lines.append("verdict: " + ("PASS" if v["pass"] else "FAIL" if v["complete"] else
                                "none (the targets need needle-run and wasm on A, B and C)"))
    return "\n".join(lines)


def engine_table(columns: list, engines: list, rows: list) -> list:
    """Markdown lines of a table with the label `columns` then one column per engine; `rows` are
    (labels, cells) pairs, one cell per engine ("" for none); labels and cells are written with str()."""
    lines = ["| " + " | ".join(columns + engines) + " |", "|" + "---|" * (len(columns) + len(engines))]
    return lines + ["| " + " | ".join(map(str, [*labels, *cells])) + " |" for labels, cells in rows]


def write_mismatches_md(path: str, results: dict, items: list) -> None:
    failures = results["mismatches"]
    engines = list(results["exact_match"])
    lines = ["# Evaluation mismatches", "",
             f"Archive `{results['archive']['path']}` (sha256 {results['archive']['sha256'][:16]}...), "
             f"{len(items)} requests; {len(failures)} with a wrong call in some engine or a disagreement "
             "between needle-run and wasm. Everything is in results.json (`mismatches`).", "",
             "## Wrong calls by split and family", ""]
    totals = Counter((s, ex["family"]) for s, ex, _ in items)
    wrong = Counter((m["split"], m["family"], e) for m in failures for e in m["wrong_in"])
    rows = [((split, family, n), [wrong[(split, family, e)] for e in engines])
            for (split, family), n in sorted(totals.items())]
    lines += engine_table(["split", "family", "requests"], engines, [r for r in rows if any(r[1])])
    lines += ["", "## Wrong calls by kind", "",
              "What a wrong reply got wrong first: the call-or-[] decision, the tools, the argument keys, "
              "the values (evaluate.error_kind).", ""]
    kinds = results["error_kinds"]
    rows = [((split, kind), [kinds.get(e, {}).get(split, {}).get(kind, 0) for e in engines])
            for split in SPLITS for kind in ERROR_KINDS]
    lines += engine_table(["split", "kind"], engines, [r for r in rows if any(r[1])])
    lines += ["", "## Requests that name their tools", "",
              "Exact matches among the requests whose every gold tool shares a word with the request "
              "(\"hotels\" and hotels.find) and among the others (evaluate.names_its_tools).", ""]
    naming = results["by_naming"]
    rows = []
    for split in SPLITS:
        for which in ("named", "not named"):
            cells = [naming.get(e, {}).get(split, {}).get(which) for e in engines]
            if any(cells):
                total = next(c["total"] for c in cells if c)
                rows.append(((split, f"{which}: {total}"), [c["count"] if c else "" for c in cells]))
    lines += engine_table(["split", "requests"], engines, rows)
    lines += ["", f"## The first {min(SHOWN_IN_FULL, len(failures))} in full", ""]
    for m in failures[:SHOWN_IN_FULL]:
        lines.append(f"### {m['id']} ({m['family']}): wrong in {', '.join(m['wrong_in']) or 'none'}"
                     + ("; needle-run and wasm disagree" if m["engines_disagree"] else ""))
        lines.append("")
        lines.append(f"- query: `{m['query']}`" + (f" (system: `{m['system']}`)" if m["system"] else ""))
        lines.append(f"- tools: {', '.join(m['tools'])}")
        lines.append(f"- gold: `{json.dumps(m['gold'], ensure_ascii=False)}`")
        for e, out in m["outputs"].items():
            calls = json.dumps(out["function_calls"], ensure_ascii=False, default=json_number)
            lines.append(f"- {e}: `{calls}`" + (f" (error: {out['error']})" if out["error"] else ""))
        lines.append("")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def json_number(value):
    """json.dump's default for the exactly parsed numbers: an int or a float again (display only)."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() and "." not in str(value) and \
            "E" not in str(value).upper() else float(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def file_facts(path: str) -> dict:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return {"path": path, "bytes": os.path.getsize(path), "sha256": digest.hexdigest()}


def prompt_check(items: list, prompts: list, tokenizer: str) -> dict:
    """The prompt ids the session fed equal the trainer's (render.encode_example with the trainer's
    SentencePiece model): the model is asked in exactly the form it was trained on."""
    import sentencepiece as spm
    import render
    sp = spm.SentencePieceProcessor(model_file=tokenizer)
    bad = [ex["id"] for (_s, ex, _g), fed in zip(items, prompts) if fed != render.encode_example(sp, ex)[0]]
    return {"same": len(items) - len(bad), "total": len(items), "different": bad[:20]}


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------

def say(*a) -> None:
    print("evaluate:", *a, flush=True)


def write_fixture(args) -> int:
    """--write-fixture: the examples --ids names (default: OUT/results.json's fixture_suggestion, the
    last evaluation's choice) from the splits' files, as the shipped-model fixture, their requests with
    --no-call-bias, --no-call-doubt, --no-call-named and --steer-named (default: that evaluation's) and
    span strings unless --no-span-strings."""
    ids = [i for i in args.ids.split(",") if i]
    results = os.path.join(args.out, "results.json")
    if not ids or None in (args.no_call_bias, args.no_call_doubt, args.no_call_named, args.steer_named):
        if not os.path.exists(results):
            raise SystemExit("--write-fixture: give --ids, --no-call-bias, --no-call-doubt, --no-call-named and "
                             f"--steer-named or --no-steer-named, or evaluate first ({results} is missing)")
        with open(results, encoding="utf-8") as f:
            last = json.load(f)
        if args.no_call_bias is None:
            args.no_call_bias = last.get("no_call_bias", 0.0)
        if args.no_call_doubt is None:
            args.no_call_doubt = last.get("no_call_doubt", 0.0)
        if args.no_call_named is None:
            args.no_call_named = last.get("no_call_named", 0.0)
        if args.steer_named is None:
            args.steer_named = last.get("steer_named", False)
    if not ids:
        ids = last["fixture_suggestion"]
        if len(ids) != 10:
            raise SystemExit(f"--write-fixture: {results} suggests {len(ids)} examples, not 10 "
                             "(too few right answers to choose from); give --ids")
    found = {}
    for split in SPLITS:
        for ex, _gold in load_split(os.path.join(args.data, f"{split}.jsonl"), 10 ** 9):
            if ex["id"] in ids:
                found[ex["id"]] = ex
    missing = [i for i in ids if i not in found]
    if missing:
        raise SystemExit(f"--ids: {', '.join(missing)} not found in {args.data}/{{A,B,C}}.jsonl")
    with open(args.write_fixture, "w", encoding="utf-8") as f:
        for i in ids:
            ex = found[i]
            line = {"id": i, "split": ex["split"], "family": ex["family"],
                    "request": request_of(ex, args.max_tokens, args.no_call_bias, args.span_strings,
                                          args.no_call_doubt, args.no_call_named, args.steer_named),
                    "gold": ex["calls"]}
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    say(f"wrote {len(ids)} examples to {args.write_fixture}")
    return 0


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--archive", default="build/train/needlework-tools.cact", help="the packed archive")
    ap.add_argument("--checkpoint", default="build/train/checkpoint.pt", help="train.py's checkpoint (float)")
    ap.add_argument("--tokenizer", default="build/train/tokenizer/tokenizer.model",
                    help="the SentencePiece model the trainer used (checks the prompt ids)")
    ap.add_argument("--data", default="build/train/data", help="directory with A.jsonl, B.jsonl, C.jsonl")
    ap.add_argument("--build", default="build", help="build directory: bin/needle-run, lib/libneedle_toolcall.so, "
                    "engine.wasm, toolcall.mjs")
    ap.add_argument("--out", default="build/eval", help="output directory (default build/eval)")
    ap.add_argument("--count", type=int, default=500, help="requests per split (default 500)")
    ap.add_argument("--skip", type=int, default=0, help="start after the first SKIP examples of each split "
                    "(default 0; calibrate.py's validation range starts at 500)")
    ap.add_argument("--splits", default="A,B,C", help="which splits (default A,B,C)")
    ap.add_argument("--engines", default=",".join(DEFAULT_ENGINES),
                    help=f"comma list of {', '.join(ENGINES)} (default {','.join(DEFAULT_ENGINES)})")
    ap.add_argument("--max-tokens", type=int, default=DEFAULT_MAX_TOKENS,
                    help=f"reply tokens at most (default {DEFAULT_MAX_TOKENS})")
    ap.add_argument("--no-call-bias", type=float, default=None, help="the requests' no_call_bias "
                    "(docs/toolcall.md, \"The no-call bias\"; default: calibrate.py's for this archive, from "
                    "calibration/calibration.json beside it when its sha256 is the archive's, else the one of "
                    "site/models.json's entry with that sha256, else 0)")
    ap.add_argument("--no-call-doubt", type=float, default=None, help="the requests' no_call_doubt, the weight "
                    "of a drawn call's doubt in the same decision (default: from where the bias comes; with "
                    "--no-call-bias given, 0)")
    ap.add_argument("--no-call-named", type=float, default=None, help="the requests' no_call_named, the credit "
                    "in that decision of calls whose tools the request names (default: from where the bias "
                    "comes; with --no-call-bias given, 0)")
    ap.add_argument("--steer-named", dest="steer_named", action="store_const", const=True, default=None,
                    help="the requests' steer_named: the first call's name is the one offered tool the request "
                    "names (default: from where the bias comes; with --no-call-bias given, off)")
    ap.add_argument("--no-steer-named", dest="steer_named", action="store_const", const=False,
                    help="ask without the named steer")
    ap.add_argument("--no-span-strings", dest="span_strings", action="store_false",
                    help="ask without span strings (docs/toolcall.md, \"Span strings\"; default: with them, as "
                    "site/models.json's span_strings asks the page to)")
    ap.add_argument("--threads", type=int, default=2, help="torch threads of the float model when it runs "
                    "alone (default 2; 1 beside needle-run-f32)")
    ap.add_argument("--write-fixture", metavar="FILE", help="write the examples --ids names as the fixture")
    ap.add_argument("--ids", default="", help="with --write-fixture: comma list of example ids (default: the "
                    "last evaluation's fixture_suggestion in OUT/results.json)")
    args = ap.parse_args(argv)
    args.engines = [e for e in args.engines.split(",") if e]
    unknown = [e for e in args.engines if e not in ENGINES]
    if unknown or not args.engines:
        ap.error(f"--engines: {', '.join(unknown) or '(none)'}: choose from {', '.join(ENGINES)}")
    args.splits = [s for s in args.splits.split(",") if s]
    if any(s not in SPLITS for s in args.splits):
        ap.error(f"--splits: choose from {', '.join(SPLITS)}")
    if args.count < 1 or args.max_tokens < 1 or args.skip < 0:
        ap.error("--count and --max-tokens must be at least 1, --skip at least 0")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.write_fixture:
        return write_fixture(args)
    floats = [e for e in args.engines if e.startswith("float")]
    for path, what in ((args.archive, "--archive"),) + (((args.checkpoint, "--checkpoint"),)
                                                        if floats else ()):
        if not os.path.exists(path):
            raise SystemExit(f"{what} {path} does not exist (npm run train makes it)")
    os.makedirs(args.out, exist_ok=True)
    source = "--no-call-bias"
    if args.no_call_bias is None:
        args.no_call_bias, doubt, named, steer, source = calibrated_decision(args.archive)
        if args.no_call_doubt is None:
            args.no_call_doubt = doubt
        if args.no_call_named is None:
            args.no_call_named = named
        if args.steer_named is None:
            args.steer_named = steer
    args.no_call_doubt = args.no_call_doubt or 0.0
    args.no_call_named = args.no_call_named or 0.0
    args.steer_named = bool(args.steer_named)

    items = []  # (split, example, gold parsed exactly)
    for split in args.splits:
        examples = load_split(os.path.join(args.data, f"{split}.jsonl"), args.count, args.skip)
        if len(examples) < args.count:
            say(f"{split}: only {len(examples)} examples (asked for {args.count})")
        items += [(split, ex, gold) for ex, gold in examples]
    requests = [request_of(ex, args.max_tokens, args.no_call_bias, args.span_strings, args.no_call_doubt,
                           args.no_call_named, args.steer_named) for _s, ex, _g in items]
    requests_path = os.path.join(args.out, "requests.jsonl")
    with open(requests_path, "w", encoding="utf-8") as f:
        for r in requests:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    say(f"{len(requests)} requests ({', '.join(args.splits)}) in {requests_path}")

    outputs, walls, prompts = {}, {}, None
    # Phase 1: needle-run and wasm side by side.
    jobs = [start_batch(e, args, requests_path) for e in ("needle-run", "wasm") if e in args.engines]
    try:
        for job in jobs:
            outputs[job["engine"]], walls[job["engine"]] = finish_batch(job, len(requests))
        # Phase 2: the float model (in this process), with needle-run-f32 beside it.
        if "needle-run-f32" in args.engines:
            jobs.append(start_batch("needle-run-f32", args, requests_path))
        for engine in floats:
            threads = 1 if "needle-run-f32" in args.engines else args.threads
            outputs[engine], walls[engine], fed = run_float(args, requests, threads, engine)
            prompts = prompts or fed
        if "needle-run-f32" in args.engines:
            outputs["needle-run-f32"], walls["needle-run-f32"] = finish_batch(jobs[-1], len(requests))
    finally:
        for job in jobs:  # a failure leaves no engine running
            if job["process"].poll() is None:
                job["process"].kill()
                job["process"].wait()
    outputs = {e: outputs[e] for e in ENGINES if e in outputs}

    results = {"archive": file_facts(args.archive),
               "checkpoint": file_facts(args.checkpoint) if floats else None,
               "data": os.path.abspath(args.data), "count_per_split": args.count, "skip": args.skip,
               "max_tokens": args.max_tokens, "no_call_bias": args.no_call_bias, "no_call_bias_from": source,
               "no_call_doubt": args.no_call_doubt, "no_call_named": args.no_call_named,
               "steer_named": args.steer_named,
               "span_strings": args.span_strings,
               "engines": list(outputs),
               "commands": {e: engine_command(e, args, requests_path) for e in outputs if not e.startswith("float")}}
    results.update(score(items, outputs))
    results["verdict"] = verdict(results)
    results["timing"] = {e: timing_of(outputs[e], walls[e]) for e in outputs}
    if prompts is not None and os.path.exists(args.tokenizer):
        results["prompt_ids_as_trained"] = prompt_check(items, prompts, args.tokenizer)
    results["error_kinds"] = error_kinds(items, outputs)
    results["by_naming"] = by_naming(items, outputs)
    results["fixture_suggestion"] = fixture_suggestion(items, outputs)
    results["mismatches"] = mismatches(items, outputs)

    with open(os.path.join(args.out, "results.json"), "w", encoding="utf-8") as f:
        json.dump(results, f, ensure_ascii=False, indent=1, default=json_number)
    write_mismatches_md(os.path.join(args.out, "mismatches.md"), results, items)
    print(table(results))
    if "prompt_ids_as_trained" in results:
        p = results["prompt_ids_as_trained"]
        print(f"prompt ids as trained: {p['same']}/{p['total']}")
    say(f"wrote {os.path.join(args.out, 'results.json')} and mismatches.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
