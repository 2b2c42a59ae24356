#!/usr/bin/env python3
"""Moves a trained model onto another tokenizer of the same size: the vocabulary transplant.

    /usr/bin/python3 tools/train/transplant.py --init models/needlework-tools.cact \
        --old-tokenizer build/train/tokenizer/tokenizer.model \
        --new-tokenizer build/train/tokenizer-sd/tokenizer.model \
        --out build/train/transplant

A new tokenizer (for instance one trained with --split-digits, training-data.md, "Tokenizer") learns
mostly the same pieces as the old one, at other ids. Two things in the model are keyed by token id:
the embedding rows (tied with the logits) and the engram tables, whose slots are hashes of the ids of
the last tokens (docs/model.md, "Helpers and constants"). So the new tokenizer's pieces are first put in the old order:
a piece both tokenizers have keeps its old id, and the pieces only the new one has take the ids of
the pieces it dropped, in its own order. SentencePiece's BPE merges by score, the leftmost on ties, and
the scores go with the pieces, so the reordered model cuts every text into the same pieces as the new
one (checked here on the training requests). Then every shared piece keeps its embedding row and
every engram slot whose n-gram holds only shared pieces keeps its entry; a new piece's row starts as
the mean of the old rows of the old pieces that spell it.

Writes OUT/tokenizer.model (the new tokenizer in the old order) and OUT/checkpoint.pt, a starting
point for `train.py --init` with `--tokenizer OUT/tokenizer.model` (the weights only: no optimiser,
step 0), and prints how many pieces were kept.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tokenizer import PIECES_FIELD, SPACE, piece_text, pieces_of, split_fields  # noqa: E402


def aligned_model(old_model: bytes, new_model: bytes) -> tuple[bytes, list, list]:
    """The new model's pieces in the old model's order (shared pieces at their old ids, the new ones
    at the freed ids); returns the model's bytes, the new pieces by id, and which ids are shared."""
    old = pieces_of(old_model)
    new_fields = split_fields(new_model)
    new_entries = [e for f, e in new_fields if f == PIECES_FIELD]
    if len(old) != len(new_entries):
        raise SystemExit(f"the tokenizers differ in size ({len(old)} and {len(new_entries)} pieces)")
    by_text = {piece_text(e): e for e in new_entries}
    old_set = set(old)
    fresh = iter([e for e in new_entries if piece_text(e) not in old_set])
    order, shared = [], []
    for text in old:
        if text in by_text:
            order.append(by_text[text])
            shared.append(True)
        else:
            order.append(next(fresh))
            shared.append(False)
    others = b"".join(e for f, e in new_fields if f != PIECES_FIELD)
    return b"".join(order) + others, [piece_text(e) for e in order], shared


def spelling(text: str, old_ids: dict) -> list:
    """The fewest old pieces that spell text (byte pieces where no learned piece covers a character)."""
    best = [(0, [])] + [None] * len(text)
    for end in range(1, len(text) + 1):
        for start in range(end):
            if best[start] is None:
                continue
            chunk = text[start:end]
            if chunk in old_ids:
                ids = [old_ids[chunk]]
            elif end - start == 1:
                ids = [old_ids[f"<0x{b:02X}>"] for b in chunk.encode("utf-8")]
            else:
                continue
            cost = best[start][0] + len(ids)
            if best[end] is None or cost < best[end][0]:
                best[end] = (cost, best[start][1] + ids)
    return best[len(text)][1]


def transplant(initial: dict, old_pieces: list, new_pieces: list, shared: list, word_rows=False) -> dict:
    """initial's weights with the embedding rows of the new pieces made from the old rows; with
    word_rows, a new piece X that the old tokenizer had as the word ▁X starts from that word's row
    (for a new tokenizer whose ▁ is a piece of its own: X then stands where ▁X stood)."""
    model = {k: v.clone() for k, v in initial["model"].items()}
    old_emb = initial["model"]["embedding"]
    old_ids = {p: i for i, p in enumerate(old_pieces)}
    emb = model["embedding"]
    for i, (piece, kept) in enumerate(zip(new_pieces, shared)):
        if kept:
            continue
        if word_rows and SPACE + piece in old_ids:
            emb[i] = old_emb[old_ids[SPACE + piece]]
        else:
            emb[i] = old_emb[spelling(piece, old_ids)].mean(dim=0)
    return model


def check_same_cuts(aligned_path: str, new_path: str, texts: list) -> None:
    import sentencepiece as spm
    a = spm.SentencePieceProcessor(model_file=aligned_path)
    b = spm.SentencePieceProcessor(model_file=new_path)
    for k, text in enumerate(texts):
        if a.encode(text, out_type=str) != b.encode(text, out_type=str):
            raise SystemExit(f"text {k}: the reordered tokenizer cuts it differently from the new one")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--init", required=True, help="the trained model: a checkpoint or a packed archive (.cact)")
    ap.add_argument("--old-tokenizer", required=True, help="the SentencePiece model it was trained with")
    ap.add_argument("--new-tokenizer", required=True, help="the SentencePiece model to move it to")
    ap.add_argument("--check", help="JSONL of examples whose rendered text both must cut alike (default: none)")
    ap.add_argument("--check-examples", type=int, default=2000)
    ap.add_argument("--word-rows", action="store_true",
                    help="a new piece X that the old tokenizer had as the word ▁X starts from that word's row "
                         "instead of the mean of the old pieces that spell X (for a --space-piece tokenizer)")
    ap.add_argument("--out", required=True, help="directory for tokenizer.model and checkpoint.pt")
    args = ap.parse_args(argv)

    with open(args.old_tokenizer, "rb") as f:
        old_model = f.read()
    with open(args.new_tokenizer, "rb") as f:
        new_model = f.read()
    aligned, new_pieces, shared = aligned_model(old_model, new_model)
    os.makedirs(args.out, exist_ok=True)
    tokenizer_path = os.path.join(args.out, "tokenizer.model")
    with open(tokenizer_path, "wb") as f:
        f.write(aligned)
    if args.check:
        from render import prompt_text, target_text
        with open(args.check, encoding="utf-8") as f:
            examples = [json.loads(line) for _, line in zip(range(args.check_examples), f)]
        check_same_cuts(tokenizer_path, args.new_tokenizer,
                        [prompt_text(e) + target_text(e) for e in examples])

    import torch
    import unpack
    initial = unpack.start_from(args.init)
    old_pieces = pieces_of(old_model)
    if initial["model"]["embedding"].shape[0] != len(old_pieces):
        raise SystemExit(f"{args.init}: {initial['model']['embedding'].shape[0]} embedding rows, "
                         f"the old tokenizer has {len(old_pieces)} pieces")
    out = {"model": transplant(initial, old_pieces, new_pieces, shared, args.word_rows),
           "geometry": initial["geometry"],
           "bits_map": initial["args"]["bits_map"],
           "args": {k: initial["args"][k] for k in ("geometry", "bits_map")},
           "state": {"step": 0, "tokens": 0},
           "transplant": {"from": args.init, "old_tokenizer": args.old_tokenizer,
                          "new_tokenizer": args.new_tokenizer, "kept": sum(shared)}}
    torch.save(out, os.path.join(args.out, "checkpoint.pt"))
    print(f"{sum(shared)} of {len(shared)} pieces kept their ids and rows; {len(shared) - sum(shared)} new "
          f"pieces start from the old pieces that spell them -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
