#!/usr/bin/python3
"""Tests of grouped training: one shared prompt beginning, several requests (docs/training.md,
"Grouped batches").

    /usr/bin/python3 tests/train/test_grouped.py

Checked: Needle2.forward_grouped's logits at every suffix position equal forward()'s on the
concatenated sequence prefix + suffix (to 1e-5 relative, with and without fake quantisation, padded
prefixes and suffixes of different lengths, absent members, prefixes past the attention window, a
sink, an empty prefix); its gradients equal those of forward() on the concatenated sequences; its
errors; and train.py's grouped path: the split into prefix and suffixes, the batches of whole
groups, the grouped loss against the ungrouped loss of the same examples, and an exact resume.
"""
import json
import os
import shutil
import sys
import tempfile
import unittest

import numpy as np
import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "train"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import model as M  # noqa: E402
import train  # noqa: E402
from test_trainer import random_model  # noqa: E402

TOLERANCE = 1e-5  # max |grouped - forward| / max |forward| over the vocabulary, per position


def random_groups(seed: int, prefix_lengths: list, suffix_lengths: list, vocab: int, pad_prefix: int = 3,
                  pad_suffix: int = 2):
    """Right-padded random prefix [G, Lp] and suffix [G, K, Ls] tokens (padding random as well, so a
    leak from it shows), with the given real lengths."""
    gen = torch.Generator().manual_seed(seed)
    G, K = len(prefix_lengths), len(suffix_lengths[0])
    Lp = max(prefix_lengths) + pad_prefix
    Ls = max(max(s) for s in suffix_lengths) + pad_suffix
    prefix = torch.randint(14, vocab, (G, Lp), generator=gen)
    suffix = torch.randint(14, vocab, (G, K, Ls), generator=gen)
    return prefix, torch.tensor(prefix_lengths), suffix, torch.tensor(suffix_lengths)


def concatenated(prefix, plen, suffix, slen, g, k):
    return torch.cat([prefix[g, :plen[g]], suffix[g, k, :slen[g, k]]])


def max_relative(a: torch.Tensor, ref: torch.Tensor) -> float:
    """The largest per-position max|a - ref| / max|ref| (docs/numerics.md's maxRel)."""
    return float(((a - ref).abs().amax(-1) / ref.abs().amax(-1)).max())


class ForwardGrouped(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.net = random_model("tiny", "embedding=4,mhc=4,default=2")  # kv_window 32, sites 1 and 3

    def check_against_forward(self, net, prefix, plen, suffix, slen, sink=0, qat=True):
        with torch.no_grad():
            grouped = net.forward_grouped(prefix, plen, suffix, slen, sink=sink, qat=qat)
            G, K, Ls = suffix.shape
            checked = 0
            for g in range(G):
                for k in range(K):
                    n = int(slen[g, k])
                    if n == 0:
                        self.assertEqual(float(grouped[g, k].abs().max()), 0.0, "padding logits are zero")
                        continue
                    seq = concatenated(prefix, plen, suffix, slen, g, k)[None]
                    ref = net(seq, sink=sink, qat=qat)[0, int(plen[g]):]
                    rel = max_relative(grouped[g, k, :n], ref)
                    self.assertLess(rel, TOLERANCE, f"group {g} suffix {k} (sink {sink}, qat {qat})")
                    if n < Ls:
                        self.assertEqual(float(grouped[g, k, n:].abs().max()), 0.0)
                    checked += n
        return grouped, checked

    def test_logits_equal_forward_on_the_concatenated_sequences(self):
        # Prefixes of 40 (past the window of 32), 9, 1 and 20 tokens; suffixes of 1 to 15 tokens and an
        # absent member (length 0); both padded.
        prefix, plen, suffix, slen = random_groups(
            1, [40, 9, 1, 20], [[12, 5, 0], [1, 7, 3], [6, 6, 2], [15, 30, 9]], 512)
        for qat in (True, False):
            _, checked = self.check_against_forward(self.net, prefix, plen, suffix, slen, qat=qat)
            self.assertEqual(checked, int(slen.sum()))

    def test_with_a_sink_and_an_empty_prefix(self):
        prefix, plen, suffix, slen = random_groups(2, [38, 0], [[20, 4], [35, 1]], 512)
        with_sink, _ = self.check_against_forward(self.net, prefix, plen, suffix, slen, sink=4)
        without, _ = self.check_against_forward(self.net, prefix, plen, suffix, slen, sink=0)
        # The sink matters here (positions past the window), so the check above is not vacuous.
        self.assertGreater(float((with_sink[0, 0, :20] - without[0, 0, :20]).abs().max()), 1e-4)

    def test_the_prefix_reaches_the_suffix_through_attention_and_the_engram(self):
        # Changing one prefix token changes the suffix logits; its last tokens reach the first suffix
        # position through the hash (order 3) and the taps (p - 3j) as well as attention.
        prefix, plen, suffix, slen = random_groups(3, [12], [[6, 4]], 512)
        with torch.no_grad():
            before = self.net.forward_grouped(prefix, plen, suffix, slen)
            changed = prefix.clone()
            changed[0, 11] = 15 if int(prefix[0, 11]) != 15 else 16
            after = self.net.forward_grouped(changed, plen, suffix, slen)
        self.assertGreater(float((before - after)[0, :, 0].abs().max()), 1e-4)
        self.check_against_forward(self.net, changed, plen, suffix, slen)

    def test_logit_index_picks_suffix_positions(self):
        prefix, plen, suffix, slen = random_groups(4, [10, 7], [[5, 3], [2, 6]], 512)
        Ls = suffix.shape[2]
        with torch.no_grad():
            full = self.net.forward_grouped(prefix, plen, suffix, slen)
            index = torch.tensor([0, 4, Ls + 2, 3 * Ls + 5, 2 * Ls + 1])
            picked = self.net.forward_grouped(prefix, plen, suffix, slen, index)
        torch.testing.assert_close(picked, full.reshape(-1, full.shape[-1])[index], rtol=1e-6, atol=1e-6)

    def test_gradients_equal_forward_on_the_concatenated_sequences(self):
        """The same loss through both forwards gives the same gradient for every parameter: the
        prefix receives the gradients of every suffix."""
        prefix, plen, suffix, slen = random_groups(5, [36, 11], [[8, 3, 5], [6, 0, 9]], 512)
        G, K, Ls = suffix.shape
        gen = torch.Generator().manual_seed(9)
        positions, seqs, flat_positions = [], [], []
        for g in range(G):
            for k in range(K):
                n = int(slen[g, k])
                if n:
                    seqs.append(concatenated(prefix, plen, suffix, slen, g, k))
                    positions.append((g * K + k) * Ls + torch.arange(n))
                    flat_positions.append(int(plen[g]) + torch.arange(n))
        targets = torch.randint(14, 512, (sum(len(p) for p in positions),), generator=gen)

        self.net.zero_grad()
        logits = self.net.forward_grouped(prefix, plen, suffix, slen, torch.cat(positions))
        F.cross_entropy(logits, targets, reduction="sum").backward()
        grouped = {n: p.grad.clone() for n, p in self.net.named_parameters()}

        self.net.zero_grad()
        T = max(len(s) for s in seqs)
        batch = torch.zeros(len(seqs), T, dtype=torch.int64)
        for b, s in enumerate(seqs):
            batch[b, :len(s)] = s
        index = torch.cat([b * T + p for b, p in enumerate(flat_positions)])
        F.cross_entropy(self.net(batch, index), targets, reduction="sum").backward()
        for name, p in self.net.named_parameters():
            scale = float(p.grad.abs().max())
            self.assertGreater(scale, 0.0, name)
            self.assertLess(float((grouped[name] - p.grad).abs().max()) / scale, 1e-4, name)
        self.net.zero_grad()

    def test_training_geometry(self):
        """d256l6's attention window (256) and sites, two layers for speed, a real-sized group."""
        net = random_model('{"base": "d256l6", "num_layers": 2, "engram_sites": [0, 1]}', "embedding=4,mhc=4,default=2")
        prefix, plen, suffix, slen = random_groups(6, [230, 150], [[40, 31, 55, 18], [60, 2, 27, 0]], 4096)
        self.check_against_forward(net, prefix, plen, suffix, slen)

    def test_errors_name_the_problem(self):
        prefix, plen, suffix, slen = random_groups(7, [10, 7], [[5, 3], [2, 6]], 512)
        Ls = suffix.shape[2]
        with self.assertRaises(ValueError) as e:
            self.net.forward_grouped(prefix, plen, suffix, slen, torch.tensor([3 * Ls + 7]))
        self.assertIn("logit_index 31 (group 1, suffix 1, offset 7) is padding", str(e.exception))
        long_prefix = torch.randint(14, 512, (2, 254))
        with self.assertRaises(ValueError) as e:
            self.net.forward_grouped(long_prefix, torch.tensor([254, 7]), suffix, slen)
        self.assertIn("group 0 suffix 0: 254 + 5 tokens is longer than max_seq_len 256", str(e.exception))
        with self.assertRaises(ValueError) as e:
            self.net.forward_grouped(prefix, torch.tensor([10, 70]), suffix, slen)
        self.assertIn("prefix_lengths[1] = 70: outside 0..", str(e.exception))
        with self.assertRaises(ValueError) as e:
            self.net.forward_grouped(prefix, plen, suffix[0], slen)
        self.assertIn("expected [G=2, K, Ls]", str(e.exception))
        with self.assertRaises(ValueError) as e:
            self.net.forward_grouped(prefix, plen, suffix, slen[:, :1])
        self.assertIn("suffix_lengths [2, 1]: expected [G=2, K=2]", str(e.exception))
        with self.assertRaises(ValueError) as e:
            self.net.forward_grouped(prefix, torch.zeros(2, dtype=torch.long), suffix, torch.zeros(2, 2, dtype=torch.long))
        self.assertIn("every prefix and suffix is empty", str(e.exception))


def tokenised_groups(seed: int, n_groups: int, vocab: int = 512) -> list:
    """Lines of tokenised grouped data: each group's prompts share a random beginning."""
    rng = np.random.default_rng(seed)
    lines = []
    for group in range(n_groups):
        shared = [2] + rng.integers(14, vocab, int(rng.integers(5, 40))).tolist()
        for _ in range(int(rng.integers(1, 5))):
            prompt = shared + rng.integers(14, vocab, int(rng.integers(1, 12))).tolist()
            lines.append({"prompt_ids": prompt, "target_ids": rng.integers(14, vocab, int(rng.integers(1, 6))).tolist()
                          + [1], "group": group})
    return lines


class TrainerGrouped(unittest.TestCase):
    def test_make_groups_splits_at_the_longest_shared_beginning(self):
        ex = lambda p, t: (np.array(p, np.int32), np.array(t, np.int32))  # noqa: E731
        examples = [ex([2, 5, 6, 7, 8], [9, 1]), ex([2, 5, 6, 3], [10, 1]), ex([2, 5, 4, 8, 8], [11, 1]),
                    ex([2, 5, 6], [12, 1])]
        groups = train.make_groups(examples, np.array([0, 0, 0, 1]))
        self.assertEqual(len(groups), 2)
        prefix, members = groups[0]
        self.assertEqual(prefix.tolist(), [2, 5])
        self.assertEqual([(s.tolist(), t.tolist()) for s, t in members],
                         [([6, 7, 8], [9, 1]), ([6, 3], [10, 1]), ([4, 8, 8], [11, 1])])
        # A group of one: everything but the prompt's last token is shared.
        self.assertEqual(groups[1][0].tolist(), [2, 5])
        self.assertEqual(groups[1][1][0][0].tolist(), [6])
        # The shared beginning shrinks as members come (here at the second one, then stays).
        shrinking = train.make_groups([ex([2, 5, 6, 7], [1]), ex([2, 9, 6, 7], [1]), ex([2, 5, 6, 8], [1])],
                                      np.array([0, 0, 0]))
        self.assertEqual(shrinking[0][0].tolist(), [2])
        self.assertEqual([s.tolist() for s, _ in shrinking[0][1]], [[5, 6, 7], [9, 6, 7], [5, 6, 8]])
        # Identical prompts keep their last token in the suffix.
        same = train.make_groups([ex([2, 5, 6], [7, 1]), ex([2, 5, 6], [8, 1])], np.array([3, 3]))
        self.assertEqual(same[0][0].tolist(), [2, 5])

    def test_grouped_batch_and_loss_equal_the_ungrouped_ones(self):
        lines = tokenised_groups(1, 6)
        examples = [(np.array(x["prompt_ids"], np.int32), np.array(x["target_ids"], np.int32)) for x in lines]
        groups = train.make_groups(examples, np.array([x["group"] for x in lines]))
        batch = train.make_grouped_batch(groups, list(range(len(groups))), "cpu")
        flat = train.make_batch(examples, list(range(len(examples))), "cpu")
        self.assertEqual(batch["targets"].tolist(), flat["targets"].tolist())
        self.assertEqual(batch["n_examples"], len(examples))
        self.assertEqual(batch["n_tokens"], sum(len(p) for p, _ in groups)
                         + sum(train.group_suffix_length(x) for _, m in groups for x in m))
        self.assertLess(batch["n_tokens"], flat["n_tokens"])
        net = random_model("tiny", "embedding=4,mhc=4,default=2")
        with torch.no_grad():
            grouped_loss, grouped_correct = train.grouped_reply_loss(net, batch)
            flat_loss, flat_correct = train.reply_loss(net, flat)
        self.assertLess(abs(float(grouped_loss) - float(flat_loss)), 1e-5 * float(flat_loss))
        self.assertEqual(int(grouped_correct), int(flat_correct))

    def test_epoch_group_batches_cover_every_group_once_within_the_budget(self):
        rng = np.random.default_rng(0)
        prefix = rng.integers(100, 300, 400)
        suffix = [rng.integers(20, 90, int(rng.integers(1, 5))).tolist() for _ in range(400)]
        batches = train.epoch_group_batches(prefix, suffix, 4096, seed=5, epoch=3)
        self.assertEqual(sorted(k for b in batches for k in b), list(range(400)))
        padded = real = 0
        for b in batches:
            size = len(b) * (max(prefix[b]) + max(len(suffix[k]) for k in b) * max(max(suffix[k]) for k in b))
            self.assertLessEqual(size, 4096)
            padded += size
            real += sum(prefix[k] + sum(suffix[k]) for k in b)
        self.assertEqual(batches, train.epoch_group_batches(prefix, suffix, 4096, seed=5, epoch=3))
        self.assertNotEqual(batches, train.epoch_group_batches(prefix, suffix, 4096, seed=5, epoch=4))
        self.assertLess(padded / real, 1.6)  # random lengths: members of one group differ a lot
        big = train.epoch_group_batches(np.array([5000, 10]), [[10], [10]], 4096, seed=1, epoch=0)
        self.assertEqual(sorted(big), [[0], [1]])  # a group larger than the budget is a batch alone

    def test_loader_reads_groups_and_refuses_broken_ones(self):
        tmp = tempfile.mkdtemp()
        try:
            path = os.path.join(tmp, "train.jsonl")
            lines = tokenised_groups(2, 5)
            with open(path, "w") as f:
                f.writelines(json.dumps(x) + "\n" for x in lines)
            cache = os.path.join(tmp, "cache")
            for _ in range(2):  # the second read comes from the cache
                examples, groups = train.load_grouped_examples(path, None, cache)
                self.assertEqual(groups.tolist(), [x["group"] for x in lines])
                self.assertEqual([e[0].tolist() for e in examples], [x["prompt_ids"] for x in lines])
            self.assertEqual(len(train.load_examples(path, None)), len(lines))
            for broken, message in (
                    (lines[:2] + [{k: v for k, v in lines[2].items() if k != "group"}], "line 3: no \"group\""),
                    ([{k: v for k, v in lines[0].items() if k != "group"}, lines[1]], "line 2: a \"group\" in ungrouped"),
                    ([dict(lines[0], group=0), dict(lines[0], group=1), dict(lines[0], group=0)],
                     "line 3: group 0 again after other groups"),
                    ([dict(lines[0], group="a")], "line 1: group 'a' is not")):
                with open(path, "w") as f:
                    f.writelines(json.dumps(x) + "\n" for x in broken)
                with self.assertRaises(ValueError) as e:
                    train.load_grouped_examples(path, None)
                self.assertIn(message, str(e.exception))
        finally:
            shutil.rmtree(tmp)

    def test_a_grouped_run_logs_examples_and_resumes_exactly(self):
        tmp = tempfile.mkdtemp()
        try:
            data = os.path.join(tmp, "train.jsonl")
            lines = tokenised_groups(3, 40)
            with open(data, "w") as f:
                f.writelines(json.dumps(x) + "\n" for x in lines)
            common = ["--data", data, "--geometry", "tiny", "--batch-tokens", "256", "--warmup", "3",
                      "--threads", "1", "--quiet", "--log-every", "2", "--checkpoint-minutes", "0"]
            straight = train.run(train.parse_args(common + ["--out", os.path.join(tmp, "a"), "--steps", "8"]))
            train.run(train.parse_args(common + ["--out", os.path.join(tmp, "b"), "--steps", "8", "--stop-after", "4"]))
            resumed = train.run(train.parse_args(["--data", data, "--out", os.path.join(tmp, "b"), "--steps", "8",
                                                  "--resume", "--threads", "1", "--quiet", "--log-every", "2"]))
            a = torch.load(os.path.join(tmp, "a", "checkpoint.pt"))
            b = torch.load(os.path.join(tmp, "b", "checkpoint.pt"))
            for key in a["model"]:
                self.assertTrue(torch.equal(a["model"][key], b["model"][key]), key)
            self.assertEqual([r["loss"] for r in straight["rows"]], [r["loss"] for r in resumed["rows"]])
            self.assertEqual(straight["state"]["examples"], resumed["state"]["examples"])
            # One epoch's batches hold every example once: the examples logged after 8 steps are the
            # sizes of the first 8 batches.
            examples, group_ids = train.load_grouped_examples(data, None)
            groups = train.make_groups(examples, group_ids)
            sizes = [len(m) for _, m in groups]
            batches = train.epoch_group_batches(np.array([len(p) for p, _ in groups]),
                                                [[train.group_suffix_length(x) for x in m] for _, m in groups],
                                                256, 1, 0)
            self.assertGreaterEqual(len(batches), 8)
            self.assertEqual(straight["state"]["examples"], sum(sizes[k] for b in batches[:8] for k in b))
            self.assertEqual(int(straight["rows"][-1]["examples"]), straight["state"]["examples"])
            self.assertGreater(float(straight["rows"][-1]["examples_per_s"]), 0)
        finally:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    torch.set_num_threads(1)
    unittest.main()
