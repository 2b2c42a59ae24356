#!/usr/bin/env python3
"""restyle_split.py: a held-out split with its family tools' names written in another style.

    /usr/bin/python3 tools/train/restyle_split.py --data build/train/data --out build/train/data-restyled
    /usr/bin/python3 tools/train/evaluate.py --data build/train/data-restyled --splits A --count 200 ...

Every tool of the split whose name is a family variant's (data.VARIANTS) is renamed by
data.restyled_name (the same words in the same roles, another case, order or prefix: set_timer ->
timer.set), and the gold calls follow; requests, descriptions and parameters stay. The model must
then match the request to the tool by its words, not by a name it has learned whole: what split B
asks of it with names it has never seen. docs/training-data.md, "Restyled names", has the
measurements.
"""

import argparse
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import data  # noqa: E402


def restyle_example(rng, ex):
    """A copy of `ex` with every family tool renamed (data.restyle_names) and its calls following."""
    ex = dict(ex, tools=list(ex["tools"]))
    data.restyle_names(rng, ex["tools"], [ex], lambda name: True)
    return ex


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="build/train/data", help="directory with A.jsonl, B.jsonl, C.jsonl")
    ap.add_argument("--out", required=True, help="output directory (the same file names)")
    ap.add_argument("--splits", default="A,B,C", help="which splits to restyle (default A,B,C)")
    ap.add_argument("--seed", type=int, default=7, help="random seed of the styles (default 7)")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    os.makedirs(args.out, exist_ok=True)
    for split in args.splits.split(","):
        path = os.path.join(args.data, f"{split}.jsonl")
        if not os.path.exists(path):
            ap.error(f"{path}: no such split file")
        originals = data.read_split(path)
        examples = [restyle_example(rng, ex) for ex in originals]
        data.write_split(os.path.join(args.out, f"{split}.jsonl"), examples)
        renamed = sum(t["name"] != u["name"] for ex, orig in zip(examples, originals)
                      for t, u in zip(ex["tools"], orig["tools"]))
        print(f"restyle_split: {split}: {len(examples)} examples, {renamed} tool names restyled")
    return 0


if __name__ == "__main__":
    sys.exit(main())
