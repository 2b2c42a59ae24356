"""model.py: Needle 2 (docs/model.md) as a batched PyTorch model for training.

The decode step of docs/model.md runs one token at a time; here every position of a right-padded
batch runs at once, with a causal (optionally windowed, optionally sink-pinned) attention mask in
place of the KV cache. Everything else follows docs/model.md in the same order and with the same
constants, so that the exported archive gives the same logits in needle-ref (tools/train/parity.py
checks it at every position).

Training-time choices (none of them changes the math):
- Per-layer tensors are stacked over layers ([L, ...]) so that one CQ fake-quantisation covers all
  layers; the query, key, value and gate projections of a layer run as one matrix product.
- Every CQ matrix is fake-quantised in the forward pass (cq.fake_quant) and every FP16 control tensor
  is rounded to fp16 (cq.fake_fp16): the model trains on the weights the archive will hold.
- The vocabulary projection runs only at the positions asked for (the reply tokens of the loss).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, asdict

import torch
import torch.nn as nn
import torch.nn.functional as F

import cq

EPS = 1e-6                 # inside every sqrt(mean(x^2) + eps)
SINKHORN_ITERATIONS = 20
PRE_OFFSET_ON, PRE_OFFSET_OFF = 4.0, -4.0     # hpre offset on lane i mod lanes, elsewhere
POST_OFFSET_ON, POST_OFFSET_OFF = 0.0, -4.0   # hpost offset on lane i mod lanes, elsewhere
HPOST_FACTOR = 2.0
HASH_SEED, HASH_PRIME, HASH_SHIFT = 0x9E3779B9, 0x01000193, 15
MASK32 = 0xFFFFFFFF


# ---------------------------------------------------------------------------------------------
# Geometry: the archive header's fields (host/geometry.hpp)
# ---------------------------------------------------------------------------------------------

@dataclass
class Geometry:
    vocab: int
    d_model: int
    num_heads: int
    num_kv_heads: int
    num_layers: int
    head_dim: int
    max_seq_len: int
    hada_n: int
    engram_slots: int
    engram_sub_dim: int
    num_engram_tables: int
    engram_orders: list
    engram_sites: list
    kv_window: int = 0
    rope_theta: float = 100000.0
    mhc_lanes: int = 4
    engram_conv_taps: int = 4
    engram_conv_dilation: int = 3
    kv_bits: int = 8
    codebook_len: int = 28

    @property
    def engram_heads(self) -> int:
        return self.num_engram_tables // len(self.engram_orders)

    @property
    def q_dim(self) -> int:
        return self.num_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.num_kv_heads * self.head_dim

    def table_orders(self) -> list:
        """The n-gram order of each table tau = oi * heads + h."""
        return [o for o in self.engram_orders for _ in range(self.engram_heads)]

    def validate(self) -> None:
        """The rules of validateGeometry (host/geometry.cpp) that a trainer can break."""
        def need(ok, field_, problem):
            if not ok:
                raise ValueError(f"geometry field {field_}: {problem}")
        need(self.head_dim * self.num_heads == self.d_model, "head_dim",
             f"{self.head_dim} x {self.num_heads} heads != d_model {self.d_model}")
        need(self.head_dim % 32 == 0, "head_dim", f"{self.head_dim} is not a multiple of 32")
        need(self.num_heads % self.num_kv_heads == 0, "num_kv_heads",
             f"{self.num_kv_heads} does not divide num_heads {self.num_heads}")
        need(self.hada_n >= self.d_model and self.hada_n & (self.hada_n - 1) == 0, "hada_n",
             f"{self.hada_n} must be a power of two >= d_model {self.d_model}")
        need(self.kv_window <= self.max_seq_len, "kv_window",
             f"{self.kv_window} exceeds max_seq_len {self.max_seq_len}")
        need(1 <= len(self.engram_orders) <= 4, "engram_orders", f"{self.engram_orders}: 1 to 4 orders")
        need(len(self.engram_sites) <= 4, "engram_sites", f"{self.engram_sites}: at most 4 sites")
        need(all(0 <= s < self.num_layers for s in self.engram_sites)
             and list(self.engram_sites) == sorted(set(self.engram_sites)), "engram_sites",
             f"{self.engram_sites} must be strictly increasing layers below {self.num_layers}")
        need(self.num_engram_tables % len(self.engram_orders) == 0 and self.num_engram_tables > 0,
             "num_engram_tables", f"{self.num_engram_tables} is not a multiple of the "
             f"{len(self.engram_orders)} orders")
        need(self.mhc_lanes >= 1, "mhc_lanes", "must be at least 1")

    def metadata(self) -> dict:
        """The safetensors __metadata__ that needle-pack reads (docs/cq.md §7): every header field
        by name as a decimal string, orders and sites as comma lists, no probe heads."""
        m = {k: str(getattr(self, k)) for k in (
            "codebook_len", "kv_window", "kv_bits", "vocab", "d_model", "num_heads", "num_kv_heads",
            "num_layers", "head_dim", "max_seq_len", "hada_n", "mhc_lanes", "engram_slots",
            "engram_sub_dim", "num_engram_tables", "engram_conv_taps", "engram_conv_dilation")}
        m["num_engram_orders"] = str(len(self.engram_orders))
        m["engram_orders"] = ",".join(str(o) for o in self.engram_orders)
        m["num_engram_sites"] = str(len(self.engram_sites))
        m["engram_sites"] = ",".join(str(s) for s in self.engram_sites)
        theta = float(torch.tensor(self.rope_theta, dtype=torch.float32))
        m["rope_theta"] = repr(int(theta)) if theta == int(theta) else repr(theta)
        m["head_codes"] = ""
        return m

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @staticmethod
    def from_dict(d: dict) -> "Geometry":
        g = Geometry(**d)
        g.engram_orders, g.engram_sites = list(g.engram_orders), list(g.engram_sites)
        g.validate()
        return g


def _candidate(d, layers, heads, kv_heads, hada, sub_dim, sites) -> dict:
    """The training candidates of docs/training.md: vocab 4096, head_dim 64, 4 lanes, engram orders
    (2, 3) with one head each (2 tables), kv_window 256, max_seq_len 1024."""
    return dict(vocab=4096, d_model=d, num_heads=heads, num_kv_heads=kv_heads, num_layers=layers,
                head_dim=64, max_seq_len=1024, hada_n=hada, engram_slots=4096,
                engram_sub_dim=sub_dim, num_engram_tables=2, engram_orders=[2, 3],
                engram_sites=list(sites), kv_window=256, rope_theta=100000.0)


PRESETS = {
    # host/geometry.cpp's presets
    "tiny": dict(vocab=512, d_model=128, num_heads=2, num_kv_heads=1, num_layers=4, head_dim=64,
                 max_seq_len=256, hada_n=128, engram_slots=256, engram_sub_dim=64,
                 num_engram_tables=2, engram_orders=[2, 3], engram_sites=[1, 3], kv_window=32,
                 rope_theta=10000.0),
    "small": dict(vocab=2048, d_model=256, num_heads=4, num_kv_heads=2, num_layers=6, head_dim=64,
                  max_seq_len=512, hada_n=256, engram_slots=1024, engram_sub_dim=128,
                  num_engram_tables=2, engram_orders=[2, 3], engram_sites=[2, 4], kv_window=64,
                  rope_theta=10000.0),
    "base": dict(vocab=8192, d_model=512, num_heads=8, num_kv_heads=4, num_layers=27, head_dim=64,
                 max_seq_len=2048, hada_n=512, engram_slots=8192, engram_sub_dim=128,
                 num_engram_tables=4, engram_orders=[2, 3], engram_sites=[2, 15], kv_window=256,
                 rope_theta=100000.0),
    # the training candidates (a) to (d)
    "d256l8": _candidate(256, 8, 4, 2, 256, 128, (2, 5)),
    "d256l6": _candidate(256, 6, 4, 2, 256, 128, (1, 4)),
    "d384l6": _candidate(384, 6, 6, 2, 512, 192, (1, 4)),
    "d192l8": _candidate(192, 8, 3, 1, 256, 96, (2, 5)),
}


def geometry_from(spec: str, vocab: int | None = None) -> Geometry:
    """A preset name, a JSON object, or a path to a JSON file; `vocab` overrides the preset's."""
    if spec in PRESETS:
        d = dict(PRESETS[spec])
    elif spec.lstrip().startswith("{"):
        d = json.loads(spec)
    else:
        with open(spec) as f:
            d = json.load(f)
    if isinstance(d.get("base"), str):  # {"base": "d256l8", "num_layers": 4, ...}: a preset, edited
        base = dict(PRESETS[d.pop("base")])
        base.update(d)
        d = base
    if vocab is not None:
        d["vocab"] = vocab
    return Geometry.from_dict(d)


# ---------------------------------------------------------------------------------------------
# Helpers of docs/model.md
# ---------------------------------------------------------------------------------------------

def rmsunit(x: torch.Tensor) -> torch.Tensor:
    """x / sqrt(mean(x^2) + 1e-6) over the last axis."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS)


def zcrms(x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """(1 + s) * x / sqrt(mean(x^2) + 1e-6): the stored scale s is zero-centred."""
    return _ZcRms.apply(x, s)


class _ZcRms(torch.autograd.Function):
    """ZCRMS with a hand-written backward: fewer passes over the activations than autograd's
    (training time is mostly such passes on a CPU). With r = 1/sqrt(mean(x^2) + eps), x^ = x r and
    c = 1 + s: y = c x^; dL/dx = r (g c - x^ mean(g c x^)); dL/ds = sum over positions of g x^."""

    @staticmethod
    def forward(ctx, x, s):
        n = x.shape[-1]
        r = torch.rsqrt(torch.linalg.vector_norm(x, dim=-1, keepdim=True).square() / n + EPS)
        ctx.save_for_backward(x, s, r)
        return x * r * (1.0 + s)

    @staticmethod
    def backward(ctx, g):
        x, s, r = ctx.saved_tensors
        n = x.shape[-1]
        xhat = x * r
        gc = g * (1.0 + s)
        dot = (gc * xhat).sum(-1, keepdim=True)
        gx = torch.addcmul(gc, xhat, dot, value=-1.0 / n) * r
        gs = (g * xhat).reshape(-1, n).sum(0).reshape(s.shape) if ctx.needs_input_grad[1] else None
        return gx, gs


def sinkhorn_log(m: torch.Tensor, iterations: int = SINKHORN_ITERATIONS) -> torch.Tensor:
    """Log-domain Sinkhorn on [..., n, n]: each iteration subtracts every row's logsumexp, then every
    column's; returns exp(M), whose columns sum to 1."""
    for _ in range(iterations):
        m = m - torch.logsumexp(m, dim=-1, keepdim=True)
        m = m - torch.logsumexp(m, dim=-2, keepdim=True)
    return torch.exp(m)


def engram_slots(tokens: torch.Tensor, g: Geometry) -> torch.Tensor:
    """[B, T] token ids -> [B, T, tables] slots (docs/model.md 3.1), vectorised.

    Table tau = oi * heads + h hashes the last orders[oi] tokens: acc = 0x9E3779B9 (tau + 1);
    acc = (acc ^ tok[p - j]) * 0x01000193 for j = 0..order-1, all mod 2^32, where a position before
    the start reads token 0; then acc ^= acc >> 15 and slot = acc mod slots. int64 holds every
    product exactly (acc < 2^32, the multiplier < 2^25).
    """
    tokens = tokens.to(torch.int64)
    B, T = tokens.shape
    out = []
    max_order = max(g.engram_orders)
    shifted = [tokens] + [F.pad(tokens, (j, 0))[:, :T] for j in range(1, max_order)]
    for tau, order in enumerate(g.table_orders()):
        acc = torch.full_like(tokens, (HASH_SEED * (tau + 1)) & MASK32)
        for j in range(order):
            acc = ((acc ^ shifted[j]) * HASH_PRIME) & MASK32
        acc = acc ^ (acc >> HASH_SHIFT)
        out.append(acc % g.engram_slots)
    return torch.stack(out, dim=-1)


def engram_hash_raw(table: int, order: int, tokens: list, position: int) -> int:
    """One raw accumulator (after the final xor-shift), scalar: the design page's test vector form."""
    acc = (HASH_SEED * (table + 1)) & MASK32
    for j in range(order):
        tok = tokens[position - j] if position >= j else 0
        acc = ((acc ^ tok) * HASH_PRIME) & MASK32
    return acc ^ (acc >> HASH_SHIFT)


def rope_tables(g: Geometry, device) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin [max_seq_len, hd/2] as docs/numerics.md fixes them: freq_m in f64 rounded to f32,
    angle = f32(p) * freq_m in f32, cos/sin of the f32 angle in f64, rounded to f32."""
    hd = g.head_dim
    m = torch.arange(hd // 2, dtype=torch.float64)
    theta = float(torch.tensor(g.rope_theta, dtype=torch.float32))
    freq = (1.0 / torch.exp(math.log(theta) * ((2.0 * m) / hd))).to(torch.float32)
    p = torch.arange(g.max_seq_len, dtype=torch.float32)
    angle = (p[:, None] * freq[None, :]).to(torch.float64)
    return torch.cos(angle).float().to(device), torch.sin(angle).float().to(device)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate-half on [B, T, heads, hd] with cos/sin [T, hd/2]: (x_m, x_{m+h}) ->
    (x_m cos - x_{m+h} sin, x_{m+h} cos + x_m sin)."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    c, s = cos[:, None, :], sin[:, None, :]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)


def attention_bias(T: int, window: int, sink, device) -> torch.Tensor:
    """Additive mask (0 attended, -inf not) for queries p and keys pk (docs/model.md "Keys attended"):
    pk < min(sink, p + 1), or max(sink, p - W + 1) <= pk <= p; W = 0 is plain causal. `sink` is an
    int (one for the batch: [T, T]) or a [B] tensor (one per sequence: [B, 1, T, T])."""
    p = torch.arange(T, device=device)[:, None]
    pk = torch.arange(T, device=device)[None, :]
    causal = pk <= p
    if isinstance(sink, torch.Tensor):
        s = sink.to(device)[:, None, None]
        recent = (pk >= p - window + 1) if window else torch.ones_like(causal)
        keep = causal & (recent[None] | (pk[None] < s))
        keep = keep[:, None]
    else:
        keep = causal
        if window:
            keep = causal & ((pk >= p - window + 1) | (pk < sink))
    bias = torch.zeros(keep.shape, device=device)
    return bias.masked_fill(~keep, float("-inf"))


# ---------------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------------

# Each parameter of the model: its archive key pattern and role. CQ matrices carry upstream's
# canonical bits name (host/layout.cpp) so that the bits map applies as in needle-pack.
LAYER_CQ = {"q_proj": "attn.q_proj", "k_proj": "attn.k_proj", "v_proj": "attn.v_proj",
            "gate_proj": "attn.gate_proj", "out_proj": "attn.out_proj"}
LAYER_FP16 = ("norm_in", "q_norm", "k_norm", "post_norm", "attn_gate", "pre_hada", "d1", "d2", "d3")
MHC_CQ = {"phi_pre": "mhc_phi_pre", "phi_post": "mhc_phi_post", "phi_res": "mhc_phi_res"}
MHC_FP16 = ("a_pre", "a_post", "a_res", "b_pre", "b_post", "b_res")


class Needle2(nn.Module):
    """The whole model; parameters are the archive's tensors, stacked over layers and sites."""

    def __init__(self, g: Geometry, bits: cq.BitsMap, seed: int = 0):
        super().__init__()
        g.validate()
        self.g, self.bits = g, bits
        self.dropout = 0.0  # of the blocks' branch outputs while training (train.py --dropout; _drop)
        d, L, N, hd = g.d_model, g.num_layers, g.mhc_lanes, g.head_dim
        S, Tt, n = len(g.engram_sites), g.num_engram_tables, g.hada_n
        gen = torch.Generator().manual_seed(seed)

        def normal(shape, std):
            return nn.Parameter(torch.randn(*shape, generator=gen) * std)

        def const(shape, value):
            return nn.Parameter(torch.full(shape, float(value)))

        # Initial values as upstream's architecture.py: Dense kernels normal(0.02), the two residual
        # writers (out_proj, engram value_proj) normal(0.02 / sqrt(2L)), a_* = 0.01, b_res = 4 I,
        # d1 = d2 = 1, d3 = 0.02, taps[0] = 1, zero-centred norm scales 0, attn_gate 0.
        residual_std = 0.02 / math.sqrt(2 * L)
        self.embedding = normal((g.vocab, d), 0.02)
        self.q_proj = normal((L, g.q_dim, d), 0.02)
        self.k_proj = normal((L, g.kv_dim, d), 0.02)
        self.v_proj = normal((L, g.kv_dim, d), 0.02)
        self.gate_proj = normal((L, g.q_dim, d), 0.02)
        self.out_proj = normal((L, d, g.q_dim), residual_std)
        self.norm_in = const((L, d), 0)
        self.q_norm = const((L, hd), 0)
        self.k_norm = const((L, hd), 0)
        self.post_norm = const((L, d), 0)
        self.attn_gate = const((L,), 0)
        self.pre_hada = const((L, d), 0)
        self.d1 = const((L, n), 1)
        self.d2 = const((L, n), 1)
        self.d3 = const((L, n), 0.02)
        self.a_pre = const((L,), 0.01)
        self.a_post = const((L,), 0.01)
        self.a_res = const((L,), 0.01)
        self.b_pre = const((L, N), 0)
        self.b_post = const((L, N), 0)
        self.b_res = nn.Parameter(4.0 * torch.eye(N).repeat(L, 1, 1))
        self.phi_pre = normal((L, N, N * d), 0.02)        # row N i + k of mhc.phi_pre
        self.phi_post = normal((L, N, N * d), 0.02)
        self.phi_res = normal((L, N * N, N * d), 0.02)    # row N^2 i + N r + c of mhc.phi_res
        self.engram_tables = normal((S, Tt * g.engram_slots, g.engram_sub_dim), 0.02)
        self.engram_key_proj = normal((S, d, Tt * g.engram_sub_dim), 0.02)
        self.engram_value_proj = normal((S, d, Tt * g.engram_sub_dim), residual_std)
        taps = torch.zeros(S, g.engram_conv_taps, d)
        taps[:, 0] = 1.0
        self.engram_taps = nn.Parameter(taps)
        self.final_norm = const((d,), 0)

        # Constants (buffers, not saved in checkpoints).
        lane = torch.arange(N)
        on = (lane[None, :] == (torch.arange(L)[:, None] % N))
        self.register_buffer("pre_off", torch.where(on, PRE_OFFSET_ON, PRE_OFFSET_OFF), persistent=False)
        self.register_buffer("post_off", torch.where(on, POST_OFFSET_ON, POST_OFFSET_OFF), persistent=False)
        self.register_buffer("hada", cq.hadamard(n), persistent=False)
        cos, sin = rope_tables(g, "cpu")
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self._bias_cache = {}

    # ---- parameters as the archive holds them ----

    def cq_bits(self) -> dict:
        """Parameter name -> CQ width, by the bits map on upstream's canonical names."""
        b = self.bits.bits_for
        out = {"embedding": b("embedding")}
        out.update({k: b(v) for k, v in LAYER_CQ.items()})
        out.update({k: b(v) for k, v in MHC_CQ.items()})
        for s in range(len(self.g.engram_sites)):
            # Per-site names differ only by the site number; a bits map could tell them apart.
            for part in ("tables", "key_proj", "value_proj"):
                out[f"engram_{part}.{s}"] = b(f"engram{s}.{part}")
        return out

    def fp16_names(self) -> list:
        return list(LAYER_FP16) + list(MHC_FP16) + ["engram_taps", "final_norm"]

    def archive_weights(self, qat: bool = True, exact: bool = False) -> dict:
        """Every parameter as the forward uses it: CQ matrices fake-quantised, FP16 tensors rounded
        (qat=True), or the float values as they are (qat=False). exact=True makes the quantiser's
        decisions in f64, bit for bit needle-pack's (cq.fake_quant_many)."""
        w = {name: p for name, p in self.named_parameters()}
        if not qat:
            return w
        bits = self.cq_bits()
        names, tensors, widths = [], [], []
        for name in ("embedding", *LAYER_CQ, *MHC_CQ):
            names.append(name), tensors.append(w[name]), widths.append(bits[name])
        for part in ("tables", "key_proj", "value_proj"):
            for s in range(len(self.g.engram_sites)):
                names.append(f"engram_{part}.{s}")
                tensors.append(w[f"engram_{part}"][s])
                widths.append(bits[f"engram_{part}.{s}"])
        quantised = dict(zip(names, cq.fake_quant_many(tensors, widths, exact)))
        out = {name: quantised[name] for name in ("embedding", *LAYER_CQ, *MHC_CQ)}
        for part in ("tables", "key_proj", "value_proj"):
            sites = [quantised[f"engram_{part}.{s}"] for s in range(len(self.g.engram_sites))]
            out[f"engram_{part}"] = torch.stack(sites) if sites else w[f"engram_{part}"]
        for name in self.fp16_names():
            out[name] = cq.fake_fp16(w[name])
        return out

    def _bias(self, T: int, sink, device) -> torch.Tensor:
        if isinstance(sink, torch.Tensor):
            return attention_bias(T, self.g.kv_window, sink, device)
        key = (T, self.g.kv_window, int(sink), str(device))
        if key not in self._bias_cache:
            self._bias_cache[key] = attention_bias(T, self.g.kv_window, int(sink), device)
        return self._bias_cache[key]

    # ---- the forward pass ----

    def forward(self, tokens: torch.Tensor, logit_index: torch.Tensor | None = None, sink=0,
                qat: bool = True, exact: bool = False) -> torch.Tensor:
        """tokens [B, T] (right padded; padding never reaches a real position: attention is causal and
        the engram hash reads only earlier tokens). Returns logits [M, vocab] at the flat positions
        `logit_index` (into B*T), or at every position [B, T, vocab] when it is None."""
        g = self.g
        B, T = tokens.shape
        if T > g.max_seq_len:
            raise ValueError(f"sequence of {T} tokens is longer than max_seq_len {g.max_seq_len}")
        d, N, L = g.d_model, g.mhc_lanes, g.num_layers
        w = self.archive_weights(qat, exact)

        # 1. Embedding (the CQ matrix, dequantised) x sqrt(d); 2. lane broadcast.
        e = w["embedding"].index_select(0, tokens.reshape(-1)).reshape(B, T, d) * math.sqrt(d)
        X = e[:, :, None, :].expand(B, T, N, d)

        # 3. Engram keys and values for every site, from the tokens alone.
        engram = self._engram(tokens, w) if g.engram_sites else None

        bias = self._bias(T, sink, tokens.device)
        cos, sin = self.rope_cos[:T], self.rope_sin[:T]
        phi = torch.cat([w["phi_pre"], w["phi_post"], w["phi_res"]], dim=1)   # [L, 2N + N^2, N d]
        attn_in = torch.cat([w["q_proj"], w["k_proj"], w["v_proj"], w["gate_proj"]], dim=1)

        # 4. The layers.
        for i in range(L):
            X = self._layer(i, X, w, phi[i], attn_in[i], engram, bias, cos, sin)

        # 5. Output: lane mean, final norm, tied logits where asked.
        x = X.mean(dim=2)
        if logit_index is None:
            return zcrms(x, w["final_norm"]) @ w["embedding"].t()
        x = x.reshape(B * T, d).index_select(0, logit_index)
        return zcrms(x, w["final_norm"]) @ w["embedding"].t()

    # ---- the grouped forward: one prefix, several suffixes ----

    def forward_grouped(self, prefix_tokens: torch.Tensor, prefix_lengths, suffix_tokens: torch.Tensor,
                        suffix_lengths, logit_index: torch.Tensor | None = None, sink: int = 0,
                        qat: bool = True, exact: bool = False) -> torch.Tensor:
        """Groups of sequences that share their beginning (docs/training.md, "Grouped batches").

        Sequence (g, k) is prefix_tokens[g, :prefix_lengths[g]] followed by
        suffix_tokens[g, k, :suffix_lengths[g, k]]; prefix_tokens [G, Lp] and suffix_tokens
        [G, K, Ls] are right padded, and a suffix of length 0 is absent. Every suffix position is
        forward()'s position of its concatenated sequence, computed with the prefix run once per
        group: at each layer a suffix position p (absolute: prefix length + offset) attends to the
        group's prefix keys and its own suffix's keys up to p, as "Keys attended" allows (window,
        sink); RoPE, the engram hash and the engram taps use absolute positions and read across the
        boundary. Only real positions run the per-position steps; attention gathers them into padded
        blocks. Returns logits at suffix positions: [M, vocab] at the flat positions logit_index
        into [G, K, Ls], or [G, K, Ls, vocab] (zeros at padding) when it is None.
        """
        g = self.g
        G, Lp = prefix_tokens.shape
        if suffix_tokens.dim() != 3 or suffix_tokens.shape[0] != G:
            raise ValueError(f"suffix_tokens {list(suffix_tokens.shape)}: expected [G={G}, K, Ls]")
        K, Ls = suffix_tokens.shape[1:]
        device = prefix_tokens.device
        plen = torch.as_tensor(prefix_lengths, device=device).long()
        slen = torch.as_tensor(suffix_lengths, device=device).long()
        self._check_grouped(plen, slen, G, Lp, K, Ls)
        d, N, L = g.d_model, g.mhc_lanes, g.num_layers
        w = self.archive_weights(qat, exact)
        lay = self._grouped_layout(plen, slen, Lp, K, Ls, int(sink))

        # 1.-2. Embedding and lane broadcast of the real positions only (the rows: every group's
        # prefix positions, then every suffix's positions).
        tokens = torch.cat([prefix_tokens.reshape(-1).index_select(0, lay["prefix_padded"]),
                            suffix_tokens.reshape(-1).index_select(0, lay["suffix_padded"])])
        R = tokens.numel()
        e = w["embedding"].index_select(0, tokens) * math.sqrt(d)
        X = e[None, :, None, :].expand(1, R, N, d)

        # 3. Engram keys and values of every row.
        engram = self._engram_grouped(prefix_tokens, suffix_tokens, plen, lay, w) if g.engram_sites else None

        cos = self.rope_cos.index_select(0, lay["positions"])                  # [R, hd/2]
        sin = self.rope_sin.index_select(0, lay["positions"])
        phi = torch.cat([w["phi_pre"], w["phi_post"], w["phi_res"]], dim=1)
        attn_in = torch.cat([w["q_proj"], w["k_proj"], w["v_proj"], w["gate_proj"]], dim=1)

        # 4. The layers: model.md's per-position steps on the rows, attention in padded blocks.
        for i in range(L):
            X = self._layer_with(i, X, w, phi[i], engram,
                                 lambda b, i=i: self._grouped_attention(i, b, w, attn_in[i], lay, cos, sin))

        # 5. Output at the suffix positions asked for.
        x = X.mean(dim=2)[0]                                                   # [R, d]
        if logit_index is None:
            padded = x.new_zeros(G * K * Ls, d).index_copy(0, lay["suffix_padded"], x[lay["prefix_rows"]:])
            return (zcrms(padded, w["final_norm"]) @ w["embedding"].t()).reshape(G, K, Ls, g.vocab)
        rows = lay["suffix_row"].index_select(0, logit_index.to(device))
        if bool((rows < 0).any()):
            bad = int(logit_index[(rows < 0).nonzero()[0, 0]])
            raise ValueError(f"logit_index {bad} (group {bad // (K * Ls)}, suffix {bad // Ls % K}, offset "
                             f"{bad % Ls}) is padding, not a suffix position")
        return zcrms(x.index_select(0, rows), w["final_norm"]) @ w["embedding"].t()

    def _check_grouped(self, plen, slen, G, Lp, K, Ls):
        """The lengths of forward_grouped's inputs: their shapes, within the padded sizes, and every
        sequence (prefix + suffix) within max_seq_len; errors name the group and suffix."""
        if plen.shape != (G,):
            raise ValueError(f"prefix_lengths {list(plen.shape)}: expected [G={G}]")
        if slen.shape != (G, K):
            raise ValueError(f"suffix_lengths {list(slen.shape)}: expected [G={G}, K={K}]")
        for name, lengths, size in (("prefix_lengths", plen, Lp), ("suffix_lengths", slen, Ls)):
            bad = ((lengths < 0) | (lengths > size)).nonzero()
            if len(bad):
                where = ", ".join(str(int(x)) for x in bad[0])
                raise ValueError(f"{name}[{where}] = {int(lengths[tuple(bad[0])])}: outside 0..{size}")
        total = plen[:, None] + slen
        bad = (total > self.g.max_seq_len).nonzero()
        if len(bad):
            gi, k = (int(x) for x in bad[0])
            raise ValueError(f"group {gi} suffix {k}: {int(plen[gi])} + {int(slen[gi, k])} tokens is longer "
                             f"than max_seq_len {self.g.max_seq_len}")

    def _grouped_layout(self, plen, slen, Lp, K, Ls, sink) -> dict:
        """Where forward_grouped's rows come from and go to, and its attention masks.

        prefix_padded / suffix_padded: the flat padded position ([G, Lp] / [G, K, Ls]) of each row;
        prefix_rows: how many rows are prefix positions; positions: each row's absolute position;
        gather_prefix [G Lp] / gather_suffix [G K Ls]: the row of each padded position (row 0 at
        padding); suffix_row: the row of each padded suffix position, -1 at padding;
        row_source: each row's place in the padded prefixes and suffixes laid end to end; prefix_mask
        [rep Lp, Lp] and suffix_mask [G K KV, rep Ls, Lp + Ls]: additive masks (0 attended)."""
        g = self.g
        device = plen.device
        G = plen.numel()
        rep = g.num_heads // g.num_kv_heads
        prefix_real = torch.arange(Lp, device=device)[None, :] < plen[:, None]              # [G, Lp]
        suffix_real = torch.arange(Ls, device=device)[None, None, :] < slen[:, :, None]     # [G, K, Ls]
        prefix_padded = prefix_real.reshape(-1).nonzero().squeeze(1)
        suffix_padded = suffix_real.reshape(-1).nonzero().squeeze(1)
        Rp, Rs = prefix_padded.numel(), suffix_padded.numel()
        R = Rp + Rs
        if R == 0:
            raise ValueError("forward_grouped: every prefix and suffix is empty")
        # Padding reads row 0: its keys are masked (weight exactly 0) and its query rows' outputs are
        # dropped, so neither the values nor the gradients of the padding matter.
        gather_prefix = torch.zeros(G * Lp, dtype=torch.long, device=device)
        gather_prefix[prefix_padded] = torch.arange(Rp, device=device)
        gather_suffix = torch.zeros(G * K * Ls, dtype=torch.long, device=device)
        gather_suffix[suffix_padded] = torch.arange(Rp, R, device=device)
        suffix_row = torch.full((G * K * Ls,), -1, dtype=torch.long, device=device)
        suffix_row[suffix_padded] = torch.arange(Rp, R, device=device)
        positions = torch.cat([prefix_padded % Lp, plen[suffix_padded // (K * Ls)] + suffix_padded % Ls])

        # Keys attended by suffix offset t of group g, at absolute position P = plen[g] + t: the
        # group's prefix keys pk < plen[g], and the suffix's own keys t' <= t; with a window W, only
        # those at P - W + 1 or later, or below the sink.
        W = g.kv_window
        t = torch.arange(Ls, device=device)[:, None]                                       # [Ls, 1]
        pk = torch.arange(Lp, device=device)[None, None, :]                                # [1, 1, Lp]
        P = plen[:, None, None] + t[None]                                                  # [G, Ls, 1]
        keep_prefix = (pk < plen[:, None, None]).expand(G, Ls, Lp)
        tk = torch.arange(Ls, device=device)[None, :]                                      # [1, Ls]
        keep_suffix = (tk <= t)[None].expand(G, Ls, Ls)
        if W:
            keep_prefix = keep_prefix & ((pk >= P - W + 1) | (pk < sink))
            keep_suffix = keep_suffix & ((tk >= t - W + 1)[None] | (plen[:, None, None] + tk[None] < sink))
        keep = torch.cat([keep_prefix, keep_suffix], dim=-1)                               # [G, Ls, Lp + Ls]
        bias = torch.zeros(keep.shape, device=device).masked_fill(~keep, float("-inf"))
        S = Lp + Ls
        suffix_mask = bias[:, None, None, None].expand(G, K, g.num_kv_heads, rep, Ls, S)
        return {"prefix_padded": prefix_padded, "suffix_padded": suffix_padded, "prefix_rows": Rp,
                "positions": positions, "gather_prefix": gather_prefix, "gather_suffix": gather_suffix,
                "suffix_row": suffix_row,
                "row_source": torch.cat([prefix_padded, G * Lp + suffix_padded]),
                "prefix_mask": self._bias(Lp, sink, device).repeat(rep, 1),
                "suffix_mask": suffix_mask.reshape(G * K * g.num_kv_heads, rep * Ls, S),
                "shape": (G, Lp, K, Ls)}

    def _engram_grouped(self, prefix_tokens, suffix_tokens, plen, lay, w):
        """Per site: (k_p, v'_p) [1, R, d] of forward_grouped's rows (docs/model.md step 3). The
        prefixes run as in forward(); each suffix runs with the `halo` prefix tokens before it, so
        that its hash reads the real previous tokens and its taps the prefix's v at p - 3j (halo
        positions before 0 hold token 0 and give zero rows, as before a sequence's start)."""
        g = self.g
        G, Lp, K, Ls = lay["shape"]
        d = g.d_model
        taps_span = (g.engram_conv_taps - 1) * g.engram_conv_dilation
        hash_span = max(g.engram_orders) - 1
        halo = taps_span + hash_span   # the first hash_span columns only feed the hash of later ones
        prefix_k, prefix_v = self._engram(prefix_tokens, w)
        position = plen[:, None] + torch.arange(-halo, 0, device=plen.device)[None, :]    # [G, halo]
        before = torch.where(position >= 0, prefix_tokens.gather(1, position.clamp(min=0)),
                             torch.zeros_like(position))
        ext = torch.cat([before[:, None].expand(G, K, halo), suffix_tokens], dim=2).reshape(G * K, halo + Ls)
        start = (plen - halo)[:, None].expand(G, K).reshape(-1)
        suffix_k, suffix_v = self._engram(ext, w, start)
        keys, values = [], []
        for pk_, pv_, sk_, sv_ in zip(prefix_k, prefix_v, suffix_k, suffix_v):
            for out, pre, suf in ((keys, pk_, sk_), (values, pv_, sv_)):
                both = torch.cat([pre.reshape(G * Lp, d), suf[:, halo:].reshape(G * K * Ls, d)])
                out.append(both.index_select(0, lay["row_source"])[None])
        return keys, values

    def _grouped_attention(self, i, b, w, attn_in_i, lay, cos, sin):
        """forward_grouped's attention output a [1, R, d] for the layer input b [1, R, d]: q, k, v and
        the gate per row (q, k normed and rotated at the row's absolute position), then the prefixes
        attend among themselves and every suffix to its group's prefix and to itself (_attend)."""
        g = self.g
        G, Lp, K, Ls = lay["shape"]
        H, KV, hd = g.num_heads, g.num_kv_heads, g.head_dim
        R = b.shape[1]
        h = zcrms(b[0], w["norm_in"][i])
        q, k, v, gate = torch.split(h @ attn_in_i.t(), [g.q_dim, g.kv_dim, g.kv_dim, g.q_dim], dim=-1)
        q = apply_rope(zcrms(q.reshape(R, H, hd), w["q_norm"][i]), cos, sin)
        k = apply_rope(zcrms(k.reshape(R, KV, hd), w["k_norm"][i]), cos, sin)
        qkv = torch.cat([q.reshape(R, H * hd), k.reshape(R, KV * hd), v], dim=1)
        parts = [H * hd, KV * hd, KV * hd]
        qp, kp, vp = torch.split(qkv.index_select(0, lay["gather_prefix"]).reshape(G, Lp, -1), parts, dim=-1)
        qs, ks, vs = torch.split(qkv.index_select(0, lay["gather_suffix"]).reshape(G * K, Ls, -1), parts, dim=-1)
        o_prefix = self._attend(qp, kp, vp, lay["prefix_mask"])                # [G, Lp, H hd]
        # Each suffix's keys: its group's (padded) prefix, then its own positions.
        kp = kp[:, None].expand(G, K, Lp, KV * hd).reshape(G * K, Lp, KV * hd)
        vp = vp[:, None].expand(G, K, Lp, KV * hd).reshape(G * K, Lp, KV * hd)
        o_suffix = self._attend(qs, torch.cat([kp, ks], dim=1), torch.cat([vp, vs], dim=1), lay["suffix_mask"])
        o = torch.cat([o_prefix.reshape(G * Lp, H * hd), o_suffix.reshape(G * K * Ls, H * hd)])
        o = o.index_select(0, lay["row_source"]) * torch.sigmoid(gate)
        return (o @ w["out_proj"][i].t())[None]

    def _attend(self, q, k, v, mask):
        """softmax(q k^T / sqrt(hd) + mask) v for q [B, T, H hd], k and v [B, S, KV hd]; query head j
        reads KV head j // rep, laid out as in _attention (the rep query heads of a KV head along
        time); mask [rep T, S] or [B KV, rep T, S]. Returns [B, T, H hd]."""
        g = self.g
        B, T = q.shape[:2]
        S = k.shape[1]
        H, KV, hd = g.num_heads, g.num_kv_heads, g.head_dim
        rep = H // KV
        q = q.reshape(B, T, KV, rep, hd).permute(0, 2, 3, 1, 4).reshape(B * KV, rep * T, hd)
        k = k.reshape(B, S, KV, hd).permute(0, 2, 3, 1).reshape(B * KV, hd, S)
        v = v.reshape(B, S, KV, hd).permute(0, 2, 1, 3).reshape(B * KV, S, hd)
        weights = torch.softmax(torch.baddbmm(mask, q, k, alpha=1.0 / math.sqrt(hd)), dim=-1)
        return (weights @ v).reshape(B, KV, rep, T, hd).permute(0, 3, 1, 2, 4).reshape(B, T, H * hd)

    def _engram(self, tokens: torch.Tensor, w: dict, start: torch.Tensor | None = None):
        """Per site: (k_p [B, T, d], v'_p [B, T, d]) of docs/model.md step 3. Column c of row b is
        position start[b] + c (start None: 0) for the rule that a table is used only once its n-gram
        is whole; the hash and the taps read only the row's own earlier columns (zeros before)."""
        g = self.g
        B, T = tokens.shape
        Tt, slots, sub = g.num_engram_tables, g.engram_slots, g.engram_sub_dim
        slot = engram_slots(tokens, g)                                       # [B, T, Tt]
        rows = slot + torch.arange(Tt, device=tokens.device) * slots         # row tau * slots + slot
        # A table is used only once its n-gram is whole: p - (order - 1) >= 0.
        orders = torch.tensor(g.table_orders(), device=tokens.device)
        position = torch.arange(T, device=tokens.device)
        if start is None:
            whole = (position[:, None] >= orders[None, :] - 1)[None, :, :, None]          # [1, T, Tt, 1]
        else:
            position = start.to(tokens.device)[:, None] + position[None, :]              # [B, T]
            whole = (position[:, :, None] >= orders[None, None, :] - 1)[..., None]       # [B, T, Tt, 1]
        keys, values = [], []
        for s in range(len(g.engram_sites)):
            e = w["engram_tables"][s].index_select(0, rows.reshape(-1)).reshape(B, T, Tt, sub)
            e = (e * whole).reshape(B, T, Tt * sub)
            k = e @ w["engram_key_proj"][s].t()
            v = e @ w["engram_value_proj"][s].t()
            taps = w["engram_taps"][s]
            # Dilated causal taps on v only: v'_p = sum_j taps[j] * v_{p - dilation j}, zero before 0.
            vt = taps[0] * v
            for j in range(1, g.engram_conv_taps):
                shift = j * g.engram_conv_dilation
                if shift < T:
                    vt = vt + taps[j] * F.pad(v, (0, 0, shift, 0))[:, :T]
            keys.append(k)
            values.append(vt)
        return keys, values

    def _layer(self, i, X, w, phi_i, attn_in_i, engram, bias, cos, sin):
        """Layer i of docs/model.md step 4 on the lanes X [B, T, N, d]."""
        return self._layer_with(i, X, w, phi_i, engram,
                                lambda b: self._attention(i, b, w, attn_in_i, bias, cos, sin))

    def _layer_with(self, i, X, w, phi_i, engram, attention):
        """Layer i on the lanes X [B, T, N, d], where attention(b) is the block's attention output a
        (docs/model.md 4.7, Wout included) for the layer input b [B, T, d]: every other step is per
        position."""
        g = self.g
        B, T, N, d = X.shape
        # a.-e. mHC coefficients. nx = rmsunit(lanes) enters only through the projections, so the
        # 1/rms factor is applied to their 2N + N^2 outputs instead of to the N d inputs.
        Xf = X.reshape(B, T, N * d)
        inv_rms = torch.rsqrt(torch.linalg.vector_norm(Xf, dim=-1, keepdim=True).square() / (N * d) + EPS)
        proj = (Xf @ phi_i.t()) * inv_rms                                     # [B, T, 2N + N^2]
        hpre = torch.sigmoid(w["a_pre"][i] * proj[..., :N] + w["b_pre"][i] + self.pre_off[i])
        hpost = HPOST_FACTOR * torch.sigmoid(
            w["a_post"][i] * proj[..., N:2 * N] + w["b_post"][i] + self.post_off[i])
        M = w["a_res"][i] * proj[..., 2 * N:].reshape(B, T, N, N) + w["b_res"][i]
        P = sinkhorn_log(M)
        # One batched product gives both the routed lanes P X (rows 0..N-1) and the pre-mix
        # u = sum_k hpre_k X_k (row N).
        PX, u = torch.split(torch.cat([P, hpre[:, :, None, :]], dim=2) @ X, [N, 1], dim=2)
        u = u.squeeze(2)

        # g. Engram gate at a site layer.
        b = u
        if i in g.engram_sites:
            s = g.engram_sites.index(i)
            k_p, v_p = engram[0][s], engram[1][s]
            alpha = torch.sigmoid((rmsunit(u) * rmsunit(k_p)).sum(-1, keepdim=True) / math.sqrt(d))
            b = u + alpha * v_p

        # h. The block: attention, then the Hadamard MLP.
        x1 = b + torch.sigmoid(w["attn_gate"][i]) * self._drop(zcrms(attention(b), w["post_norm"][i]))
        out = x1 + self._drop(self._mlp(i, x1, w))

        # i.-j. y = out - u; routing X_r <- sum_c P_rc X_c + hpost_r y.
        y = out - u
        return torch.addcmul(PX, hpost[..., None], y[:, :, None, :])

    def _drop(self, branch):
        """A block's branch output with dropout (train.py --dropout) while training; unchanged in eval
        mode and at dropout 0, so the forward the engines must match never sees it."""
        if self.dropout and self.training:
            return F.dropout(branch, self.dropout, training=True)
        return branch

    def _attention(self, i, b, w, attn_in_i, bias, cos, sin):
        """a = Wout((softmax(q k^T / sqrt(hd) + mask) v) * sigmoid(g)) with normed, rotated q and k."""
        g = self.g
        B, T, d = b.shape
        H, KV, hd = g.num_heads, g.num_kv_heads, g.head_dim
        rep = H // KV
        h = zcrms(b, w["norm_in"][i])
        qkvg = h @ attn_in_i.t()
        q, k, v, gate = torch.split(qkvg, [g.q_dim, g.kv_dim, g.kv_dim, g.q_dim], dim=-1)
        q = apply_rope(zcrms(q.reshape(B, T, H, hd), w["q_norm"][i]), cos, sin)
        k = apply_rope(zcrms(k.reshape(B, T, KV, hd), w["k_norm"][i]), cos, sin)
        # Query head j reads KV head j // rep: group the rep query heads of a KV head along time.
        q = q.reshape(B, T, KV, rep, hd).permute(0, 2, 3, 1, 4).reshape(B, KV, rep * T, hd)
        k = k.permute(0, 2, 3, 1)                                             # [B, KV, hd, T]
        v = v.reshape(B, T, KV, hd).permute(0, 2, 1, 3)                       # [B, KV, T, hd]
        # score = q.k / sqrt(hd) plus the mask, in one batched product (the mask repeated for the
        # rep query heads that share a KV head).
        if bias.dim() == 2:
            mask = bias.repeat(rep, 1)                                        # [rep T, T]
        else:
            mask = bias[:, :, None].expand(B, 1, rep, T, T).reshape(B, 1, rep * T, T)
            mask = mask.expand(B, KV, rep * T, T).reshape(B * KV, rep * T, T)
        scores = torch.baddbmm(mask, q.reshape(B * KV, rep * T, hd), k.reshape(B * KV, hd, T),
                               alpha=1.0 / math.sqrt(hd))
        weights = torch.softmax(scores, dim=-1).reshape(B, KV, rep * T, T)
        o = (weights @ v).reshape(B, KV, rep, T, hd).permute(0, 3, 1, 2, 4).reshape(B, T, H * hd)
        o = o * torch.sigmoid(gate)
        return o @ w["out_proj"][i].t()

    def _mlp(self, i, x1, w):
        """(d3 * H_n silu(d2 * H_n (d1 * pad(ZCRMS(x1, pre_hada)))))[:d]; the zero padding is skipped by
        using only the first d rows (and columns) of H_n."""
        d = self.g.d_model
        z = zcrms(x1, w["pre_hada"][i])
        z = (w["d1"][i][:d] * z) @ self.hada[:d]
        z = F.silu(w["d2"][i] * z) @ self.hada[:, :d]
        return w["d3"][i][:d] * z


def count_parameters(model: Needle2) -> int:
    return sum(p.numel() for p in model.parameters())
