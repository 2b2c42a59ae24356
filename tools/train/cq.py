"""cq.py: Cactus-Quants (docs/cq.md) for training: codebooks, the quantiser, fake quantisation.

The trainer sees every CQ matrix exactly as needle-pack will store it: per row, groups of 128 along
the input axis (zero padded), rotated by the orthonormal Walsh-Hadamard matrix, the group norm, the
nearest codebook level (an exact tie takes the lower index), the norm rounded to fp16, and back.
The straight-through estimator passes the gradient to the float weights unchanged.

The index decision is made in f64, as host/cq.cpp makes it, so that the indices and norms equal
needle-pack's (tests/train/test_trainer.py checks them against a packed archive). The dequantised
values are f32: norm x level, then the rotation back, as `dequantizeRow` does.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import torch

GROUP = 128  # every CQ record of a Needle 2 archive has group 128

# The design page's codebooks (needle2-cact.md §1.2): cb2 as bits, cb3/cb4 as printed with 9
# significant digits (the nearest f32 of each string is the value itself).
DESIGN_CB2_BITS = (0xBE085E47, 0xBD237060, 0x3D23FC09, 0x3E08A9DB)
DESIGN_CB34 = (
    "-0.189261362", "-0.117884994", "-0.0661496893", "-0.0210134611", "0.0221010316",
    "0.0667850673", "0.118262075", "0.189826027",
    "-0.239531547", "-0.180706054", "-0.140957937", "-0.109012552", "-0.0815129653",
    "-0.0565276518", "-0.0329391509", "-0.0101161096", "0.0127108004", "0.0357079171",
    "0.0594582558", "0.0849770233", "0.112741619", "0.144696921", "0.184239", "0.242273703")

# Ternary (bits-map width 1.58, record bits 5): levels {-t, 0, +t}, t = c / sqrt(G), f32.
TERNARY_C = 1.2240064
TERNARY_BITS = 5


def compute_codebooks() -> np.ndarray:
    """The 28 header floats cb2 | cb3 | cb4 (docs/cq.md §2), as float32.

    400,000 draws of numpy's legacy RandomState(0).randn, sorted; initial centroids at the linear
    sample quantiles (k + 1/2) / levels; 200 Lloyd iterations (boundaries at the midpoints of adjacent
    centroids, each centroid the f64 mean of its cell); divided by sqrt(128) in f64, then one cast to
    f32. The iteration count and dividing before the cast both change the result (docs/cq.md).
    """
    samples = np.sort(np.random.RandomState(0).randn(400_000))
    out = []
    for levels in (4, 8, 16):
        centroids = np.quantile(samples, (np.arange(levels) + 0.5) / levels)
        for _ in range(200):
            boundaries = (centroids[:-1] + centroids[1:]) / 2
            edges = np.concatenate(([0], np.searchsorted(samples, boundaries), [samples.size]))
            centroids = np.array([samples[edges[k]:edges[k + 1]].mean() for k in range(levels)])
        out.append(centroids / math.sqrt(GROUP))
    return np.concatenate(out).astype(np.float32)


def design_codebooks() -> np.ndarray:
    """The design page's 28 floats, parsed from its printed form."""
    cb2 = np.array(DESIGN_CB2_BITS, dtype=np.uint32).view(np.float32)
    cb34 = np.array([np.float32(s) for s in DESIGN_CB34], dtype=np.float32)
    return np.concatenate([cb2, cb34])


@lru_cache(maxsize=1)
def codebooks() -> np.ndarray:
    """compute_codebooks(), once per process, checked bit for bit against the design page."""
    cb = compute_codebooks()
    expected = design_codebooks()
    if cb.view(np.uint32).tolist() != expected.view(np.uint32).tolist():
        raise RuntimeError("recomputed CQ codebooks differ from the design page's (numpy changed "
                           "RandomState or quantile?)")
    return cb


def levels_for(bits: int) -> np.ndarray:
    """The sorted f32 levels of a width: 2, 3, 4 (codebook) or 5 (ternary {-t, 0, +t})."""
    cb = codebooks()
    if bits == 2:
        return cb[0:4]
    if bits == 3:
        return cb[4:12]
    if bits == 4:
        return cb[12:28]
    if bits == TERNARY_BITS:
        t = np.float32(TERNARY_C / math.sqrt(GROUP))
        return np.array([-t, 0, t], dtype=np.float32)
    raise ValueError(f"CQ width {bits} is not 2, 3, 4 or 5 (ternary)")


def hadamard(n: int, dtype=torch.float32) -> torch.Tensor:
    """The orthonormal Sylvester Walsh-Hadamard matrix H_n, entry (i, j) = (-1)^popcount(i & j)/sqrt(n).

    Symmetric, so x @ H_n applies the transform to the rows of x. Built in f64 (entries +-1 exact),
    scaled by 1/sqrt(n) in f64 and then rounded to `dtype` once.
    """
    if n < 1 or n & (n - 1):
        raise ValueError(f"Hadamard size {n} is not a power of two")
    i = torch.arange(n)
    parity = torch.zeros(n, n, dtype=torch.int64)
    bits = i[:, None] & i[None, :]
    while bool(bits.any()):
        parity ^= bits & 1
        bits = bits >> 1
    signs = 1.0 - 2.0 * parity.to(torch.float64)
    return (signs / math.sqrt(n)).to(dtype)


# ---- bits map (needle-pack's --bits-map, host/layout.cpp BitsMap) ----

@dataclass
class BitsMap:
    """CQ width by the longest matching prefix of upstream's canonical name, else the default."""
    default: int = 4
    prefixes: list = field(default_factory=list)  # [(prefix, bits)]

    @staticmethod
    def parse(text: str) -> "BitsMap":
        """'embedding=4,mhc=4,default=2' (a bare width is the default; 1.58 means ternary = 5)."""
        def width(value: str, entry: str) -> int:
            if value in ("2", "3", "4"):
                return int(value)
            if value in ("1.58", "5"):
                return TERNARY_BITS
            raise ValueError(f"bits map entry '{entry}': width '{value}' is not one of 2, 3, 4 or 1.58")

        if not text.strip():
            raise ValueError("bits map is empty (expected e.g. \"embedding=4,mhc=4,default=2\")")
        result, saw_default = BitsMap(), False
        for raw in text.split(","):
            entry = raw.strip()
            if not entry:
                raise ValueError(f"bits map '{text}' has an empty entry")
            name, eq, value = entry.partition("=")
            if not eq:
                name, value = "default", entry
            name, value = name.strip(), value.strip()
            if not name:
                raise ValueError(f"bits map entry '{entry}' has no name before '='")
            if name == "default":
                if saw_default:
                    raise ValueError(f"bits map '{text}' sets the default width twice")
                result.default, saw_default = width(value, entry), True
            else:
                if any(p == name for p, _ in result.prefixes):
                    raise ValueError(f"bits map '{text}' names '{name}' twice")
                result.prefixes.append((name, width(value, entry)))
        return result

    def bits_for(self, bits_name: str) -> int:
        bits, best = self.default, 0
        for prefix, b in self.prefixes:
            if len(prefix) > best and bits_name.startswith(prefix):
                bits, best = b, len(prefix)
        return bits


# ---- the quantiser and its inverse ----

class CqTables:
    """Per device: H_128 (f64 for the decision, f32 for the way back), levels and midpoints per width."""

    def __init__(self, device):
        self.device = torch.device(device)
        self.h64 = hadamard(GROUP, torch.float64).to(self.device)
        self.h32 = hadamard(GROUP, torch.float32).to(self.device)
        self.levels = {}
        self.midpoints = {}
        self.midpoints32 = {}
        for bits in (2, 3, 4, TERNARY_BITS):
            lv = levels_for(bits)
            self.levels[bits] = torch.tensor(lv, dtype=torch.float32, device=self.device)
            # The midpoint of two f32 levels is exact in f64, so a tie is an exact notion.
            mid = (lv[:-1].astype(np.float64) + lv[1:].astype(np.float64)) / 2
            self.midpoints[bits] = torch.tensor(mid, dtype=torch.float64, device=self.device)
            self.midpoints32[bits] = self.midpoints[bits].to(torch.float32)


_TABLES: dict = {}


def tables(device) -> CqTables:
    key = str(torch.device(device))
    if key not in _TABLES:
        _TABLES[key] = CqTables(device)
    return _TABLES[key]


def _groups(w: torch.Tensor) -> torch.Tensor:
    """[rows, in] -> [rows, groups, 128], zero padded along the input axis."""
    rows, cols = w.shape
    pad = (-cols) % GROUP
    if pad:
        w = torch.nn.functional.pad(w, (0, pad))
    return w.reshape(rows, -1, GROUP)


def quantize(w: torch.Tensor, bits: int, exact: bool = True):
    """needle-pack's quantiser on a [rows, in] matrix: (level index [rows, groups, 128] int64, the
    fp16-rounded group norm [rows, groups] float32).

    r = H_128 w per group and n = ||r|| in f64; u = r / max(n, 1e-12); the index is the number of
    midpoints that u lies strictly above (a tie takes the lower index); the stored norm is f64 -> f32
    -> fp16 (ties to even). For ternary the index is into {-t, 0, +t} (not the stored crumb).
    """
    with torch.no_grad():
        g = _groups(w.detach())
        index, norm = _quantize_groups(g.reshape(-1, GROUP), bits, exact)
    return index.reshape(g.shape), norm.reshape(g.shape[:2])


def _quantize_groups(g: torch.Tensor, bits: int, exact: bool):
    """[n, 128] groups -> (index [n, 128], fp16-rounded norm [n] as float32)."""
    t = tables(g.device)
    if exact:
        r = g.to(torch.float64) @ t.h64
        mid = t.midpoints[bits]
    else:
        r = g.to(torch.float32) @ t.h32
        mid = t.midpoints32[bits]
    n = torch.linalg.vector_norm(r, dim=-1)
    u = r / n.clamp_min(1e-12)[:, None]
    index = torch.bucketize(u, mid, right=False)
    return index, n.to(torch.float32).to(torch.float16).to(torch.float32)


def dequantize_groups(index: torch.Tensor, norm: torch.Tensor, bits: int) -> torch.Tensor:
    """[n, 128] float32: per group H_128 (norm x level[index])."""
    t = tables(index.device)
    return (t.levels[bits][index] * norm[:, None]) @ t.h32


def dequantize(index: torch.Tensor, norm: torch.Tensor, bits: int, cols: int) -> torch.Tensor:
    """[rows, cols] float32 from quantize()'s index [rows, groups, 128] and norm [rows, groups]."""
    rows = index.shape[0]
    w = dequantize_groups(index.reshape(-1, GROUP), norm.reshape(-1), bits)
    return w.reshape(rows, -1)[:, :cols]


def preimage(index: torch.Tensor, norm: torch.Tensor, bits: int, cols: int) -> tuple[torch.Tensor, int]:
    """Float weights [rows, cols] that quantize() maps back to exactly (index, norm), and the number of
    groups for which none was found (those hold dequantize()'s values).

    dequantize()'s values are not such weights: their rotated group is norm x level, whose norm is
    norm x ||level|| (a few percent off for 2 bits), so quantising them again moves every norm and
    some indices. Here each group's unit vector u is moved inside its cells (u_k between the midpoints
    around level index_k, a margin away from them) until ||u|| = 1, by alternating normalisation and
    clamping; then w = (norm x u) H_128, in f64. A group padded past `cols` keeps dequantize()'s values
    (its padding would have to be non-zero).
    """
    t = tables(index.device)
    rows = index.shape[0]
    flat = index.reshape(-1, GROUP)
    levels = t.levels[bits].to(torch.float64)
    mids = t.midpoints[bits]
    inf = torch.tensor([math.inf], dtype=torch.float64, device=index.device)
    margin = 1e-6  # far above f32 rounding of the rotation (|u| < 0.3, relative 1e-7)
    lo = torch.cat([-inf, mids])[flat] + margin
    hi = torch.cat([mids, inf])[flat] - margin
    u = levels[flat]
    for _ in range(100):
        u = (u / torch.linalg.vector_norm(u, dim=-1, keepdim=True)).clamp(lo, hi)
    n = torch.linalg.vector_norm(u, dim=-1)
    found = (n - 1).abs() < 1e-9
    groups = norm.reshape(-1).to(torch.float64)
    w = ((groups[:, None] * u) @ t.h64).to(torch.float32)
    plain = dequantize_groups(flat, norm.reshape(-1), bits)
    padded = (-cols) % GROUP
    if padded:
        last = torch.zeros(rows, index.shape[1], dtype=torch.bool, device=index.device)
        last[:, -1] = True
        found &= ~last.reshape(-1)
    w = torch.where(found[:, None], w, plain)
    return w.reshape(rows, -1)[:, :cols], int((~found).sum())


class _StraightThrough(torch.autograd.Function):
    """Forward: the quantised values q; backward: the gradient passes to w unchanged."""

    @staticmethod
    def forward(ctx, w, q):
        return q

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def fake_quant(w: torch.Tensor, bits: int, exact: bool = True) -> torch.Tensor:
    """The CQ round trip of w (any shape [..., in]) with a straight-through gradient."""
    return fake_quant_many([w], [bits], exact)[0]


def fake_quant_many(weights: list, widths: list, exact: bool = False) -> list:
    """fake_quant of several matrices, one quantiser call per width (their groups concatenated).

    exact=True decides in f64 as needle-pack does (bit-exact indices and norms); exact=False decides
    in f32, which is faster and differs only where a value lies within f32 rounding of a midpoint
    or a norm within one f32 ulp of an fp16 rounding boundary (the tests bound how rarely).
    """
    out = [None] * len(weights)
    for bits in sorted(set(widths)):
        members = [k for k, b in enumerate(widths) if b == bits]
        with torch.no_grad():
            flats = [weights[k].detach().reshape(-1, weights[k].shape[-1]) for k in members]
            groups = [_groups(f).reshape(-1, GROUP) for f in flats]
            sizes = [g.shape[0] for g in groups]
            allg = torch.cat(groups) if len(groups) > 1 else groups[0]
            index, norm = _quantize_groups(allg, bits, exact)
            deq = dequantize_groups(index, norm, bits)
            parts = [part.reshape(f.shape[0], -1)[:, :f.shape[1]].reshape(weights[k].shape)
                     for k, f, part in zip(members, flats, torch.split(deq, sizes))]
        for k, q in zip(members, parts):
            out[k] = _StraightThrough.apply(weights[k], q.to(weights[k].dtype))
    return out


def fake_fp16(w: torch.Tensor) -> torch.Tensor:
    """w rounded to fp16 (what an FP16 record stores), with a straight-through gradient."""
    return _StraightThrough.apply(w, w.detach().to(torch.float16).to(w.dtype))
