#!/usr/bin/python3
"""train.py: train a Needle 2 model (model.py) on tool-call examples, with CQ in the loop.

    /usr/bin/python3 tools/train/train.py --data build/train/data
        --tokenizer build/train/tokenizer/tokenizer.model --geometry d256l6
        --bits-map 'embedding=4,mhc=4,default=2' --minutes 80 --out build/train/run

The loss is cross-entropy on the reply tokens only (the prompt is context). Batches hold examples of
similar length (bucketed) up to --batch-tokens padded tokens. AdamW, linear warmup then cosine decay
to --min-lr, gradient clipping. A checkpoint (model, optimiser, data position, RNG, elapsed time,
schedule) is written every --checkpoint-minutes and at the end; --resume continues from it exactly.
The log is OUT/log.csv and OUT/loss.png. docs/training.md describes all of it.
"""
from __future__ import annotations

import os

# OpenMP threads that spin while waiting make a shared machine crawl (measured: 2 spinning threads
# next to another busy process ran 20x slower); sleep instead. Read when torch loads libgomp.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import csv
import hashlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cq  # noqa: E402
import model as M  # noqa: E402
from tokenizer import TOOL_CALL_ID  # noqa: E402

CHECKPOINT = "checkpoint.pt"
# Settings fixed for the whole run: a resumed run takes them from the checkpoint. (The budgets,
# threads, device, logging and evaluation may change between invocations.)
RUN_SETTINGS = {"geometry": "d256l6", "bits_map": "embedding=4,mhc=4,default=2", "seed": 1,
                "batch_tokens": 4096, "lr": 3e-3, "min_lr": 3e-4, "warmup": 100, "weight_decay": 0.1,
                "clip": 1.0, "replan_every": 50, "decision_weight": 1.0, "bpe_dropout": 0.0,
                "dropout": 0.0}
LOG_FIELDS = ["step", "epoch", "tokens", "elapsed_s", "lr", "loss", "accuracy", "tokens_per_s",
              "eval_loss", "eval_accuracy", "examples", "examples_per_s"]


# ---------------------------------------------------------------------------------------------
# Data: examples -> (prompt ids, reply ids)
# ---------------------------------------------------------------------------------------------

def load_examples(path: str, tokenizer: str | None, cache_dir: str | None = None) -> list:
    """A JSONL file -> [(prompt_ids, target_ids)] as int32 arrays.

    A line is either the data generator's example (rendered and encoded by render.encode_example
    with the SentencePiece model `tokenizer`), or already tokenised: {"prompt_ids": [...],
    "target_ids": [...]}. The encoded list is cached in cache_dir, keyed by the file's and the
    tokenizer's size and modification time, so a resumed run does not encode again.
    """
    return load_grouped_examples(path, tokenizer, cache_dir)[0]


def load_grouped_examples(path: str, tokenizer: str | None, cache_dir: str | None = None,
                          bpe_dropout: float = 0.0, seed: int = 1) -> tuple:
    """load_examples's list and, for grouped data (data.py --group: every line has "group", a
    group's lines consecutive), each example's group number as an int64 array; None for ungrouped
    data. A line without "group" among lines with one, or a group whose lines are not consecutive,
    is an error naming the line. With bpe_dropout > 0 the prompts the examples render to are cut
    into pieces with BPE dropout (render.encode_example_dropout, SentencePiece's sampler seeded with
    `seed`): one draw per group for the shared head, one per example for the rest."""
    key = _file_key(path) + (_file_key(tokenizer) if tokenizer else "")
    if bpe_dropout > 0:
        key += f":bpe-dropout={bpe_dropout}:seed={seed}"
    cache = os.path.join(cache_dir, f"tokens-{hashlib.sha1(key.encode()).hexdigest()[:12]}.npz") \
        if cache_dir else None
    if cache and os.path.exists(cache):
        z = np.load(cache)
        # A cache written before groups were read has no "group": read the file again if it has them.
        if "group" in z.files or not _first_line_has_group(path):
            return _split_ragged(z), (z["group"] if "group" in z.files else None)
    if bpe_dropout > 0:
        examples, groups = _in_fresh_thread(_read_examples, path, tokenizer, bpe_dropout, seed)
    else:
        examples, groups = _read_examples(path, tokenizer)
    if cache:
        os.makedirs(cache_dir, exist_ok=True)
        tmp = cache + ".tmp.npz"
        arrays = _join_ragged(examples)
        if groups is not None:
            arrays["group"] = groups
        np.savez(tmp, **arrays)
        os.replace(tmp, cache)
    return examples, groups


def _in_fresh_thread(fn, *args):
    """fn(*args) run on a new thread, its result or its exception handed back. SentencePiece's
    sampler draws from a generator each thread seeds once, at its first draw, from the seed set last
    (set_random_generator_seed): only a thread that has not sampled yet follows a new seed."""
    import threading
    out = {}

    def call():
        try:
            out["value"] = fn(*args)
        except BaseException as e:  # noqa: BLE001 -- handed to the caller's thread
            out["error"] = e
    thread = threading.Thread(target=call)
    thread.start()
    thread.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def _read_examples(path: str, tokenizer: str | None, bpe_dropout: float = 0.0, seed: int = 1) -> tuple:
    """load_grouped_examples's reading, without the cache. With bpe_dropout > 0, call it on a thread
    that has not sampled yet (_in_fresh_thread), so that `seed` decides the pieces."""
    sp = render = head = None
    examples, groups, seen_groups, grouped = [], [], set(), None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                ex = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path} line {number}: not JSON ({e})") from None
            if "prompt_ids" in ex:
                prompt, target = ex["prompt_ids"], ex["target_ids"]
            else:
                if render is None:
                    sp, render = _renderer(tokenizer, path, seed if bpe_dropout > 0 else None)
                if bpe_dropout > 0:
                    if not groups or ex.get("group") != groups[-1]:
                        head = None  # a new group draws its own head pieces
                    prompt, target, head = render.encode_example_dropout(sp, ex, bpe_dropout, head)
                else:
                    prompt, target = render.encode_example(sp, ex)
            if not prompt or not target:
                raise ValueError(f"{path} line {number}: empty prompt or reply")
            if grouped is None:
                grouped = "group" in ex
            if ("group" in ex) != grouped:
                raise ValueError(f"{path} line {number}: " + ("a \"group\" in ungrouped data" if "group" in ex
                                                               else "no \"group\" (earlier lines have one)"))
            if grouped:
                group = ex["group"]
                if not isinstance(group, int) or group < 0:
                    raise ValueError(f"{path} line {number}: group {group!r} is not a non-negative integer")
                if group in seen_groups and group != groups[-1]:
                    raise ValueError(f"{path} line {number}: group {group} again after other groups "
                                     "(a group's lines are consecutive)")
                seen_groups.add(group)
                groups.append(group)
            examples.append((np.asarray(prompt, np.int32), np.asarray(target, np.int32)))
    return examples, (np.asarray(groups, np.int64) if groups else None)


def _first_line_has_group(path: str) -> bool:
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                try:
                    return "group" in json.loads(line)
                except json.JSONDecodeError:
                    return False
    return False


def _file_key(path: str) -> str:
    st = os.stat(path)
    return f"{os.path.abspath(path)}:{st.st_size}:{st.st_mtime_ns}"


def _renderer(tokenizer: str | None, path: str, sampling_seed: int | None = None):
    """The tokenizer and the data helper's tools/train/render.py module (its encode_example, and
    encode_example_dropout after seeding SentencePiece's sampler with sampling_seed)."""
    if not tokenizer:
        raise ValueError(f"{path}: the examples need rendering; give --tokenizer MODEL.model")
    try:
        import render  # tools/train/render.py
    except ImportError as e:
        raise ValueError(f"{path}: the examples need tools/train/render.py ({e})") from None
    import sentencepiece as spm
    if sampling_seed is not None:
        spm.set_random_generator_seed(sampling_seed)
    return spm.SentencePieceProcessor(model_file=tokenizer), render


def _join_ragged(examples: list) -> dict:
    prompts = [p for p, _ in examples]
    targets = [t for _, t in examples]
    return {"prompt": np.concatenate(prompts), "prompt_len": np.array([len(p) for p in prompts]),
            "target": np.concatenate(targets), "target_len": np.array([len(t) for t in targets])}


def _split_ragged(z) -> list:
    prompts = np.split(z["prompt"], np.cumsum(z["prompt_len"])[:-1])
    targets = np.split(z["target"], np.cumsum(z["target_len"])[:-1])
    return list(zip(prompts, targets))


def sequence_length(example) -> int:
    """Tokens the model runs for one example: the prompt and the reply except its last token (the
    last reply token is only predicted, never fed)."""
    return len(example[0]) + len(example[1]) - 1


def epoch_batches(lengths: np.ndarray, batch_tokens: int, seed: int, epoch: int) -> list:
    """The batches of one epoch, a pure function of (seed, epoch): shuffle, then in windows of about
    64 batches sort by length and cut batches whose padded size (count x longest) stays within
    batch_tokens, then shuffle the batches. Returns lists of example indices."""
    rng = np.random.default_rng([seed, epoch])
    order = rng.permutation(len(lengths))
    window = max(1, 64 * batch_tokens // max(1, int(np.mean(lengths))))
    batches = []
    for start in range(0, len(order), window):
        chunk = order[start:start + window]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        current, longest = [], 0
        for idx in chunk:
            n = int(lengths[idx])
            if current and max(longest, n) * (len(current) + 1) > batch_tokens:
                batches.append(current)
                current, longest = [], 0
            current.append(int(idx))
            longest = max(longest, n)
        if current:
            batches.append(current)
    return [batches[k] for k in rng.permutation(len(batches))]


def make_batch(examples: list, indices: list, device, decision_weight: float = 1.0) -> dict:
    """Right-padded inputs [B, T] (pad 0), the flat positions whose logits predict reply tokens,
    those reply tokens, and their loss weights (reply_weights)."""
    seqs = [np.concatenate([examples[k][0], examples[k][1][:-1]]) for k in indices]
    T = max(len(s) for s in seqs)
    tokens = np.zeros((len(seqs), T), dtype=np.int64)
    positions, targets = [], []
    for b, k in enumerate(indices):
        prompt, target = examples[k]
        tokens[b, :len(seqs[b])] = seqs[b]
        # Position p's logits predict token p + 1: the reply starts after the last prompt token.
        start = b * T + len(prompt) - 1
        positions.append(np.arange(start, start + len(target)))
        targets.append(target)
    return {"tokens": torch.from_numpy(tokens).to(device),
            "positions": torch.from_numpy(np.concatenate(positions)).to(device),
            "targets": torch.from_numpy(np.concatenate(targets).astype(np.int64)).to(device),
            "weights": reply_weights(targets, decision_weight, device),
            "n_tokens": int(sum(len(s) for s in seqs)), "n_examples": len(seqs)}


def reply_weights(targets: list, decision_weight: float, device) -> torch.Tensor | None:
    """The loss weight of each reply token, for replies `targets` in batch order: decision_weight on
    each reply's decision token, 1 on the rest; None when decision_weight is 1 (a plain mean). The
    decision token follows the reply's <tool_call> marker: `[]` (no tool fits) or `[{"` (a call),
    the one token that says whether a tool is called at all (the reply's first token when it has
    no marker)."""
    if decision_weight == 1.0:
        return None
    weights = [np.ones(len(t), dtype=np.float32) for t in targets]
    for t, w in zip(targets, weights):
        w[decision_index(t)] = decision_weight
    return torch.from_numpy(np.concatenate(weights)).to(device)


def decision_index(target) -> int:
    """Where a reply's decision token is: the token after its first <tool_call> marker, or the
    reply's first token when it has no marker (or the marker ends it)."""
    marker = np.flatnonzero(np.asarray(target) == TOOL_CALL_ID)
    return int(marker[0]) + 1 if len(marker) and marker[0] + 1 < len(target) else 0


def weighted_reply_loss(logits: torch.Tensor, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-entropy over the batch's reply tokens, weighted by batch["weights"] (a weighted mean;
    the plain mean when there are none), and how many of them the argmax gets right."""
    weights = batch.get("weights")
    if weights is None:
        loss = F.cross_entropy(logits, batch["targets"])
    else:
        loss = (F.cross_entropy(logits, batch["targets"], reduction="none") * weights).sum() / weights.sum()
    correct = (logits.detach().argmax(-1) == batch["targets"]).sum()
    return loss, correct


def reply_loss(net: M.Needle2, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """The reply loss of a batch (make_batch; weighted_reply_loss)."""
    return weighted_reply_loss(net(batch["tokens"], batch["positions"]), batch)


# ---------------------------------------------------------------------------------------------
# Grouped data: one shared prompt beginning, several requests (docs/training.md, "Grouped batches")
# ---------------------------------------------------------------------------------------------

def make_groups(examples: list, group_ids: np.ndarray) -> list:
    """Consecutive examples with the same group number -> [(prefix, [(suffix, target), ...])]: the
    prefix is the longest beginning the group's prompts share (for the data generator's examples,
    at least BOS through the </tools> marker), but always short of the shortest prompt's last token,
    so that every suffix holds the position that predicts its first reply token; a suffix is the
    rest of its prompt."""
    groups = []
    start = 0
    for k in range(1, len(examples) + 1):
        if k < len(examples) and group_ids[k] == group_ids[start]:
            continue
        prompts = [examples[j][0] for j in range(start, k)]
        n = min(len(p) for p in prompts) - 1
        first = prompts[0][:n]
        for p in prompts[1:]:
            differ = np.nonzero(p[:n] != first[:n])[0]
            if len(differ):
                n = int(differ[0])
        groups.append((first[:n].copy(), [(p[n:], examples[j][1]) for j, p in zip(range(start, k), prompts)]))
        start = k
    return groups


def group_suffix_length(member) -> int:
    """Suffix tokens the model runs for one member: the rest of its prompt and its reply except the
    last token."""
    return len(member[0]) + len(member[1]) - 1


def group_padded_size(prefix_length: int, suffix_lengths) -> int:
    """A group's padded tokens in a batch of itself alone: prefix + members x longest suffix."""
    return prefix_length + len(suffix_lengths) * max(suffix_lengths)


def epoch_group_batches(prefix_lengths: np.ndarray, suffix_lengths: list, batch_tokens: int, seed: int,
                        epoch: int) -> list:
    """epoch_batches for groups, a pure function of (seed, epoch): shuffle the groups, then in
    windows of about 64 batches sort them by prefix length and longest suffix and cut batches whose
    padded size, count x (longest prefix + most members x longest suffix), stays within batch_tokens
    (a group larger than that alone is a batch), then shuffle the batches. Returns lists of group
    indices."""
    rng = np.random.default_rng([seed, epoch])
    order = rng.permutation(len(prefix_lengths))
    longest = np.array([max(s) for s in suffix_lengths])
    members = np.array([len(s) for s in suffix_lengths])
    mean = np.mean([group_padded_size(p, s) for p, s in zip(prefix_lengths, suffix_lengths)]) if len(order) else 1
    window = max(1, int(64 * batch_tokens // max(1.0, mean)))
    batches = []
    for start in range(0, len(order), window):
        chunk = order[start:start + window]
        chunk = chunk[np.lexsort((longest[chunk], prefix_lengths[chunk]))]
        current, lp, ls, k = [], 0, 0, 0
        for idx in chunk:
            p, s, m = max(lp, int(prefix_lengths[idx])), max(ls, int(longest[idx])), max(k, int(members[idx]))
            if current and (len(current) + 1) * (p + m * s) > batch_tokens:
                batches.append(current)
                current = []
                p, s, m = int(prefix_lengths[idx]), int(longest[idx]), int(members[idx])
            current.append(int(idx))
            lp, ls, k = p, s, m
        if current:
            batches.append(current)
    return [batches[k] for k in rng.permutation(len(batches))]


def make_grouped_batch(groups: list, indices: list, device, decision_weight: float = 1.0) -> dict:
    """The inputs of Needle2.forward_grouped for the groups `indices` (right padded with 0; a group
    with fewer members has suffixes of length 0), the flat suffix positions whose logits predict
    reply tokens, those reply tokens and their loss weights (reply_weights), the tokens the model
    runs (each prefix once, every suffix), the examples, and the padded size."""
    chosen = [groups[k] for k in indices]
    G = len(chosen)
    Lp = max(1, max(len(p) for p, _ in chosen))
    K = max(len(m) for _, m in chosen)
    Ls = max(group_suffix_length(x) for _, m in chosen for x in m)
    prefix = np.zeros((G, Lp), dtype=np.int64)
    suffix = np.zeros((G, K, Ls), dtype=np.int64)
    prefix_lengths = np.zeros(G, dtype=np.int64)
    suffix_lengths = np.zeros((G, K), dtype=np.int64)
    positions, targets = [], []
    for g, (p, members) in enumerate(chosen):
        prefix[g, :len(p)] = p
        prefix_lengths[g] = len(p)
        for k, (rest, target) in enumerate(members):
            seq = np.concatenate([rest, target[:-1]])
            suffix[g, k, :len(seq)] = seq
            suffix_lengths[g, k] = len(seq)
            # Suffix offset t predicts token t + 1: the reply starts after the prompt's last token.
            start = (g * K + k) * Ls + len(rest) - 1
            positions.append(np.arange(start, start + len(target)))
            targets.append(target)
    return {"prefix_tokens": torch.from_numpy(prefix).to(device),
            "prefix_lengths": torch.from_numpy(prefix_lengths).to(device),
            "suffix_tokens": torch.from_numpy(suffix).to(device),
            "suffix_lengths": torch.from_numpy(suffix_lengths).to(device),
            "positions": torch.from_numpy(np.concatenate(positions)).to(device),
            "targets": torch.from_numpy(np.concatenate(targets).astype(np.int64)).to(device),
            "weights": reply_weights(targets, decision_weight, device),
            "n_tokens": int(prefix_lengths.sum() + suffix_lengths.sum()),
            "n_examples": int((suffix_lengths > 0).sum()),
            "n_padded": G * (Lp + K * Ls)}


def grouped_reply_loss(net: M.Needle2, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """reply_loss for a grouped batch (make_grouped_batch), through Needle2.forward_grouped."""
    return weighted_reply_loss(net.forward_grouped(batch["prefix_tokens"], batch["prefix_lengths"],
                                                   batch["suffix_tokens"], batch["suffix_lengths"],
                                                   batch["positions"]), batch)


# ---------------------------------------------------------------------------------------------
# Schedule and optimiser
# ---------------------------------------------------------------------------------------------

def learning_rate(step: int, total: int, peak: float, floor: float, warmup: int) -> float:
    """Linear warmup over `warmup` steps, then cosine from peak down to floor at step `total`."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return floor + 0.5 * (peak - floor) * (1 + math.cos(math.pi * progress))


def make_optimizer(net: M.Needle2, args) -> torch.optim.AdamW:
    """AdamW; weight decay on the matrices only (the embedding included), never on the norm scales,
    gates, diagonals, mHC scales/biases or taps."""
    decay, plain = [], []
    matrices = {"embedding", *M.LAYER_CQ, *M.MHC_CQ, "engram_tables", "engram_key_proj",
                "engram_value_proj"}
    for name, p in net.named_parameters():
        (decay if name in matrices else plain).append(p)
    return torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                              {"params": plain, "weight_decay": 0.0}],
                             lr=args.lr, betas=(0.9, 0.95), eps=1e-8)


# ---------------------------------------------------------------------------------------------
# Checkpoints and the log
# ---------------------------------------------------------------------------------------------

def save_checkpoint(path: str, net, opt, state: dict, args) -> None:
    """Everything a resumed run needs, written to a temporary name and renamed (an interrupted
    write never replaces a good checkpoint)."""
    payload = {
        "model": net.state_dict(), "optimizer": opt.state_dict(), "state": state,
        "geometry": json.loads(net.g.to_json()), "bits_map": args.bits_map,
        "args": {k: v for k, v in vars(args).items()},
        "rng": {"torch": torch.get_rng_state(), "python": random.getstate(),
                "numpy": np.random.get_state()},
    }
    tmp = path + ".tmp"
    torch.save(payload, tmp)
    os.replace(tmp, path)


def read_log(path: str, up_to_step: int) -> list:
    """The rows of an existing log up to a step (a resumed run drops rows it will write again)."""
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return [row for row in csv.DictReader(f) if int(row["step"]) <= up_to_step]


def write_log(path: str, rows: list) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=LOG_FIELDS)
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, path)


def plot_log(rows: list, path: str) -> None:
    """Training loss (and eval loss where measured) against tokens seen, as a PNG (plot_runs.py)."""
    if not rows:
        return
    from plot_runs import loss_figure
    loss_figure([(float(r["tokens"]), float(r["loss"])) for r in rows],
                [(float(r["tokens"]), float(r["eval_loss"])) for r in rows if r.get("eval_loss")], path)


@torch.no_grad()
def evaluate(net, examples: list, batch_tokens: int, device) -> tuple[float, float, float]:
    """Teacher-forced reply loss and token accuracy over `examples`, and the share of examples whose
    decision token (decision_index: [] or a call) the argmax gets right."""
    net.eval()
    lengths = np.array([sequence_length(e) for e in examples])
    total_loss, total_correct, total, decisions_right = 0.0, 0, 0, 0
    for indices in epoch_batches(lengths, batch_tokens, 0, 0):
        batch = make_batch(examples, indices, device)
        logits = net(batch["tokens"], batch["positions"])
        total_loss += F.cross_entropy(logits, batch["targets"], reduction="sum").item()
        right = (logits.argmax(-1) == batch["targets"]).cpu().numpy()
        total_correct += int(right.sum())
        total += batch["targets"].numel()
        starts = np.cumsum([0] + [len(examples[k][1]) for k in indices[:-1]])
        decisions_right += int(sum(right[start + decision_index(examples[k][1])]
                                   for start, k in zip(starts, indices)))
    net.train()
    return total_loss / total, total_correct / total, decisions_right / len(examples)


# ---------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------

def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="directory with train.jsonl (or a .jsonl file)")
    ap.add_argument("--eval", help="JSONL of held-out examples, evaluated at every checkpoint")
    ap.add_argument("--eval-examples", type=int, default=256, help="how many of them (default 256)")
    ap.add_argument("--eval-also", action="append", metavar="FILE",
                    help="another held-out JSONL evaluated at the same points (repeatable), printed but not "
                         "logged: e.g. split C, whose decision share is how often [] wins")
    ap.add_argument("--tokenizer", help="SentencePiece model (needed unless the data is tokenised)")
    ap.add_argument("--geometry",
                    help="preset (tiny, small, base, d256l8, d256l6, d384l6, d192l8; default d256l6), JSON, "
                         "or JSON file; "
                         "vocab comes from the tokenizer when one is given")
    ap.add_argument("--bits-map", help="CQ widths, needle-pack's syntax (default embedding=4,mhc=4,default=2)")
    ap.add_argument("--out", required=True, help="run directory: checkpoint.pt, log.csv, loss.png")
    ap.add_argument("--resume", action="store_true", help="continue OUT/checkpoint.pt")
    ap.add_argument("--init", metavar="CHECKPOINT",
                    help="a new run (its own optimiser, schedule and data order) that starts from the "
                         "weights of another run's checkpoint, or of a packed archive (.cact: its "
                         "dequantised weights, unpack.py): its geometry and bits map are taken, and "
                         "the tokenizer must be the same (training on other data, docs/training.md)")
    ap.add_argument("--minutes", type=float, help="time budget (training time, resumes included)")
    ap.add_argument("--tokens", type=float, help="token budget (prompt + reply tokens processed)")
    ap.add_argument("--steps", type=int, help="step budget")
    ap.add_argument("--batch-tokens", type=int, help="padded tokens per batch (default 4096)")
    ap.add_argument("--lr", type=float, help="peak learning rate (default 3e-3)")
    ap.add_argument("--min-lr", type=float, help="final learning rate (default 3e-4)")
    ap.add_argument("--warmup", type=int, help="warmup steps (default 100)")
    ap.add_argument("--weight-decay", type=float, help="AdamW weight decay of the matrices (default 0.1)")
    ap.add_argument("--clip", type=float, help="gradient norm clip (default 1.0)")
    ap.add_argument("--decision-weight", type=float,
                    help="loss weight of each reply's decision token (the one after <tool_call>: [] or a "
                         "call) against 1 for the others (default 1: a plain mean; the logged loss is the "
                         "weighted mean, the eval loss stays plain)")
    ap.add_argument("--bpe-dropout", type=float,
                    help="BPE dropout on the training prompts: each merge of the tokenizer skipped with this "
                         "probability when the examples are cut into pieces, so that a word is also seen in "
                         "smaller pieces than its usual ones (default 0: the usual pieces; the replies and "
                         "the held-out files keep the usual pieces)")
    ap.add_argument("--dropout", type=float,
                    help="dropout on each block's attention and MLP outputs, in training only (model.Needle2."
                         "dropout; docs/training.md, \"Dropout\"): the exported model and every engine are "
                         "unchanged (default 0: none)")
    ap.add_argument("--seed", type=int, help="initial weights and data order (default 1)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="CPU threads (default: all cores)")
    ap.add_argument("--log-every", type=int, default=10, help="steps per log row (default 10)")
    ap.add_argument("--checkpoint-minutes", type=float, default=5.0)
    ap.add_argument("--replan-every", type=int,
                    help="with --minutes: steps between re-estimates of the total step count (default 50)")
    ap.add_argument("--stop-after", type=int,
                    help="end this invocation after this many steps (checkpointed; the schedule still spans "
                         "the whole budget): a long run in slices, continued with --resume")
    ap.add_argument("--stop-at", type=int,
                    help="end the run at this step (checkpointed; the schedule still spans the whole budget): "
                         "a run cut where another was (npm run train's continued run)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    if not args.resume:
        for key, value in RUN_SETTINGS.items():
            if getattr(args, key) is None:
                setattr(args, key, value)
    if args.minutes is None and args.tokens is None and args.steps is None:
        ap.error("give a budget: --minutes, --tokens and/or --steps")
    if args.init and args.resume:
        ap.error("--init starts a new run; --resume continues one: give one of them")
    for name in ("bpe_dropout", "dropout"):  # probabilities; 1 would drop everything
        value = getattr(args, name)
        if value is not None and not 0 <= value < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 0 and below 1, not {value}")
    return args


def run(args) -> dict:
    """Trains; returns the final state (step, tokens, loss ...)."""
    torch.set_num_threads(max(1, args.threads))
    torch.set_flush_denormal(True)  # denormal floats make CPU kernels many times slower
    # ... which numpy notices when matplotlib asks it for float limits: not a problem here.
    warnings.filterwarnings("ignore", message="The value of the smallest subnormal")
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no CUDA device is available")
    os.makedirs(args.out, exist_ok=True)
    ckpt_path = os.path.join(args.out, CHECKPOINT)
    log_path = os.path.join(args.out, "log.csv")
    say = (lambda *a: None) if args.quiet else (lambda *a: print(*a, flush=True))

    resumed = None
    if args.resume:
        if not os.path.exists(ckpt_path):
            raise SystemExit(f"--resume: {ckpt_path} does not exist")
        resumed = torch.load(ckpt_path, map_location="cpu")
        if "averaged" in resumed:
            raise SystemExit(f"--resume: {ckpt_path} is an average of two runs (average.py), not a point a run "
                             f"can resume from; start a new run from it with --init")
        for key in RUN_SETTINGS:
            given, kept = getattr(args, key), resumed["args"].get(key, RUN_SETTINGS[key])
            if given is not None and given != kept:
                say(f"--resume: {key} stays the checkpoint's {kept!r} (not {given!r})")
            setattr(args, key, kept)

    initial = None
    if args.init:
        import unpack
        initial = unpack.start_from(args.init)
        source = "archive" if "archive" in initial else "checkpoint"
        for key in ("geometry", "bits_map"):
            kept = initial["args"][key]
            if getattr(args, key) != kept:
                say(f"--init: {key} is the {source}'s {kept!r}")
            setattr(args, key, kept)

    data_file = args.data if args.data.endswith(".jsonl") else os.path.join(args.data, "train.jsonl")
    t0 = time.perf_counter()
    examples, group_ids = load_grouped_examples(data_file, args.tokenizer, os.path.join(args.out, "cache"),
                                                args.bpe_dropout, args.seed)
    if resumed or initial:
        g = M.Geometry.from_dict((resumed or initial)["geometry"])
    else:
        vocab = None
        if args.tokenizer:
            import sentencepiece as spm
            vocab = spm.SentencePieceProcessor(model_file=args.tokenizer).get_piece_size()
        g = M.geometry_from(args.geometry, vocab)
    bad = [k for k, e in enumerate(examples) if max(e[0].max(), e[1].max()) >= g.vocab]
    if bad:
        raise SystemExit(f"{data_file}: example {bad[0]} has a token id >= vocab {g.vocab}")
    lengths = np.array([sequence_length(e) for e in examples])
    too_long = int((lengths > g.max_seq_len).sum())
    if too_long:
        keep = lengths <= g.max_seq_len
        examples = [e for e, k in zip(examples, keep) if k]
        lengths = lengths[keep]
        group_ids = group_ids[keep] if group_ids is not None else None
        say(f"dropped {too_long} examples longer than max_seq_len {g.max_seq_len}")
    if group_ids is None:
        # One example a sequence (make_batch, forward).
        plan_batches = lambda epoch: epoch_batches(lengths, args.batch_tokens, args.seed, epoch)  # noqa: E731
        build_batch = lambda indices: make_batch(examples, indices, device, args.decision_weight)  # noqa: E731
        batch_loss = reply_loss
        epoch_tokens = int(lengths.sum())
    else:
        # Groups: each shared prefix runs once (make_grouped_batch, forward_grouped).
        groups = make_groups(examples, group_ids)
        prefix_lengths = np.array([len(p) for p, _ in groups])
        suffix_lengths = [[group_suffix_length(x) for x in m] for _, m in groups]
        plan_batches = lambda epoch: epoch_group_batches(  # noqa: E731
            prefix_lengths, suffix_lengths, args.batch_tokens, args.seed, epoch)
        build_batch = lambda indices: make_grouped_batch(groups, indices, device, args.decision_weight)  # noqa: E731
        batch_loss = grouped_reply_loss
        epoch_tokens = int(prefix_lengths.sum() + sum(map(sum, suffix_lengths)))
        say(f"{len(groups)} groups of {len(examples) / len(groups):.2f} examples: prefix {prefix_lengths.mean():.1f} "
            f"tokens, suffix {np.mean([x for s in suffix_lengths for x in s]):.1f}; {epoch_tokens:,} tokens run "
            f"instead of {lengths.sum():,} ungrouped ({lengths.sum() / epoch_tokens:.2f}x fewer)")
    def held_out(path: str) -> list:
        loaded = load_examples(path, args.tokenizer, os.path.join(args.out, "cache"))
        return [e for e in loaded if sequence_length(e) <= g.max_seq_len][:args.eval_examples]
    eval_examples = held_out(args.eval) if args.eval else None
    # --eval-also: (name, examples) of further held-out files, reported beside --eval but not logged
    also = [(os.path.basename(path), held_out(path)) for path in args.eval_also or []]
    say(f"{len(examples)} examples ({lengths.sum():,} tokens, mean {lengths.mean():.1f}) loaded in "
        f"{time.perf_counter() - t0:.1f} s")

    torch.manual_seed(args.seed)
    net = M.Needle2(g, cq.BitsMap.parse(args.bits_map), seed=args.seed).to(device)
    net.dropout = args.dropout
    if initial:
        net.load_state_dict(initial["model"])
        if "archive" in initial:
            say(f"--init: the dequantised weights of {args.init} (bits map {args.bits_map})")
        else:
            say(f"--init: the weights of {args.init} (step {initial['state']['step']}, "
                f"{initial['state']['tokens']:,} tokens)")
    opt = make_optimizer(net, args)
    state = {"step": 0, "epoch": 0, "batch": 0, "tokens": 0, "elapsed": 0.0, "total_steps": None,
             "planned_at": 0, "examples": 0}
    if resumed:
        net.load_state_dict(resumed["model"])
        opt.load_state_dict(resumed["optimizer"])
        state = resumed["state"]
        state.setdefault("examples", 0)  # checkpoints before the examples count: counted from here
        torch.set_rng_state(resumed["rng"]["torch"])
        random.setstate(resumed["rng"]["python"])
        np.random.set_state(resumed["rng"]["numpy"])
        say(f"resumed at step {state['step']} (epoch {state['epoch']}, batch {state['batch']}, "
            f"{state['tokens']:,} tokens, {state['elapsed'] / 60:.1f} min)")
    else:
        say(f"geometry {g.to_json()}\n{M.count_parameters(net):,} parameters, bits map {args.bits_map}")
    rows = read_log(log_path, state["step"])

    def plan_total() -> int | None:
        """The step count the schedule decays over: the tightest of the budgets."""
        limits = []
        if args.steps:
            limits.append(args.steps)
        if args.tokens:
            per_step = state["tokens"] / state["step"] if state["step"] else epoch_tokens / max(1, len(batches))
            limits.append(max(1, math.ceil(args.tokens / per_step)))
        if args.minutes and state["step"] >= 10:
            per_step = state["elapsed"] / state["step"]
            limits.append(max(state["step"] + 1, int(args.minutes * 60 / per_step)))
        return min(limits) if limits else None

    batches = plan_batches(state["epoch"])
    # A fresh run plans its last step; a resumed one keeps its plan unless the budget changed (or is a
    # time budget, whose plan follows the measured speed anyway).
    budget_changed = resumed and any(getattr(args, k) != resumed["args"].get(k) for k in ("steps", "tokens"))
    if state["total_steps"] is None or budget_changed or (resumed and args.minutes and state["step"] >= 10):
        state["total_steps"] = plan_total()
        state["planned_at"] = state["step"]
    last_save = time.perf_counter()
    stop_at = state["step"] + args.stop_after if args.stop_after else None
    if args.stop_at is not None:
        stop_at = args.stop_at if stop_at is None else min(stop_at, args.stop_at)
    window = {"loss": 0.0, "correct": 0, "targets": 0, "tokens": 0, "time": 0.0, "steps": 0, "examples": 0}
    say("tok/s: prompt + reply tokens the model runs per second (a group's shared prefix once); ex/s: "
        "examples per second")

    def log_row(lr):
        """One log row: the averages of the steps since the last row."""
        nonlocal window
        row = {"step": state["step"], "epoch": state["epoch"], "tokens": state["tokens"],
               "elapsed_s": f"{state['elapsed']:.1f}", "lr": f"{lr:.3e}",
               "loss": f"{window['loss'] / window['targets']:.4f}",
               "accuracy": f"{window['correct'] / window['targets']:.4f}",
               "tokens_per_s": f"{window['tokens'] / window['time']:.0f}", "eval_loss": "",
               "eval_accuracy": "", "examples": state["examples"],
               "examples_per_s": f"{window['examples'] / window['time']:.2f}"}
        rows.append(row)
        say(f"step {row['step']}/{state['total_steps']} tokens {row['tokens']:,} loss {row['loss']} "
            f"acc {row['accuracy']} lr {row['lr']} {row['tokens_per_s']} tok/s {row['examples_per_s']} ex/s "
            f"{state['elapsed'] / 60:.1f} min")
        window = {k: 0 if k != "loss" else 0.0 for k in window}

    def evaluate_held_out():
        """--eval into the last log row and the output; --eval-also into the output only."""
        if not rows:
            return
        if eval_examples:
            loss, accuracy, decision = evaluate(net, eval_examples, args.batch_tokens, device)
            rows[-1]["eval_loss"], rows[-1]["eval_accuracy"] = f"{loss:.4f}", f"{accuracy:.4f}"
            say(f"eval loss {loss:.4f} accuracy {accuracy:.4f} decision {decision:.4f}")
        for name, examples_also in also:
            loss, accuracy, decision = evaluate(net, examples_also, args.batch_tokens, device)
            say(f"eval {name}: loss {loss:.4f} accuracy {accuracy:.4f} decision {decision:.4f}")

    def save():
        save_checkpoint(ckpt_path, net, opt, state, args)
        write_log(log_path, rows)
        plot_log(rows, os.path.join(args.out, "loss.png"))

    while True:
        total = state["total_steps"]
        if total is not None and state["step"] >= total:
            break
        if args.minutes and state["elapsed"] >= args.minutes * 60:
            break
        if args.tokens and state["tokens"] >= args.tokens:
            break
        if stop_at is not None and state["step"] >= stop_at:
            break
        if state["batch"] >= len(batches):
            state["epoch"] += 1
            state["batch"] = 0
            batches = plan_batches(state["epoch"])
        start = time.perf_counter()
        batch = build_batch(batches[state["batch"]])
        # While the time budget has no plan yet (the first 10 steps), the warmup is all that runs.
        lr = learning_rate(state["step"], total or 10 ** 9, args.lr, args.min_lr, args.warmup)
        for group in opt.param_groups:
            group["lr"] = lr
        loss, correct = batch_loss(net, batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), args.clip)
        opt.step()
        loss_value = loss.item()
        if not math.isfinite(loss_value):
            raise SystemExit(f"step {state['step']}: the loss is {loss_value}; stopping (last checkpoint kept)")
        if device.type == "cuda":
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
        state["step"] += 1
        state["batch"] += 1
        state["tokens"] += batch["n_tokens"]
        state["examples"] += batch["n_examples"]
        state["elapsed"] += elapsed
        n_targets = batch["targets"].numel()
        window["loss"] += loss_value * n_targets
        window["correct"] += int(correct)
        window["targets"] += n_targets
        window["tokens"] += batch["n_tokens"]
        window["examples"] += batch["n_examples"]
        window["time"] += elapsed
        window["steps"] += 1

        # With a time budget, re-estimate the horizon from the speed so far (kept in the checkpoint).
        if args.minutes and (state["step"] == 10 or state["step"] - state["planned_at"] >= args.replan_every):
            state["total_steps"] = plan_total()
            state["planned_at"] = state["step"]

        if state["step"] % args.log_every == 0 or state["step"] == state["total_steps"]:
            log_row(lr)
        # Checkpoints fall on log rows, so a resumed run's log windows line up with the first run's.
        if rows and rows[-1]["step"] == state["step"] and \
                time.perf_counter() - last_save >= args.checkpoint_minutes * 60:
            evaluate_held_out()
            save()
            last_save = time.perf_counter()

    if window["steps"]:  # the steps since the last row (a budget ended between rows)
        log_row(lr)
    evaluate_held_out()
    save()
    say(f"done: {state['step']} steps, {state['tokens']:,} tokens in {state['elapsed'] / 60:.1f} min; "
        f"checkpoint {ckpt_path}")
    return {"state": state, "rows": rows}


def main(argv=None) -> int:
    run(parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
