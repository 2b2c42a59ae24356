#!/usr/bin/python3
"""Unit tests of the trainer (tools/train/; docs/training.md).

    /usr/bin/python3 tests/train/test_trainer.py [--bin BUILD/bin]

The archive tests run needle-pack (from --bin, else $NEEDLE_BIN_DIR, else build/bin) and fail when
it is missing. Checked: the codebooks bit for bit; the fake quantisation against the indices and
norms needle-pack stores (2, 3, 4 bits and ternary); the FP16 rounding; the Walsh-Hadamard matrix
against the FWHT butterfly; the engram hash test vector of the design page; Sinkhorn's columns; the
batched forward's masks and padding; the batching, the data loader, and an exact resume.
"""
import argparse
import contextlib
import io
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "train"))

import cact  # noqa: E402
import cq  # noqa: E402
import export  # noqa: E402
import model as M  # noqa: E402
import train  # noqa: E402
import unpack  # noqa: E402

BIN_DIR = os.environ.get("NEEDLE_BIN_DIR", os.path.join(ROOT, "build", "bin"))


def needle_tool(name: str) -> str:
    path = os.path.join(BIN_DIR, name)
    if not os.access(path, os.X_OK):
        raise AssertionError(f"{path} is missing: build it, or pass --bin BUILD/bin")
    return path


def random_model(geometry: str, bits_map: str, seed: int = 1) -> M.Needle2:
    """A model whose every tensor is off its initial value (so no check passes by symmetry)."""
    net = M.Needle2(M.geometry_from(geometry), cq.BitsMap.parse(bits_map), seed=seed)
    gen = torch.Generator().manual_seed(seed + 100)
    with torch.no_grad():
        for name, p in net.named_parameters():
            if name in cq_names(net):
                p.mul_(3.0)
            else:
                p.add_(0.2 * torch.randn(p.shape, generator=gen))
    return net


def cq_names(net: M.Needle2) -> set:
    return {"embedding", *M.LAYER_CQ, *M.MHC_CQ, "engram_tables", "engram_key_proj", "engram_value_proj"}


class Codebooks(unittest.TestCase):
    def test_recomputed_codebooks_equal_the_design_page_bit_for_bit(self):
        computed = cq.compute_codebooks().view(np.uint32)
        self.assertEqual(computed.tolist(), cq.design_codebooks().view(np.uint32).tolist())
        self.assertEqual(computed[:4].tolist(), [0xBE085E47, 0xBD237060, 0x3D23FC09, 0x3E08A9DB])

    def test_levels_per_width(self):
        self.assertEqual(len(cq.levels_for(2)), 4)
        self.assertEqual(len(cq.levels_for(3)), 8)
        self.assertEqual(len(cq.levels_for(4)), 16)
        self.assertEqual(np.float32(cq.levels_for(5)[2]).view(np.uint32), np.float32(0.108187906).view(np.uint32))
        with self.assertRaises(ValueError):
            cq.levels_for(6)


class Hadamard(unittest.TestCase):
    @staticmethod
    def butterfly(x: np.ndarray) -> np.ndarray:
        """docs/cq.md §3: unnormalised in-place butterfly, stride 1 first, a+b left, a-b right."""
        x = x.copy()
        n, h = len(x), 1
        while h < n:
            for i in range(0, n, 2 * h):
                a, b = x[i:i + h].copy(), x[i + h:i + 2 * h].copy()
                x[i:i + h], x[i + h:i + 2 * h] = a + b, a - b
            h *= 2
        return x

    def test_matrix_equals_the_normalised_butterfly(self):
        rng = np.random.default_rng(3)
        for n in (4, 128, 256, 512):
            H = cq.hadamard(n, torch.float64).numpy()
            self.assertTrue(np.array_equal(H, H.T))
            np.testing.assert_allclose(H @ H, np.eye(n), atol=1e-12)
            x = rng.standard_normal(n)
            np.testing.assert_allclose(x @ H, self.butterfly(x) / np.sqrt(n), rtol=0, atol=1e-12)
        # The natural (Sylvester) order: entry (i, j) = (-1)^popcount(i & j) / sqrt(n).
        H = cq.hadamard(8, torch.float64).numpy() * np.sqrt(8)
        self.assertEqual(H[3, 5], -1.0)  # 3 & 5 = 1: one bit
        self.assertEqual(H[3, 3], 1.0)   # 3 & 3 = 3: two bits
        with self.assertRaises(ValueError):
            cq.hadamard(12)

    def test_hadamard_mlp_without_padding_equals_the_padded_transform(self):
        # d 192 < hada_n 256: the model skips the zero padding; the result must not change.
        net = random_model("d192l8", "default=2")
        x1 = torch.randn(2, 5, 192)
        w = net.archive_weights(qat=False)
        H = cq.hadamard(256)
        z = torch.nn.functional.pad(M.zcrms(x1, w["pre_hada"][0]), (0, 64))
        z = (w["d1"][0] * z) @ H
        z = torch.nn.functional.silu(w["d2"][0] * z) @ H
        expected = (w["d3"][0] * z)[..., :192]
        torch.testing.assert_close(net._mlp(0, x1, w), expected, rtol=1e-5, atol=1e-6)


class BitsMapRules(unittest.TestCase):
    def test_longest_prefix_and_default(self):
        m = cq.BitsMap.parse("embedding=4,mhc=4,default=2")
        self.assertEqual(m.bits_for("embedding"), 4)
        self.assertEqual(m.bits_for("mhc_phi_res"), 4)
        self.assertEqual(m.bits_for("attn.q_proj"), 2)
        m = cq.BitsMap.parse("attn=3,attn.out_proj=1.58,4")
        self.assertEqual(m.bits_for("attn.q_proj"), 3)
        self.assertEqual(m.bits_for("attn.out_proj"), 5)
        self.assertEqual(m.bits_for("engram0.tables"), 4)

    def test_bad_maps_name_the_problem(self):
        for text, words in [("", "empty"), ("embedding=7", "width '7'"), ("2,default=3", "twice"),
                            ("a=2,a=3", "'a' twice"), ("=2", "no name")]:
            with self.assertRaises(ValueError) as e:
                cq.BitsMap.parse(text)
            self.assertIn(words, str(e.exception))


class FakeQuantAgainstNeedlePack(unittest.TestCase):
    """Pack a random model with every width in use; the archive's indices, norms and fp16 values are
    what the trainer's forward uses."""

    BITS = "embedding=4,mhc=3,attn.q_proj=1.58,attn.v_proj=3,default=2"

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        # d192l8 has d 192 and sub_dim 96: inputs that are not a multiple of 128 (zero padding).
        cls.net = random_model("d192l8", cls.BITS)
        cls.tensors = export.archive_tensors(cls.net)
        weights = os.path.join(cls.tmp, "m.safetensors")
        cls.archive_path = os.path.join(cls.tmp, "m.cact")
        export.export(cls.net, weights)
        subprocess.run([needle_tool("needle-pack"), "--safetensors", weights, "--bits-map", cls.BITS,
                        "-o", cls.archive_path], check=True, stdout=subprocess.DEVNULL)
        cls.archive = cact.read(cls.archive_path)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def records(self, dtype):
        for k, (key, values) in enumerate(self.tensors.items()):
            record = self.archive.records[k]
            self.assertEqual(tuple(record.shape), values.shape, key)
            if record.dtype == dtype:
                yield k, key, values, record

    def test_header_matches_the_geometry(self):
        g = self.net.g
        h = self.archive.header
        for name in ("vocab", "d_model", "num_heads", "num_kv_heads", "num_layers", "head_dim",
                     "max_seq_len", "hada_n", "engram_slots", "engram_sub_dim", "num_engram_tables",
                     "kv_window", "engram_orders", "engram_sites"):
            self.assertEqual(h[name], getattr(g, name), name)
        self.assertEqual(h["rope_theta"], g.rope_theta)
        self.assertEqual(len(self.archive.records), len(self.tensors))

    def test_exact_quantiser_equals_the_archive_for_every_cq_record(self):
        widths = set()
        for k, key, values, record in self.records("CQ"):
            index, norm = self.archive.cq(k)
            q_index, q_norm = cq.quantize(torch.from_numpy(values), record.bits, exact=True)
            self.assertTrue(np.array_equal(q_index.numpy(), index), f"{key}: level indices differ")
            self.assertTrue(np.array_equal(q_norm.numpy(), norm), f"{key}: group norms differ")
            widths.add(record.bits)
        self.assertEqual(widths, {2, 3, 4, 5})

    def test_forward_weights_are_the_archive_dequantised(self):
        exact = self.net.archive_weights(qat=True, exact=True)
        by_key = export.archive_tensors_from(self.net, exact)
        for k, key, values, record in self.records("CQ"):
            index, norm = self.archive.cq(k)
            expected = cq.dequantize(torch.from_numpy(index), torch.from_numpy(norm), record.bits, values.shape[1])
            # Same indices and norms (the test above); the f32 rotation back may round differently in
            # a larger matrix product, so the values agree to f32 rounding.
            torch.testing.assert_close(torch.from_numpy(by_key[key]), expected, rtol=1e-5, atol=1e-7,
                                       msg=lambda m: f"{key}: {m}")

    def test_fast_quantiser_rarely_differs(self):
        # The training path decides in f32: it may differ only where a value sits within f32
        # rounding of a midpoint (expected about one index in ten million).
        differing = total = 0
        for k, key, values, record in self.records("CQ"):
            index, _ = self.archive.cq(k)
            q_index, _ = cq.quantize(torch.from_numpy(values), record.bits, exact=False)
            differing += int((q_index.numpy() != index).sum())
            total += index.size
        self.assertGreater(total, 1_000_000)
        self.assertLessEqual(differing / total, 1e-5)

    def test_fp16_records_equal_the_rounded_forward_values(self):
        rounded = export.archive_tensors_from(self.net, self.net.archive_weights(qat=True))
        count = 0
        for k, key, values, record in self.records("FP16"):
            self.assertTrue(np.array_equal(self.archive.fp16(k), rounded[key]), key)
            count += 1
        g = self.net.g
        self.assertEqual(count, 9 * g.num_layers + 6 + len(g.engram_sites) + 1)

    def test_straight_through_gradient(self):
        w = torch.randn(3, 200, requires_grad=True)
        q = cq.fake_quant(w, 2)
        (q * torch.arange(200.0)).sum().backward()
        self.assertTrue(torch.equal(w.grad, torch.arange(200.0).expand(3, 200)))
        self.assertFalse(torch.equal(q.detach(), w.detach()))


class Engram(unittest.TestCase):
    # Design page §3: tokens 2, 4, 100, 200, 300; 8192 slots; tables tau 0..3 (orders 2, 2, 3, 3).
    SLOTS = [[8135, 6202, 7636, 1872], [5410, 4264, 2086, 3358], [581, 6494, 539, 4133],
             [7041, 4262, 2608, 552], [4871, 2767, 3105, 5524]]
    RAW_P4 = [0x1B613307, 0xB9BD8ACF, 0xFA85AC21, 0xB1D53594]

    def test_design_page_test_vector(self):
        tokens = [2, 4, 100, 200, 300]
        orders = [2, 2, 3, 3]
        for tau, order in enumerate(orders):
            self.assertEqual(M.engram_hash_raw(tau, order, tokens, 4), self.RAW_P4[tau])
            for p in range(5):
                self.assertEqual(M.engram_hash_raw(tau, order, tokens, p) % 8192, self.SLOTS[p][tau])
        g = M.geometry_from("base")  # 4 tables: orders (2, 3) x 2 heads, 8192 slots
        slots = M.engram_slots(torch.tensor([tokens, tokens[:3] + [0, 0]]), g)
        self.assertEqual(slots[0].tolist(), self.SLOTS)
        self.assertEqual(slots[1, :3].tolist(), self.SLOTS[:3])  # right padding changes nothing before it

    def test_rows_are_zero_until_the_ngram_is_whole(self):
        net = random_model("tiny", "default=2")
        with torch.no_grad():
            w = net.archive_weights(qat=False)
            w["engram_taps"] = torch.zeros_like(w["engram_taps"])
            w["engram_taps"][:, 0] = 1.0
            w["engram_key_proj"] = torch.ones_like(w["engram_key_proj"])
            keys, values = net._engram(torch.tensor([[5, 6, 7, 8]]), w)
        # tiny: orders 2 and 3 (one table each, 64 columns): p 0 nothing, p 1 the order-2 table only.
        self.assertTrue(torch.all(keys[0][0, 0] == 0))
        table = w["engram_tables"][0]
        slots = M.engram_slots(torch.tensor([[5, 6, 7, 8]]), net.g)[0]
        self.assertAlmostEqual(float(keys[0][0, 1, 0]), float(table[slots[1, 0]].sum()), places=4)
        both = table[slots[2, 0]].sum() + table[256 + slots[2, 1]].sum()
        self.assertAlmostEqual(float(keys[0][0, 2, 0]), float(both), places=4)

    def test_a_later_start_position(self):
        """_engram(tokens, w, start): column c of row b is position start[b] + c for the whole-n-gram
        rule (forward_grouped runs suffixes from mid-sequence); hash and taps read the row only."""
        net = random_model("tiny", "default=2")
        tokens = torch.randint(14, 512, (2, 30), generator=torch.Generator().manual_seed(3))
        with torch.no_grad():
            w = net.archive_weights()
            plain = net._engram(tokens, w)
            zero = net._engram(tokens, w, torch.zeros(2, dtype=torch.long))
            # From position 5 on, with the 11 columns before 16 as the halo: taps (9 back) and the
            # hash (2 back) of positions 16 and later read only columns of the slice.
            late = net._engram(tokens[:, 5:], w, torch.tensor([5, 5]))
            # Started at 0 instead, the slice's columns 0 and 1 would not yet use the order-3 table.
            early = net._engram(tokens[:, 5:], w, torch.tensor([0, 0]))
        for a, b, c in zip(plain[0] + plain[1], zero[0] + zero[1], late[0] + late[1]):
            self.assertTrue(torch.equal(a, b))
            torch.testing.assert_close(c[:, 11:], a[:, 16:])
        self.assertGreater(float((early[0][0][:, :2] - late[0][0][:, :2]).abs().max()), 1e-4)


class Sinkhorn(unittest.TestCase):
    def test_columns_sum_to_one(self):
        m = torch.randn(50, 4, 4) * 3 + 4 * torch.eye(4)
        p = M.sinkhorn_log(m)
        torch.testing.assert_close(p.sum(-2), torch.ones(50, 4), rtol=0, atol=2e-6)
        torch.testing.assert_close(p.sum(-1), torch.ones(50, 4), rtol=0, atol=5e-2)
        self.assertTrue(torch.all(p > 0))

    def test_twenty_iterations_of_rows_then_columns(self):
        m = torch.randn(4, 4, dtype=torch.float64) * 2
        x = m.clone()
        for _ in range(20):
            x = x - torch.logsumexp(x, 1, keepdim=True)
            x = x - torch.logsumexp(x, 0, keepdim=True)
        torch.testing.assert_close(M.sinkhorn_log(m), torch.exp(x))
        self.assertFalse(torch.allclose(M.sinkhorn_log(m, 19), torch.exp(x), rtol=0, atol=1e-12))


class Forward(unittest.TestCase):
    def setUp(self):
        self.net = random_model("tiny", "embedding=4,mhc=4,default=2")

    @torch.no_grad()
    def test_right_padding_and_logit_positions(self):
        a = torch.randint(14, 512, (1, 40), generator=torch.Generator().manual_seed(1))
        b = torch.randint(14, 512, (1, 25), generator=torch.Generator().manual_seed(2))
        batch = torch.zeros(2, 40, dtype=torch.int64)
        batch[0], batch[1, :25] = a[0], b[0]
        full = self.net(batch)
        torch.testing.assert_close(full[0], self.net(a)[0], rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(full[1, :25], self.net(b)[0], rtol=1e-5, atol=1e-5)
        picked = self.net(batch, torch.tensor([3, 40 + 24, 39]))
        torch.testing.assert_close(picked, torch.stack([full[0, 3], full[1, 24], full[0, 39]]))

    def test_every_parameter_gets_a_gradient_through_the_fake_quantisation(self):
        tokens = torch.randint(14, 512, (2, 30), generator=torch.Generator().manual_seed(6))
        logits = self.net(tokens, torch.arange(10, 59))
        torch.nn.functional.cross_entropy(logits, tokens.reshape(-1)[11:60]).backward()
        for name, p in self.net.named_parameters():
            self.assertIsNotNone(p.grad, name)
            self.assertGreater(float(p.grad.abs().max()), 0.0, name)

    @torch.no_grad()
    def test_sink_per_sequence_equals_one_sink_each(self):
        tokens = torch.randint(14, 512, (2, 45), generator=torch.Generator().manual_seed(8))
        both = self.net(tokens, sink=torch.tensor([0, 4]))
        torch.testing.assert_close(both[0], self.net(tokens[:1], sink=0)[0])
        torch.testing.assert_close(both[1], self.net(tokens[1:], sink=4)[0])
        self.assertGreater(float((self.net(tokens[1:], sink=0)[0] - both[1]).abs().max()), 1e-4)

    @torch.no_grad()
    def test_dropout_acts_only_while_training(self):
        tokens = torch.randint(14, 512, (2, 30), generator=torch.Generator().manual_seed(9))
        self.net.eval()
        plain = self.net(tokens)
        self.net.dropout = 0.3
        # Eval mode (export, parity, decode.py): the branches pass unchanged, bit for bit.
        torch.testing.assert_close(self.net(tokens), plain, rtol=0, atol=0)
        self.net.train()
        torch.manual_seed(3)
        self.assertGreater(float((self.net(tokens) - plain).abs().max()), 1e-3)
        self.net.dropout = 0.0
        torch.testing.assert_close(self.net(tokens), plain, rtol=0, atol=0)

    def test_zcrms_gradient(self):
        x = torch.randn(3, 5, 16, dtype=torch.float64, requires_grad=True)
        s = (0.3 * torch.randn(16, dtype=torch.float64)).requires_grad_()
        self.assertTrue(torch.autograd.gradcheck(M.zcrms, (x, s)))
        expected = (1 + s) * x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
        torch.testing.assert_close(M.zcrms(x, s), expected)

    def test_attention_mask_window_and_sink(self):
        T, W = 12, 4
        keep = M.attention_bias(T, W, 2, "cpu") == 0
        for p in range(T):
            expected = {k for k in range(p + 1) if k < min(2, p + 1) or max(2, p - W + 1) <= k}
            self.assertEqual({k for k in range(T) if keep[p, k]}, expected, p)
        per_row = M.attention_bias(T, W, torch.tensor([0, 2]), "cpu")
        self.assertTrue(torch.equal(per_row[1, 0] == 0, keep))
        self.assertTrue(torch.equal(per_row[0, 0] == 0, M.attention_bias(T, W, 0, "cpu") == 0))
        causal = M.attention_bias(T, 0, 0, "cpu") == 0
        self.assertTrue(torch.equal(causal, torch.ones(T, T, dtype=torch.bool).tril()))

    def test_window_changes_only_positions_past_it(self):
        tokens = torch.randint(14, 512, (1, 40), generator=torch.Generator().manual_seed(4))
        with torch.no_grad():
            windowed = self.net(tokens)
            self.net.g.kv_window = 0
            causal = self.net(tokens)
        self.net.g.kv_window = 32
        torch.testing.assert_close(windowed[0, :32], causal[0, :32])
        self.assertGreater(float((windowed[0, 32:] - causal[0, 32:]).abs().max()), 1e-4)

    def test_metadata_is_what_needle_pack_reads(self):
        meta = M.geometry_from("d256l8").metadata()
        self.assertEqual(meta["engram_orders"], "2,3")
        self.assertEqual(meta["engram_sites"], "2,5")
        self.assertEqual(meta["rope_theta"], "100000")
        self.assertEqual(meta["head_codes"], "")
        self.assertNotIn("num_tensors", meta)

    def test_bad_geometry_names_the_field(self):
        with self.assertRaises(ValueError) as e:
            M.geometry_from('{"base": "d256l8", "num_heads": 3}')
        self.assertIn("head_dim", str(e.exception))
        with self.assertRaises(ValueError) as e:
            M.geometry_from('{"base": "d256l8", "engram_sites": [5, 2]}')
        self.assertIn("engram_sites", str(e.exception))


class Data(unittest.TestCase):
    def test_epoch_batches_cover_every_example_once_within_the_budget(self):
        lengths = np.random.default_rng(0).integers(20, 300, 1000)
        batches = train.epoch_batches(lengths, 2048, seed=5, epoch=3)
        seen = sorted(k for b in batches for k in b)
        self.assertEqual(seen, list(range(1000)))
        for b in batches:
            self.assertLessEqual(len(b) * max(lengths[b]), 2048)
        self.assertEqual(batches, train.epoch_batches(lengths, 2048, seed=5, epoch=3))
        self.assertNotEqual(batches, train.epoch_batches(lengths, 2048, seed=5, epoch=4))
        padded = sum(len(b) * max(lengths[b]) for b in batches)
        self.assertLess(padded / lengths.sum(), 1.1)  # bucketing keeps padding small

    def test_make_batch_targets_are_the_reply_tokens(self):
        examples = [(np.array([2, 10, 11], np.int32), np.array([20, 21, 1], np.int32)),
                    (np.array([2, 12], np.int32), np.array([22, 1], np.int32))]
        batch = train.make_batch(examples, [0, 1], "cpu")
        self.assertEqual(batch["tokens"].tolist(), [[2, 10, 11, 20, 21], [2, 12, 22, 0, 0]])
        self.assertEqual(batch["targets"].tolist(), [20, 21, 1, 22, 1])
        # Position p predicts token p + 1: the last prompt token predicts the first reply token.
        self.assertEqual(batch["positions"].tolist(), [2, 3, 4, 5 + 1, 5 + 2])
        self.assertEqual(batch["n_tokens"], 5 + 3)
        self.assertEqual(batch["n_examples"], 2)

    def test_decision_weight_falls_on_the_token_after_tool_call(self):
        from tokenizer import TOOL_CALL_ID
        call, none, end = 300, 301, 1
        examples = [(np.array([2, 5], np.int32), np.array([269, TOOL_CALL_ID, call, 40, end], np.int32)),
                    (np.array([2, 6], np.int32), np.array([269, TOOL_CALL_ID, none, end], np.int32)),
                    (np.array([2, 7], np.int32), np.array([41, end], np.int32))]  # no marker: the first
        self.assertIsNone(train.make_batch(examples, [0, 1, 2], "cpu")["weights"])
        batch = train.make_batch(examples, [0, 1, 2], "cpu", decision_weight=4.0)
        self.assertEqual(batch["weights"].tolist(), [1, 1, 4, 1, 1] + [1, 1, 4, 1] + [4, 1])
        # The loss is the weighted mean of the tokens' cross-entropies (the plain mean at weight 1).
        logits = torch.randn(len(batch["targets"]), 400, generator=torch.Generator().manual_seed(3))
        ce = F.cross_entropy(logits, batch["targets"], reduction="none")
        loss, _ = train.weighted_reply_loss(logits, batch)
        self.assertAlmostEqual(loss.item(), float((ce * batch["weights"]).sum() / batch["weights"].sum()), 5)
        plain, _ = train.weighted_reply_loss(logits, train.make_batch(examples, [0, 1, 2], "cpu"))
        self.assertAlmostEqual(plain.item(), ce.mean().item(), 5)
        self.assertNotAlmostEqual(loss.item(), plain.item(), 3)
        # A grouped batch weighs the same tokens.
        groups = train.make_groups(examples, np.array([0, 0, 1]))
        grouped = train.make_grouped_batch(groups, [0, 1], "cpu", decision_weight=4.0)
        self.assertEqual(sorted(grouped["weights"].tolist()), sorted(batch["weights"].tolist()))

    def test_evaluate_counts_the_decisions_the_argmax_gets_right(self):
        from tokenizer import TOOL_CALL_ID
        call, none, end = 300, 301, 1

        class Always(torch.nn.Module):
            """A model whose argmax is `token` at every position (logits of a vocabulary of 400)."""
            def __init__(self, token):
                super().__init__()
                self.token = token

            def forward(self, tokens, positions):
                logits = torch.zeros(len(positions), 400)
                logits[:, self.token] = 1.0
                return logits

        examples = [(np.array([2, 5], np.int32), np.array([269, TOOL_CALL_ID, call, 40, end], np.int32)),
                    (np.array([2, 6], np.int32), np.array([269, TOOL_CALL_ID, none, end], np.int32)),
                    (np.array([2, 7, 8], np.int32), np.array([269, TOOL_CALL_ID, none, end], np.int32)),
                    (np.array([2, 9], np.int32), np.array([none, end], np.int32))]  # no marker: the first
        self.assertEqual([train.decision_index(t) for _, t in examples], [2, 2, 2, 0])
        for token, decisions in ((none, 3 / 4), (call, 1 / 4), (end, 0.0)):
            loss, accuracy, decision = train.evaluate(Always(token), examples, 64, "cpu")
            self.assertAlmostEqual(decision, decisions)
            targets = np.concatenate([t for _, t in examples])
            self.assertAlmostEqual(accuracy, float(np.mean(targets == token)))
        # Batches of one example each: the same counts.
        self.assertAlmostEqual(train.evaluate(Always(none), examples, 6, "cpu")[2], 3 / 4)

    def test_load_examples_renders_with_render_py_and_caches(self):
        import render
        import sentencepiece as spm
        tmp = tempfile.mkdtemp()
        try:
            ex = {"id": "x", "split": "train", "family": "t", "system": "",
                  "tools": [{"name": "set_timer", "description": "Start a timer",
                             "parameters": {"type": "object", "properties": {"minutes": {"type": "integer"}},
                                            "required": ["minutes"]}}],
                  "query": "timer for 5 minutes", "calls": [{"name": "set_timer", "arguments": {"minutes": 5}}]}
            corpus = os.path.join(tmp, "corpus.txt")
            with open(corpus, "w") as f:
                for k in range(200):
                    f.write(render.prompt_text(ex) + render.target_text(ex) + f" {k}\n")
            spm.SentencePieceTrainer.train(input=corpus, model_prefix=os.path.join(tmp, "t"), vocab_size=400,
                                           model_type="bpe", byte_fallback=True, pad_id=0, eos_id=1,
                                           bos_id=2, unk_id=3, minloglevel=2)
            sp = spm.SentencePieceProcessor(model_file=os.path.join(tmp, "t.model"))
            data = os.path.join(tmp, "train.jsonl")
            with open(data, "w") as f:
                f.write(json.dumps(ex) + "\n")
                f.write(json.dumps({"prompt_ids": [2, 5, 6], "target_ids": [7, 1]}) + "\n")
            cache = os.path.join(tmp, "cache")
            for _ in range(2):  # the second read comes from the cache
                loaded = train.load_examples(data, os.path.join(tmp, "t.model"), cache)
                prompt, target = render.encode_example(sp, ex)
                self.assertEqual(loaded[0][0].tolist(), prompt)
                self.assertEqual(loaded[0][1].tolist(), target)
                self.assertEqual([a.tolist() for a in loaded[1]], [[2, 5, 6], [7, 1]])
            self.assertEqual(len(os.listdir(cache)), 1)
            with open(data, "a") as f:
                f.write("{not json\n")
            with self.assertRaises(ValueError) as e:
                train.load_examples(data, os.path.join(tmp, "t.model"))
            self.assertIn("line 3", str(e.exception))
        finally:
            shutil.rmtree(tmp)


class BpeDropout(unittest.TestCase):
    """--bpe-dropout: render.encode_example_dropout and load_grouped_examples(bpe_dropout=...)."""

    TOOLS = [{"name": "set_timer", "description": "Start a countdown timer.",
              "parameters": {"type": "object", "properties": {"minutes": {"type": "integer"}},
                             "required": ["minutes"]}},
             {"name": "search_hotels", "description": "Find hotels in a city.",
              "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                             "required": ["city"]}}]
    REQUESTS = ["timer for {k} minutes please", "find me hotels in Lisbon {k}", "set a countdown of {k} minutes",
                "any hotels around Zürich? {k}"]

    @classmethod
    def setUpClass(cls):
        import tokenizer
        cls.tmp = tempfile.mkdtemp()
        cls.examples = []
        for k in range(60):  # 15 groups of 4: one set of tools each, four requests
            system = "You call tools." if k % 8 == 0 else ""
            tools = cls.TOOLS[k % 2:] + cls.TOOLS[:k % 2]
            for j, request in enumerate(cls.REQUESTS):
                calls = [{"name": "set_timer", "arguments": {"minutes": k}}] if j % 2 == 0 else []
                cls.examples.append({"id": f"x{k}-{j}", "split": "train", "family": "t", "system": system,
                                     "tools": tools, "query": request.format(k=k), "calls": calls, "group": k})
        corpus = os.path.join(cls.tmp, "corpus.txt")
        tokenizer.write_corpus(cls.examples, corpus)
        tokenizer.train(corpus, os.path.join(cls.tmp, "t"), 400)
        cls.model = os.path.join(cls.tmp, "t.model")
        cls.data = os.path.join(cls.tmp, "train.jsonl")
        with open(cls.data, "w") as f:
            f.writelines(json.dumps(ex) + "\n" for ex in cls.examples)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def test_dropout_zero_is_the_usual_encoding(self):
        import render
        import sentencepiece as spm
        sp = spm.SentencePieceProcessor(model_file=self.model)
        head = None
        for ex in self.examples:
            prompt, target, head = render.encode_example_dropout(sp, ex, 0.0, head)
            self.assertEqual((prompt, target), render.encode_example(sp, ex), ex["id"])

    def test_dropout_cuts_prompts_finer_keeps_text_replies_and_group_heads(self):
        import render
        import sentencepiece as spm
        sp = spm.SentencePieceProcessor(model_file=self.model)
        usual = [render.encode_example(sp, ex) for ex in self.examples]
        for cache in (None, os.path.join(self.tmp, "cache")):
            for _ in range(2):  # the second read with the cache comes from it
                loaded, groups = train.load_grouped_examples(self.data, self.model, cache, bpe_dropout=0.3, seed=4)
                self.assertEqual(groups.tolist(), [ex["group"] for ex in self.examples])
                again, _ = train.load_grouped_examples(self.data, self.model, None, bpe_dropout=0.3, seed=4)
                self.assertEqual([p.tolist() for p, _ in loaded], [p.tolist() for p, _ in again])  # seeded
                for (prompt, target), (usual_prompt, usual_target) in zip(loaded, usual):
                    self.assertEqual(prompt[0], render.BOS_ID)
                    self.assertEqual(sp.decode(prompt[1:].tolist()), sp.decode(usual_prompt[1:]))
                    self.assertEqual(target.tolist(), usual_target)  # the reply keeps the usual pieces
                self.assertGreater(sum(len(p) for p, _ in loaded), 1.1 * sum(len(p) for p, _ in usual))
                # A group's members share their head's pieces: the grouped batch runs it once.
                marker = sp.piece_to_id(render.TOOLS_END)
                for prefix, members in train.make_groups(loaded, groups):
                    self.assertIn(marker, prefix.tolist())
        other, _ = train.load_grouped_examples(self.data, self.model, None, bpe_dropout=0.3, seed=5)
        self.assertNotEqual([p.tolist() for p, _ in loaded], [p.tolist() for p, _ in other])
        self.assertEqual(len(os.listdir(os.path.join(self.tmp, "cache"))), 1)
        plain, _ = train.load_grouped_examples(self.data, self.model, os.path.join(self.tmp, "cache"))
        self.assertEqual([p.tolist() for p, _ in plain], [p for p, _ in usual])  # its own cache file
        self.assertEqual(len(os.listdir(os.path.join(self.tmp, "cache"))), 2)

    def test_both_dropouts_must_be_probabilities_below_one(self):
        base = ["--data", self.data, "--out", self.tmp, "--steps", "1"]
        for option, name in (("--bpe-dropout", "bpe_dropout"), ("--dropout", "dropout")):
            self.assertEqual(getattr(train.parse_args(base), name), 0.0)
            self.assertEqual(getattr(train.parse_args(base + [option, "0.1"]), name), 0.1)
            for bad in ("1", "-0.1"):
                with contextlib.redirect_stderr(io.StringIO()) as err, self.assertRaises(SystemExit):
                    train.parse_args(base + [option, bad])
                self.assertIn(f"{option} must be at least 0 and below 1, not", err.getvalue())


def write_copy_data(path, n, seed):
    """n tokenised examples at `path` whose reply copies the prompt's tokens 1..3, then EOS; returns path."""
    rng = np.random.default_rng(seed)
    with open(path, "w") as f:
        for _ in range(n):
            prompt = [2] + rng.integers(14, 512, int(rng.integers(8, 30))).tolist()
            f.write(json.dumps({"prompt_ids": prompt, "target_ids": prompt[1:4] + [1]}) + "\n")
    return path


class HeldOut(unittest.TestCase):
    def test_eval_is_logged_and_eval_also_printed_with_the_decision_share(self):
        tmp = tempfile.mkdtemp()
        try:
            data = write_copy_data(os.path.join(tmp, "train.jsonl"), 40, seed=1)
            held = write_copy_data(os.path.join(tmp, "held.jsonl"), 12, seed=2)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                result = train.run(train.parse_args([
                    "--data", data, "--eval", held, "--eval-also", held, "--eval-also", data,
                    "--geometry", "tiny", "--batch-tokens", "256", "--warmup", "1", "--threads", "1",
                    "--log-every", "1", "--steps", "2", "--out", os.path.join(tmp, "run")]))
            text = out.getvalue()
            main = re.findall(r"^eval loss ([0-9.]+) accuracy ([0-9.]+) decision ([0-9.]+)$", text, re.M)
            self.assertEqual(len(main), 1, text)
            self.assertEqual(result["rows"][-1]["eval_loss"], main[0][0])
            self.assertEqual(result["rows"][-1]["eval_accuracy"], main[0][1])
            # the same file through --eval-also: the same figures; each --eval-also file once
            self.assertEqual(re.findall(r"^eval held.jsonl: loss ([0-9.]+) accuracy ([0-9.]+) decision ([0-9.]+)$",
                                        text, re.M), main)
            self.assertEqual(len(re.findall(r"^eval train.jsonl: loss", text, re.M)), 1)
        finally:
            shutil.rmtree(tmp)


def timer_tokenizers(tmp: str) -> dict:
    """Two 500-piece tokenizers trained by tokenizer.py on one corpus of timer requests with numbers:
    {False: the usual settings' model path, True: --split-digits'}."""
    import tokenizer
    examples = []
    for k in range(300):
        n = 1000 + 37 * k
        examples.append({"system": "", "query": f"set a timer for {n} seconds, note {k} and 3.25",
                         "tools": [{"name": "set_timer", "description": "Set a timer.",
                                    "parameters": {"type": "object", "properties": {
                                        "seconds": {"type": "integer"}}, "required": ["seconds"]}}],
                         "calls": [{"name": "set_timer", "arguments": {"seconds": n}}]})
    corpus = os.path.join(tmp, "corpus.txt")
    tokenizer.write_corpus(examples, corpus)
    paths = {}
    for split in (False, True):
        prefix = os.path.join(tmp, f"split{int(split)}")
        tokenizer.train(corpus, prefix, 500, split_digits=split)
        paths[split] = prefix + ".model"
    return paths


class SplitDigits(unittest.TestCase):
    """tokenizer.py --split-digits: no learned piece holds a digit beside another character, so a
    number has the same pieces in a request and in a reply; and our encoder, importing the model
    as needle-pack does, gives SentencePiece's ids."""

    def test_numbers_keep_their_pieces_and_our_encoder_agrees(self):
        import sentencepiece as spm
        tmp = tempfile.mkdtemp()
        try:
            paths = timer_tokenizers(tmp)
            models = {split: spm.SentencePieceProcessor(model_file=path) for split, path in paths.items()}
            def mixed(sp):
                return [p for p in (sp.id_to_piece(i) for i in range(270, sp.get_piece_size()))
                        if any(c.isdigit() for c in p) and len(p) > 1]
            self.assertTrue(mixed(models[False]), "the usual settings learn pieces such as '\":3' or '32'")
            self.assertEqual(mixed(models[True]), [])
            sp = models[True]
            request = sp.encode("for 4213 seconds", out_type=str)
            reply = sp.encode('{"seconds":4213}', out_type=str)
            self.assertEqual(request[-5:-1], ["4", "2", "1", "3"])
            self.assertEqual(reply[-5:-1], ["4", "2", "1", "3"])
            text = 'set a timer for 90210 seconds <tool_call>[{"name":"set_timer","arguments":{"seconds":90210}}]'
            ours = subprocess.run([needle_tool("needle-tok"), "--spm", paths[True],
                                   "encode", text], check=True, capture_output=True, text=True).stdout.split()
            self.assertEqual([int(x) for x in ours], sp.encode(text))
        finally:
            shutil.rmtree(tmp)


class Transplant(unittest.TestCase):
    """transplant.py: the new tokenizer's pieces in the old order cut text as the new tokenizer does,
    shared pieces keep their ids (and so their rows and engram slots: the model's logits on a text of
    shared pieces are unchanged), a new piece's row is the mean of the rows that spell it, and our
    encoder reads the reordered model."""

    def test_shared_pieces_keep_ids_rows_and_logits(self):
        import sentencepiece as spm
        import transplant as T
        tmp = tempfile.mkdtemp()
        try:
            paths = timer_tokenizers(tmp)
            old_bytes, new_bytes = (pathlib.Path(paths[s]).read_bytes() for s in (False, True))
            aligned_bytes, pieces, shared = T.aligned_model(old_bytes, new_bytes)
            aligned_path = os.path.join(tmp, "aligned.model")
            with open(aligned_path, "wb") as f:
                f.write(aligned_bytes)
            old, new, aligned = (spm.SentencePieceProcessor(model_file=p)
                                 for p in (paths[False], paths[True], aligned_path))
            self.assertTrue(0 < sum(shared) < len(shared) - 10, "some pieces are new, most are shared")
            for i in range(aligned.get_piece_size()):
                self.assertEqual(aligned.id_to_piece(i), pieces[i])
                if shared[i]:
                    self.assertEqual(aligned.id_to_piece(i), old.id_to_piece(i))
            self.assertNotEqual([old.id_to_piece(i) for i in range(500)], [new.id_to_piece(i) for i in range(500)],
                                "the new tokenizer alone puts shared pieces at other ids")
            texts = ['set a timer for 90210 seconds <tool_call>[{"name":"set_timer","arguments":{"seconds":90210}}]',
                     "note 12 and 3.25, then 4213"]
            T.check_same_cuts(aligned_path, paths[True], texts)
            for text in texts:
                self.assertEqual(aligned.encode(text, out_type=str), new.encode(text, out_type=str))
            ours = subprocess.run([needle_tool("needle-tok"), "--spm", aligned_path, "encode", texts[0]],
                                  check=True, capture_output=True, text=True).stdout.split()
            self.assertEqual([int(x) for x in ours], aligned.encode(texts[0]))

            net = random_model(json.dumps({"base": "tiny", "vocab": 500}), "embedding=4,mhc=4,default=2")
            before = {k: v.detach().clone() for k, v in net.state_dict().items()}
            old_pieces = [old.id_to_piece(i) for i in range(500)]
            moved = T.transplant({"model": before}, old_pieces, pieces, shared)
            old_ids = {p: i for i, p in enumerate(old_pieces)}
            for i in range(500):
                if shared[i]:
                    self.assertTrue(torch.equal(moved["embedding"][i], before["embedding"][i]))
                else:
                    spelled = T.spelling(pieces[i], old_ids)
                    self.assertEqual("".join(old_pieces[j] for j in spelled), pieces[i])
                    self.assertTrue(torch.allclose(moved["embedding"][i], before["embedding"][spelled].mean(0)))
            text = "set a timer for seconds, note and"
            ids = aligned.encode(text)
            self.assertEqual(ids, old.encode(text), "a text without digits: the same ids in both")
            self.assertTrue(all(shared[i] for i in ids))
            tokens = torch.tensor([[2] + ids])
            with torch.no_grad():
                want = net(tokens)
                net.load_state_dict(moved)
                got = net(tokens)
            kept = torch.tensor(shared)
            self.assertTrue(torch.allclose(got[..., kept], want[..., kept], rtol=1e-5, atol=1e-5))
            self.assertFalse(torch.allclose(got[..., ~kept], want[..., ~kept]), "new pieces' logits moved")
        finally:
            shutil.rmtree(tmp)


class SpacePiece(unittest.TestCase):
    """tokenizer.py --space-piece: ▁ is a piece of its own (id 270, after Needle's fixed pieces) that
    no learned piece holds, so a word has the same pieces after a space as after a quote; our encoder,
    importing the model as needle-pack does, gives SentencePiece's ids; and transplant.py's word_rows
    starts a new piece X from the old row of the word ▁X."""

    def test_words_keep_their_pieces_and_our_encoder_agrees(self):
        import sentencepiece as spm
        import tokenizer
        import transplant as T
        tmp = tempfile.mkdtemp()
        try:
            paths = timer_tokenizers(tmp)
            corpus = os.path.join(tmp, "corpus.txt")
            prefix = os.path.join(tmp, "space")
            tokenizer.train(corpus, prefix, 500, split_digits=True, space_piece=True)
            tokenizer.space_after_bytes(prefix + ".model")
            sp = tokenizer.check_layout(prefix + ".model", 500)
            self.assertEqual(sp.id_to_piece(270), tokenizer.SPACE)
            holding = [sp.id_to_piece(i) for i in range(sp.get_piece_size()) if tokenizer.SPACE in sp.id_to_piece(i)]
            self.assertEqual(holding, [tokenizer.SPACE])
            usual = spm.SentencePieceProcessor(model_file=paths[True])
            self.assertNotEqual(usual.encode("for seconds", out_type=str)[-1], usual.encode('"seconds', out_type=str)[-1],
                                "the usual settings cut a word after a space (▁seconds) and after a quote apart")
            self.assertEqual(sp.encode("for 4213 seconds", out_type=str)[-7:],
                             [tokenizer.SPACE, "4", "2", "1", "3", tokenizer.SPACE, "seconds"])
            self.assertEqual(sp.encode('{"note":"seconds', out_type=str)[-1], "seconds")
            text = 'set a timer for 90210 seconds  <tool_call>[{"name":"set_timer","arguments":{"seconds":90210}}]'
            ours = subprocess.run([needle_tool("needle-tok"), "--spm", prefix + ".model", "encode", text],
                                  check=True, capture_output=True, text=True).stdout.split()
            self.assertEqual([int(x) for x in ours], sp.encode(text))

            old_bytes = pathlib.Path(paths[False]).read_bytes()
            _, pieces, shared = T.aligned_model(old_bytes, pathlib.Path(prefix + ".model").read_bytes())
            old_pieces = T.pieces_of(old_bytes)
            old_ids = {p: i for i, p in enumerate(old_pieces)}
            emb = torch.randn(500, 8)
            moved = T.transplant({"model": {"embedding": emb}}, old_pieces, pieces, shared, word_rows=True)
            words = [i for i in range(500) if not shared[i] and tokenizer.SPACE + pieces[i] in old_ids]
            self.assertTrue(words, "some new pieces were words with ▁ in the old tokenizer")
            for i in range(500):
                if shared[i]:
                    self.assertTrue(torch.equal(moved["embedding"][i], emb[i]))
                elif i in words:
                    self.assertTrue(torch.equal(moved["embedding"][i], emb[old_ids[tokenizer.SPACE + pieces[i]]]))
                else:
                    self.assertTrue(torch.allclose(moved["embedding"][i], emb[T.spelling(pieces[i], old_ids)].mean(0)))
        finally:
            shutil.rmtree(tmp)


class BenchCompare(unittest.TestCase):
    def test_examples_longer_than_max_seq_len_are_dropped_not_run(self):
        import bench
        tmp = tempfile.mkdtemp()
        try:
            data = write_copy_data(os.path.join(tmp, "train.jsonl"), 30, seed=1)
            held = write_copy_data(os.path.join(tmp, "held.jsonl"), 6, seed=2)
            limit = M.geometry_from("tiny").max_seq_len
            long_prompt = [2] + [20] * limit  # with its reply, past tiny's max_seq_len
            for path, count in ((data, 3), (held, 2)):
                with open(path, "a") as f:
                    for _ in range(count):
                        f.write(json.dumps({"prompt_ids": long_prompt, "target_ids": [21, 1]}) + "\n")
            args = argparse.Namespace(geometries=["tiny"], data=data, tokenizer=None, eval=held, steps=2,
                                      eval_every=2, batch_tokens=1024, bits_map="embedding=4,mhc=4,default=2")
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                bench.compare(args)
            self.assertIn(f"dropped 3 training and 2 held-out examples longer than max_seq_len {limit}",
                          err.getvalue())
            rows = [json.loads(line) for line in out.getvalue().splitlines()]
            self.assertEqual([(r["step"], r["geometry"]) for r in rows], [(2, "tiny")])
            self.assertTrue(np.isfinite(rows[0]["eval_loss"]))
        finally:
            shutil.rmtree(tmp)


class Average(unittest.TestCase):
    def checkpoint(self, seed, geometry="tiny"):
        net = random_model(geometry, "embedding=4,mhc=4,default=2", seed=seed)
        return {"model": net.state_dict(), "optimizer": {"state": {}}, "rng": {}, "geometry": json.loads(net.g.to_json()),
                "bits_map": "embedding=4,mhc=4,default=2", "args": {"steps": 5}, "state": {"step": 5 + seed}}

    def test_the_weighted_mean_of_two_runs_and_nothing_to_resume(self):
        import average
        a, b = self.checkpoint(1), self.checkpoint(2)
        mean = average.average(a, b, 0.25)
        for name, tb in b["model"].items():
            if tb.is_floating_point():
                self.assertTrue(torch.equal(mean["model"][name], 0.25 * tb + 0.75 * a["model"][name]), name)
                self.assertFalse(torch.equal(mean["model"][name], tb), name)
        self.assertEqual(mean["state"], b["state"])
        self.assertNotIn("optimizer", mean)
        for name, t in average.average(a, b, 0.0)["model"].items():
            self.assertTrue(torch.equal(t, a["model"][name]), name)
        # the averaged checkpoint loads as a model, and a run refuses to resume it
        tmp = tempfile.mkdtemp()
        try:
            path = os.path.join(tmp, "avg", "checkpoint.pt")
            for name, saved in (("a", a), ("b", b)):
                torch.save(saved, os.path.join(tmp, f"{name}.pt"))
            self.assertEqual(average.main([os.path.join(tmp, "a.pt"), os.path.join(tmp, "b.pt"), "--weight", "0.25",
                                           "-o", path]), 0)
            saved = torch.load(path, map_location="cpu")
            self.assertEqual(saved["averaged"]["weight"], 0.25)
            net = M.Needle2(M.Geometry.from_dict(saved["geometry"]), cq.BitsMap.parse(saved["bits_map"]))
            net.load_state_dict(saved["model"])
            data = write_copy_data(os.path.join(tmp, "train.jsonl"), 8, seed=1)
            with self.assertRaises(SystemExit) as e:
                train.run(train.parse_args(["--data", data, "--out", os.path.dirname(path), "--resume", "--steps", "1"]))
            self.assertIn("an average of two runs", str(e.exception))
        finally:
            shutil.rmtree(tmp)

    def test_different_models_are_refused(self):
        import average
        a = self.checkpoint(1)
        with self.assertRaises(ValueError) as e:
            average.average(a, self.checkpoint(2, geometry="small"), 0.5)
        self.assertIn("geometry", str(e.exception))
        b = self.checkpoint(2)
        b["model"] = {k: v for k, v in b["model"].items() if k != "final_norm"}
        with self.assertRaises(ValueError):
            average.average(a, b, 0.5)
        with self.assertRaises(ValueError):
            average.average(a, self.checkpoint(2), 1.5)


class Grow(unittest.TestCase):
    """grow.py: layers added as the identity keep the model's logits, and train.py --init runs on."""

    def start(self):
        net = random_model("tiny", "embedding=4,mhc=4,default=2", seed=3)
        return net, {"model": net.state_dict(), "geometry": json.loads(net.g.to_json()),
                     "bits_map": "embedding=4,mhc=4,default=2", "args": {}, "state": {"step": 7, "tokens": 70}}

    def test_new_layers_start_as_the_identity(self):
        import grow
        net, start = self.start()
        out = grow.grow(start, after=1, add=4, seed=5)
        g = M.Geometry.from_dict(out["geometry"])
        self.assertEqual((g.num_layers, g.engram_sites), (8, [1, 7]))  # tiny: 4 layers, sites 1 and 3
        self.assertEqual(json.loads(out["args"]["geometry"]), out["geometry"])
        self.assertEqual(out["state"], {"step": 7, "tokens": 70})
        old = start["model"]
        for name, t in out["model"].items():
            if name in grow.PER_LAYER:
                self.assertEqual(t.shape[0], 8, name)
                for i, j in ((0, 0), (1, 1), (2, 6), (3, 7)):  # old layer i is layer j
                    self.assertTrue(torch.equal(t[j], old[name][i]), f"{name} layer {i}")
            else:
                self.assertTrue(torch.equal(t, old[name]), name)
        for i in range(2, 6):
            self.assertEqual(float(out["model"]["out_proj"][i].abs().max()), 0.0)
            self.assertEqual(float(out["model"]["d3"][i].abs().max()), 0.0)
            self.assertTrue(torch.equal(out["model"]["b_res"][i], grow.IDENTITY_ROUTING * torch.eye(4)))
            # its attention is a fresh layer's, not a copy
            self.assertFalse(torch.equal(out["model"]["q_proj"][i], old["q_proj"][1]))
        deeper = M.Needle2(g, cq.BitsMap.parse(out["bits_map"]))
        deeper.load_state_dict(out["model"])
        tokens = torch.randint(14, g.vocab, (2, 40), generator=torch.Generator().manual_seed(1))
        with torch.no_grad():
            before, after = net(tokens), deeper(tokens)
        scale = float(before.abs().max())
        self.assertLess(float((after - before).abs().max()), 1e-2 * scale)
        self.assertGreater(float((after - before).abs().max()), 0.0)  # the routing is near, not at, I

    def test_placements_that_would_move_the_lane_offsets_are_refused(self):
        import grow
        _, start = self.start()
        for after, add, why in ((1, 3, "multiple of the 4 lanes"), (4, 4, "layers are 0..3"),
                                (-1, 4, "layers are 0..3"), (1, 0, "multiple")):
            with self.assertRaises(ValueError) as e:
                grow.grow(start, after, add)
            self.assertIn(why, str(e.exception))

    def test_a_run_continues_from_the_grown_checkpoint(self):
        import grow
        tmp = tempfile.mkdtemp()
        try:
            _, start = self.start()
            path = os.path.join(tmp, "start.pt")
            torch.save(start, path)
            grown = os.path.join(tmp, "grown", "checkpoint.pt")
            with contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(grow.main(["--init", path, "--after", "3", "--add", "4", "-o", grown]), 0)
            data = write_copy_data(os.path.join(tmp, "train.jsonl"), 20, seed=1)
            result = train.run(train.parse_args([
                "--init", grown, "--data", data, "--batch-tokens", "256", "--warmup", "1", "--threads", "1",
                "--quiet", "--checkpoint-minutes", "0", "--out", os.path.join(tmp, "run"), "--steps", "2"]))
            self.assertEqual(result["state"]["step"], 2)
            saved = torch.load(os.path.join(tmp, "run", "checkpoint.pt"))
            self.assertEqual((saved["geometry"]["num_layers"], saved["geometry"]["engram_sites"]), (8, [1, 3]))
        finally:
            shutil.rmtree(tmp)


class Init(unittest.TestCase):
    def test_init_starts_a_new_run_from_another_runs_weights(self):
        tmp = tempfile.mkdtemp()
        try:
            data = write_copy_data(os.path.join(tmp, "train.jsonl"), 40, seed=1)
            common = ["--data", data, "--batch-tokens", "256", "--warmup", "3", "--threads", "1", "--quiet",
                      "--log-every", "1", "--checkpoint-minutes", "0"]
            train.run(train.parse_args(common + ["--geometry", "tiny", "--out", os.path.join(tmp, "a"), "--steps", "4"]))
            first = torch.load(os.path.join(tmp, "a", "checkpoint.pt"))
            # 0 steps of a new run: its weights are the first run's; its state and geometry are its own
            zero = train.run(train.parse_args(common + ["--init", os.path.join(tmp, "a", "checkpoint.pt"),
                                                        "--out", os.path.join(tmp, "b"), "--steps", "2"]))
            b = torch.load(os.path.join(tmp, "b", "checkpoint.pt"))
            self.assertEqual(zero["state"]["step"], 2)
            self.assertEqual(b["geometry"], first["geometry"])
            self.assertEqual(b["args"]["bits_map"], first["args"]["bits_map"])
            # its first loss is the first run's weights' loss (a fresh model's is far higher)
            fresh = train.run(train.parse_args(common + ["--geometry", "tiny", "--out", os.path.join(tmp, "c"),
                                                         "--steps", "1"]))
            self.assertLess(float(zero["rows"][0]["loss"]), float(fresh["rows"][0]["loss"]))
            with self.assertRaises(SystemExit):
                train.parse_args(common + ["--init", "x", "--resume", "--out", tmp, "--steps", "1"])
            # what is not a checkpoint stops the run (and transplant.py, the same helper) with its name
            truncated = os.path.join(tmp, "truncated.pt")
            with open(os.path.join(tmp, "b", "checkpoint.pt"), "rb") as f:
                pathlib.Path(truncated).write_bytes(f.read()[:1000])
            not_a_run = os.path.join(tmp, "list.pt")
            torch.save([1, 2], not_a_run)
            for path, why in ((truncated, "not a checkpoint"), (not_a_run, "not a train.py checkpoint"),
                              (os.path.join(tmp, "missing.pt"), "No such file"),
                              (os.path.join(tmp, "missing.cact"), "No such file")):
                with self.assertRaises(SystemExit) as e:
                    train.run(train.parse_args(common + ["--init", path, "--out", os.path.join(tmp, "d"),
                                                         "--steps", "1"]))
                self.assertIn(f"--init: {path}: {why}", str(e.exception))
                self.assertFalse(os.path.exists(os.path.join(tmp, "d", "checkpoint.pt")))
        finally:
            shutil.rmtree(tmp)


class InitFromArchive(unittest.TestCase):
    """train.py --init ARCHIVE (unpack.py): a run starts from a packed archive's dequantised weights."""
    # mixed widths, so that the bits map read back from the records is not just the default
    BITS = "embedding=4,mhc=3,attn.v_proj=1.58,default=2"

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.net = random_model("tiny", cls.BITS, seed=3)
        weights = os.path.join(cls.tmp, "m.safetensors")
        cls.archive_path = os.path.join(cls.tmp, "m.cact")
        export.export(cls.net, weights)
        subprocess.run([needle_tool("needle-pack"), "--safetensors", weights, "--bits-map", cls.BITS,
                        "-o", cls.archive_path], check=True, stdout=subprocess.DEVNULL)
        with open(cls.archive_path, "rb") as f:
            cls.bytes = f.read()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def write(self, name: str, data: bytes) -> str:
        path = os.path.join(self.tmp, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def test_weights_quantise_back_to_the_archive(self):
        loaded = unpack.load(self.archive_path)
        self.assertEqual(loaded["geometry"], json.loads(self.net.g.to_json()))
        net = M.Needle2(M.Geometry.from_dict(loaded["geometry"]), cq.BitsMap.parse(loaded["bits_map"]))
        self.assertEqual(net.cq_bits(), self.net.cq_bits())
        net.load_state_dict(loaded["model"])
        # tiny's engram tables have 64 columns: their groups are padded, the only inexact ones
        g = net.g
        padded = len(g.engram_sites) * g.num_engram_tables * g.engram_slots
        self.assertEqual(g.engram_sub_dim, 64)
        self.assertEqual(loaded["inexact_groups"], padded)
        # quantised again, the weights are the archive: the same indices and norms, the same fp16 values
        archive = cact.read(self.archive_path)
        tensors = export.archive_tensors(net)
        exact = 0
        for k, (key, values) in enumerate(tensors.items()):
            record = archive.records[k]
            if record.dtype == "CQ" and values.shape[1] % cq.GROUP == 0:
                exact += 1
                index, norm = archive.cq(k)
                q_index, q_norm = cq.quantize(torch.from_numpy(values), record.bits, exact=True)
                self.assertTrue(np.array_equal(q_index.numpy(), index), f"{key}: level indices differ")
                self.assertTrue(np.array_equal(q_norm.numpy(), norm), f"{key}: group norms differ")
            elif record.dtype == "FP16":
                self.assertTrue(np.array_equal(archive.fp16(k), values), key)
        self.assertEqual(exact, 1 + 5 * g.num_layers + 3 + 2 * len(g.engram_sites))
        # and the forward's weights are the original model's (f32 rounding of the rotation back
        # apart), except the padded engram tables (the forward test below bounds what they change)
        expected = self.net.archive_weights(qat=True, exact=True)
        for name, w in net.archive_weights(qat=True, exact=True).items():
            if name == "engram_tables":
                continue
            torch.testing.assert_close(w.detach(), expected[name].detach(), rtol=1e-5, atol=1e-6,
                                       msg=lambda m: f"{name}: {m}")

    def test_its_forward_is_needle_ref(self):
        import parity
        loaded = unpack.load(self.archive_path)
        net = M.Needle2(M.Geometry.from_dict(loaded["geometry"]), cq.BitsMap.parse(loaded["bits_map"]))
        net.load_state_dict(loaded["model"])
        ids = [2] + list(range(20, 60))
        for label, length, sink, worst, at in parity.check(BIN_DIR, net, self.archive_path, [("ids", ids, 0)]):
            self.assertLess(worst, 1e-3, f"maxRel {worst} at position {at}")

    def test_the_shipped_archive_unpacks_exactly(self):
        # d256l6 has no padded group: every CQ group's weights quantise back to the archive's
        loaded = unpack.load(os.path.join(ROOT, "models", "needlework-tools.cact"))
        self.assertEqual(loaded["inexact_groups"], 0)
        self.assertEqual(loaded["bits_map"], "default=4")
        self.assertEqual(loaded["geometry"]["d_model"], 256)

    def test_a_run_starts_from_the_archive(self):
        data = write_copy_data(os.path.join(self.tmp, "train.jsonl"), 40, seed=1)
        out = os.path.join(self.tmp, "run")
        result = train.run(train.parse_args(["--data", data, "--batch-tokens", "256", "--warmup", "3",
                                             "--threads", "1", "--quiet", "--checkpoint-minutes", "0",
                                             "--init", self.archive_path, "--out", out, "--steps", "1",
                                             "--lr", "1e-9", "--min-lr", "1e-9"]))
        self.assertEqual(result["state"]["step"], 1)
        saved = torch.load(os.path.join(out, "checkpoint.pt"))
        self.assertEqual(saved["bits_map"], "embedding=4,attn.v_proj=1.58,mhc_phi_pre=3,mhc_phi_post=3,mhc_phi_res=3,default=2")
        torch.testing.assert_close(saved["model"]["embedding"], unpack.load(self.archive_path)["model"]["embedding"],
                                   rtol=0, atol=1e-6)

    def test_an_archive_averages_as_its_dequantised_weights(self):
        import average
        start = unpack.load(self.archive_path)
        run = dict(start, model={k: v + 0.5 if v.is_floating_point() else v for k, v in start["model"].items()})
        run_path = os.path.join(self.tmp, "moved.pt")
        torch.save(run, run_path)
        out = os.path.join(self.tmp, "mean", "checkpoint.pt")
        self.assertEqual(average.main([self.archive_path, run_path, "--weight", "0.5", "-o", out]), 0)
        mean = torch.load(out, map_location="cpu")
        for name, t in start["model"].items():
            if t.is_floating_point():
                torch.testing.assert_close(mean["model"][name], t + 0.25, rtol=0, atol=1e-6, msg=name)
        # the archive as B: the mean is not taken for the archive itself (train.py --init would say so)
        self.assertEqual(average.main([run_path, self.archive_path, "--weight", "0.25", "-o", out]), 0)
        mean = torch.load(out, map_location="cpu")
        self.assertNotIn("archive", mean)
        torch.testing.assert_close(mean["model"]["embedding"], start["model"]["embedding"] + 0.375, rtol=0, atol=1e-6)
        # a broken archive is named, and nothing is written
        broken = self.write("broken-for-average.cact", self.bytes[:len(self.bytes) - 10])
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(average.main([broken, run_path, "-o", out + ".2"]), 1)
        self.assertIn(f"{broken}: ", err.getvalue())
        self.assertIn("blob ends past the archive", err.getvalue())
        self.assertFalse(os.path.exists(out + ".2"))
        # so is a file that is no checkpoint: read as train.py --init reads it (unpack.weights_of)
        junk = self.write("junk-for-average.pt", b"not a checkpoint")
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(average.main([run_path, junk, "-o", out + ".2"]), 1)
        self.assertIn(f"{junk}: not a checkpoint", err.getvalue())
        self.assertFalse(os.path.exists(out + ".2"))

    def test_bad_archives_name_the_problem(self):
        header = 232 + 44 * len(export.archive_tensors(self.net))
        cases = [
            ("short", self.bytes[:100], "shorter than the header"),
            ("directory", self.bytes[:300], "directory of"),
            ("truncated", self.bytes[:len(self.bytes) - 10], "blob ends past the archive"),
        ]
        bad_tag = bytearray(self.bytes)
        bad_tag[0] ^= 1
        cases.append(("tag", bytes(bad_tag), "is not Needle 2"))
        bad_codebook = bytearray(self.bytes)
        bad_codebook[124] ^= 1
        cases.append(("codebooks", bytes(bad_codebook), "codebooks differ"))
        bad_heads = bytearray(self.bytes)
        bad_heads[28:32] = (3).to_bytes(4, "little")  # num_heads 3: head_dim x heads != d_model
        cases.append(("geometry", bytes(bad_heads), "header: geometry field head_dim"))
        bad_shape = bytearray(self.bytes)
        offset = 232 + 44 * 0 + 4  # the embedding record's shape[0]
        bad_shape[offset:offset + 4] = (511).to_bytes(4, "little")
        cases.append(("shape", bytes(bad_shape), "embedding: shape (511, 128), expected (512, 128)"))
        self.assertLess(header, len(self.bytes))
        for name, data, message in cases:
            with self.assertRaises(unpack.ArchiveError, msg=name) as e:
                unpack.load(self.write(name + ".cact", data))
            self.assertIn(message, str(e.exception), name)
        with self.assertRaises(SystemExit) as e:
            train.run(train.parse_args(["--data", write_copy_data(os.path.join(self.tmp, "t.jsonl"), 4, 0),
                                        "--init", os.path.join(self.tmp, "truncated.cact"), "--quiet",
                                        "--out", os.path.join(self.tmp, "bad"), "--steps", "1"]))
        self.assertIn("blob ends past the archive", str(e.exception))


class Resume(unittest.TestCase):
    def test_an_interrupted_run_resumes_exactly(self):
        tmp = tempfile.mkdtemp()
        try:
            data = write_copy_data(os.path.join(tmp, "train.jsonl"), 60, seed=0)
            common = ["--data", data, "--geometry", "tiny", "--batch-tokens", "256", "--warmup", "3",
                      "--threads", "1", "--quiet", "--log-every", "2", "--checkpoint-minutes", "0"]
            straight = train.run(train.parse_args(common + ["--out", os.path.join(tmp, "a"), "--steps", "8"]))
            # Interrupted after 4 of its 8 steps (--stop-after ends an invocation early, as a crash would,
            # but right after a checkpoint).
            train.run(train.parse_args(common + ["--out", os.path.join(tmp, "b"), "--steps", "8",
                                                 "--stop-after", "4"]))
            # The run's settings (geometry, batch size, warmup ...) come from the checkpoint.
            resumed = train.run(train.parse_args(["--data", data, "--out", os.path.join(tmp, "b"), "--steps", "8",
                                                  "--resume", "--threads", "1", "--quiet", "--log-every", "2"]))
            self.assertEqual(straight["state"]["step"], 8)
            self.assertEqual(resumed["state"]["step"], 8)
            a = torch.load(os.path.join(tmp, "a", "checkpoint.pt"))
            b = torch.load(os.path.join(tmp, "b", "checkpoint.pt"))
            for key in a["model"]:
                self.assertTrue(torch.equal(a["model"][key], b["model"][key]), key)
            self.assertEqual([r["loss"] for r in straight["rows"]], [r["loss"] for r in resumed["rows"]])
            # The log counts the examples of the 8 batches run (epoch 0's, then epoch 1's).
            self.assertEqual(int(resumed["rows"][-1]["examples"]), straight["state"]["examples"])
            with open(data) as f:
                lengths = np.array([len(json.loads(x)["prompt_ids"]) + 3 for x in f])
            batches = train.epoch_batches(lengths, 256, 1, 0) + train.epoch_batches(lengths, 256, 1, 1)
            self.assertEqual(straight["state"]["examples"], sum(len(b) for b in batches[:8]))
        finally:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    if "--bin" in sys.argv:
        k = sys.argv.index("--bin")
        BIN_DIR = os.path.abspath(sys.argv[k + 1])
        del sys.argv[k:k + 2]
    torch.set_num_threads(1)
    unittest.main()
