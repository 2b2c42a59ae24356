#!/usr/bin/python3
"""plot_runs.py: one loss curve for runs that follow each other (npm run train's base run, its
continuation, the runs on perturbed data), as docs/model-card-loss.png shows it.

    /usr/bin/python3 tools/train/plot_runs.py build/train/run:4330 build/train/run-p build/train/run-p8 build/train/run-p8t -o docs/model-card-loss.png

Each argument is a run directory (its log.csv), optionally cut at a step (":STEP"); a later run's
tokens continue from where the earlier one ended, and a dotted line marks where it starts.
"""
import argparse
import csv
import os


def loss_figure(train, evals, path, starts=()):
    """Writes the PNG at `path`: training loss points (tokens, loss), eval points, and a dotted line
    with a name at each (tokens, name) of `starts`. train.py's loss.png is drawn by it too."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.plot(*zip(*train), label="train (reply tokens)")
    if evals:
        ax.plot(*zip(*evals), "o-", label="held out (split A)")
    for x, name in starts:
        ax.axvline(x, linestyle=":", color="gray")
        ax.text(x, ax.get_ylim()[1], f" {name}", va="top", fontsize=8, color="gray")
    ax.set_xlabel("tokens processed (prompt + reply)")
    ax.set_ylabel("cross-entropy (nats)")
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path + ".tmp.png", dpi=100)
    plt.close(fig)
    os.replace(path + ".tmp.png", path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="RUN_DIR or RUN_DIR:LAST_STEP, in order")
    ap.add_argument("-o", "--out", required=True, help="the PNG to write")
    args = ap.parse_args(argv)
    train, evals, starts, offset = [], [], [], 0.0
    for spec in args.runs:
        path, _, last = spec.partition(":")
        with open(os.path.join(path, "log.csv")) as f:
            rows = [r for r in csv.DictReader(f) if not last or int(r["step"]) <= int(last)]
        if not rows:
            raise SystemExit(f"plot_runs: {path}/log.csv has no rows up to step {last}")
        if offset:
            starts.append((offset, os.path.basename(path)))
        train += [(offset + float(r["tokens"]), float(r["loss"])) for r in rows]
        evals += [(offset + float(r["tokens"]), float(r["eval_loss"])) for r in rows if r.get("eval_loss")]
        offset += float(rows[-1]["tokens"])
    loss_figure(train, evals, args.out, starts)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
