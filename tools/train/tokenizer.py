#!/usr/bin/env python3
"""The SentencePiece tokenizer for our model, trained on the rendered training split.

    /usr/bin/python3 tools/train/tokenizer.py --data build/train/data --vocab 4096 --out build/train/tokenizer

Settings are exactly those of scripts/make-test-models.sh (Needle's tokenizer, docs/tokenizer.md):
BPE, byte fallback, identity normalisation, no whitespace collapsing, dummy prefix, pad/eos/bos/unk at
0..3, the ten chat markers at 4..13 (so the byte pieces are at 14..269), character coverage 0.9995.
The corpus is the rendered text (prompt + target, render.py) of --sample training examples drawn with
--seed. Writes tokenizer.model, tokenizer.vocab and token_stats.json (prompt and target token counts,
render.encode_example's, of up to --stats-sample examples of each split) into --out.
"""

import argparse
import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from render import prompt_text, target_text  # noqa: E402

MARKERS = ["<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tools>", "</tools>", "<tool_call>",
           "</tool_call>", "<tool_result>", "</tool_result>"]
SPECIALS = ["<pad>", "</s>", "<s>", "<unk>"]
SPLITS = ("train", "A", "B", "C")
TOOL_CALL_ID = len(SPECIALS) + MARKERS.index("<tool_call>")  # the reply's opening marker (id 10)
MAX_SENTENCE_BYTES = 4192  # SentencePiece's default: longer corpus lines are skipped


def expected_layout():
    """Pieces 0..269: the four specials, the ten markers, then the 256 byte pieces."""
    return SPECIALS + MARKERS + [f"<0x{b:02X}>" for b in range(256)]


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def write_corpus(examples, path):
    """The rendered examples, one text line per line of the prompt and target; returns the number of
    lines longer than SentencePiece reads (expected 0)."""
    too_long = 0
    with open(path, "w", encoding="utf-8") as f:
        for ex in examples:
            text = prompt_text(ex) + target_text(ex)
            for line in text.split("\n"):
                if len(line.encode("utf-8")) > MAX_SENTENCE_BYTES:
                    too_long += 1
                f.write(line)
                f.write("\n")
    return too_long


SPACE = "\u2581"  # SentencePiece's space (▁): with space_piece, a piece of its own


def train(corpus, prefix, vocab, split_digits=False, space_piece=False):
    """spm_train with Needle's settings; split_digits: no learned piece holds a digit beside any
    other character, so a number has the same pieces in a request and in a reply (training-data.md,
    "Tokenizer"); space_piece: ▁ is a piece of its own that no learned piece holds, so a word has
    the same pieces after a space (in a request) as after a quote (the first word of a reply's
    string value). Encoders need nothing new for either: they only merge to pieces the model has,
    and ▁, exported as a normal piece (docs/tokenizer.md, "The importer"), has none to merge into."""
    import sentencepiece as spm
    spm.SentencePieceTrainer.train(
        input=corpus, model_prefix=prefix, model_type="bpe", vocab_size=vocab, byte_fallback=True,
        pad_id=0, eos_id=1, bos_id=2, unk_id=3,
        pad_piece="<pad>", eos_piece="</s>", bos_piece="<s>", unk_piece="<unk>",
        user_defined_symbols=MARKERS + ([SPACE] if space_piece else []),
        normalization_rule_name="identity", remove_extra_whitespaces=False, add_dummy_prefix=True,
        character_coverage=0.9995, input_sentence_size=0, num_threads=2, minloglevel=2,
        split_digits=split_digits)


# --- the model file: its protobuf wire format, read only as far as its pieces ---------------------
# (space_after_bytes and transplant.py reorder the `pieces` entries and change nothing else)

PIECES_FIELD = 1  # ModelProto.pieces: repeated SentencePiece {1: piece, 2: score, 3: type}


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if at >= len(data):
            raise ValueError("a varint runs past the end of the model")
        b = data[at]
        at += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, at
        shift += 7


def split_fields(data: bytes) -> list:
    """The top-level fields of a protobuf message: (field number, the field's whole encoding)."""
    fields, at = [], 0
    while at < len(data):
        start = at
        key, at = _varint(data, at)
        field, wire = key >> 3, key & 7
        if wire == 0:
            _, at = _varint(data, at)
        elif wire == 1:
            at += 8
        elif wire == 2:
            length, at = _varint(data, at)
            at += length
        elif wire == 5:
            at += 4
        else:
            raise ValueError(f"field {field}: wire type {wire} is not read here")
        if at > len(data):
            raise ValueError(f"field {field} runs past the end of the model")
        fields.append((field, data[start:at]))
    return fields


def piece_text(encoded: bytes) -> str:
    """The piece string (field 1) of one encoded ModelProto.pieces entry."""
    _, at = _varint(encoded, 0)  # the entry's key
    _, at = _varint(encoded, at)  # its length
    for field, inner in split_fields(encoded[at:]):
        if field == 1:
            _, k = _varint(inner, 0)
            length, k = _varint(inner, k)
            return inner[k:k + length].decode("utf-8")
    raise ValueError("a piece without its string")


def pieces_of(model: bytes) -> list:
    """A SentencePiece model's piece strings by id."""
    return [piece_text(e) for f, e in split_fields(model) if f == PIECES_FIELD]


def space_after_bytes(model_path):
    """Rewrite a space_piece model so that ▁ comes right after the byte pieces (id 270), not before
    them: ids 0..269 keep Needle's layout (check_layout). An id does not change how BPE cuts a text
    (pieces merge by score and ▁ merges with nothing), only which row of the model a piece uses."""
    with open(model_path, "rb") as f:
        fields = split_fields(f.read())
    pieces = [e for field, e in fields if field == PIECES_FIELD]
    space = [e for e in pieces if piece_text(e) == SPACE]
    if len(space) != 1:
        raise RuntimeError(f"{model_path}: {len(space)} pieces spell {SPACE}, not 1")
    rest = [e for e in pieces if e is not space[0]]
    fixed = len(expected_layout())
    order = rest[:fixed] + space + rest[fixed:]
    with open(model_path, "wb") as f:
        f.write(b"".join(order) + b"".join(e for field, e in fields if field != PIECES_FIELD))


def check_layout(model_path, vocab):
    """Raise unless the model has `vocab` pieces and ids 0..269 are the expected pieces."""
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=model_path)
    if sp.get_piece_size() != vocab:
        raise RuntimeError(f"{model_path}: {sp.get_piece_size()} pieces, not {vocab}: the corpus is too small")
    for i, want in enumerate(expected_layout()):
        got = sp.id_to_piece(i)
        if got != want:
            raise RuntimeError(f"{model_path}: id {i} is {got!r}, not {want!r} (ids 0..269 must be "
                               "<pad> </s> <s> <unk>, the ten markers, <0x00>..<0xFF>)")
    return sp


def _summary(values):
    values = sorted(values)
    n = len(values)
    if n == 0:
        return {}
    return {"mean": round(sum(values) / n, 2), "p50": values[n // 2], "p90": values[int(n * 0.9)],
            "p99": values[min(n - 1, int(n * 0.99))], "max": values[-1]}


def token_counts(sp, examples, batch=5000):
    """(prompt lengths, target lengths) as render.encode_example gives them (BOS and EOS
    included), encoded in batches on two threads."""
    prompts, targets = [], []
    for i in range(0, len(examples), batch):
        chunk = examples[i:i + batch]
        prompts += [1 + len(ids) for ids in sp.encode([prompt_text(ex) for ex in chunk], num_threads=2)]
        targets += [len(ids) + 1 for ids in sp.encode([target_text(ex) for ex in chunk], num_threads=2)]
    return prompts, targets


def token_stats(sp, data_dir, sample, seed):
    """Prompt, target and total token counts per split, over at most `sample` examples of each
    (drawn with `seed`; 0 = all). Encoding is the slow part: about 0.2 ms a prompt."""
    out = {}
    for split in SPLITS:
        path = os.path.join(data_dir, f"{split}.jsonl")
        if not os.path.exists(path):
            continue
        examples = read_jsonl(path)
        n = len(examples)
        if 0 < sample < n:
            examples = random.Random(seed).sample(examples, sample)
        prompts, targets = token_counts(sp, examples)
        out[split] = {"examples": n, "measured": len(examples), "prompt_tokens": _summary(prompts),
                      "target_tokens": _summary(targets),
                      "tokens_per_example": _summary([a + b for a, b in zip(prompts, targets)]),
                      "measured_tokens": sum(prompts) + sum(targets)}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="directory with train.jsonl (and A/B/C.jsonl)")
    ap.add_argument("--vocab", type=int, default=4096, help="vocabulary size (default 4096)")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--sample", type=int, default=40000,
                    help="training examples in the tokenizer's corpus (default 40000; 0 = all)")
    ap.add_argument("--stats-sample", type=int, default=20000,
                    help="examples per split whose tokens are counted (default 20000; 0 = all)")
    ap.add_argument("--seed", type=int, default=1, help="seed for drawing the sample (default 1)")
    ap.add_argument("--split-digits", action="store_true",
                    help="learn no piece that holds a digit beside another character (not in the "
                         "shipped model's tokenizer; default off)")
    ap.add_argument("--space-piece", action="store_true",
                    help="make ▁ a piece of its own that no learned piece holds, so a word is cut the "
                         "same after a space and after a quote (not in the shipped model's tokenizer; "
                         "default off)")
    args = ap.parse_args(argv)
    if args.vocab < 300:
        ap.error("--vocab must be at least 300 (270 fixed pieces come first)")
    train_path = os.path.join(args.data, "train.jsonl")
    if not os.path.exists(train_path):
        print(f"tokenizer: {train_path} does not exist (run data.py first)", file=sys.stderr)
        return 1
    start = time.time()
    examples = read_jsonl(train_path)
    if 0 < args.sample < len(examples):
        examples = random.Random(args.seed).sample(examples, args.sample)
    os.makedirs(args.out, exist_ok=True)
    corpus = os.path.join(args.out, "corpus.txt")
    too_long = write_corpus(examples, corpus)
    if too_long:
        print(f"tokenizer: warning: {too_long} corpus lines exceed {MAX_SENTENCE_BYTES} bytes and are "
              "skipped by the trainer", file=sys.stderr)
    prefix = os.path.join(args.out, "tokenizer")
    train(corpus, prefix + ".tmp", args.vocab, args.split_digits, args.space_piece)
    if args.space_piece:
        space_after_bytes(prefix + ".tmp.model")
    try:
        check_layout(prefix + ".tmp.model", args.vocab)
    except RuntimeError as e:
        print(f"tokenizer: {e}", file=sys.stderr)
        return 1
    os.replace(prefix + ".tmp.model", prefix + ".model")
    os.replace(prefix + ".tmp.vocab", prefix + ".vocab")
    os.remove(corpus)
    trained = time.time() - start
    sp = check_layout(prefix + ".model", args.vocab)
    stats = {"vocab": args.vocab, "corpus_examples": len(examples), "split_digits": args.split_digits,
             "space_piece": args.space_piece,
             "splits": token_stats(sp, args.data, args.stats_sample, args.seed)}
    with open(os.path.join(args.out, "token_stats.json"), "w", encoding="utf-8") as f:
        json.dump(stats, f, indent=1)
    for split, s in stats["splits"].items():
        print(f"{split:5s} {s['examples']:7d} examples ({s['measured']} measured)  prompt tokens mean {s['prompt_tokens']['mean']:.1f} "
              f"(p90 {s['prompt_tokens']['p90']}, max {s['prompt_tokens']['max']})  target mean "
              f"{s['target_tokens']['mean']:.1f} (max {s['target_tokens']['max']})  per example "
              f"{s['tokens_per_example']['mean']:.1f}")
    print(f"tokenizer: {prefix}.model ({args.vocab} pieces) trained in {trained:.1f} s, "
          f"stats in {time.time() - start - trained:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
