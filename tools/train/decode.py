"""decode.py: the trained PyTorch model run incrementally, and as a backend of the tool-call session.

Two parts:

1. `DecodeSession`: docs/model.md's decode step on a `model.Needle2`'s weights, with the session
   state the engines keep: the token history, per layer the KV cache (the normed, rotated key and
   the raw value of every position run), per engram site the ring of raw value projections that the
   dilated taps read. `feed(ids)` runs a chunk of positions at once (a prompt in one call, a forced
   fragment in one call, a sampled token alone) and attends, for each of them, to exactly the keys
   model.md's "Keys attended" gives for the geometry's kv_window and the session's sink. The lanes
   are rebuilt from the embedding at every position, as in the engines. Weights:
     - "float": the parameters as trained, nothing quantised or rounded ("the float model");
     - "quantised": every CQ matrix as needle-pack stores it (the exact f64 decider) and every FP16
       tensor rounded: the packed archive's weights in f32 arithmetic, i.e. what
       `needle-ref --kv f32 --act f32` computes.
   The cache is kept by logical position (the engines wrap it into kv_window + sink rows; which keys
   a query sees is the same).

2. `ToolcallModel`: the C API of the tool-call session (host/toolcall/capi.h, docs/toolcall.md "The
   C API", BUILD/lib/libneedle_toolcall.so) over ctypes, with a `DecodeSession` as its backend. The
   backend offers reset, feed and logits only (no heads); the session samples in C++ with the
   engine's sampler from those logits, so the prompt, masks, forced fragments, budget and reply
   parsing are the code the page runs.

    net = export.load_model("build/train/checkpoint.pt")
    session = DecodeSession(net, "float")
    with ToolcallModel("build/lib/libneedle_toolcall.so", archive_tokenizer_blob("m.cact"), net.g) as tc:
        envelope = tc.complete({"tools": [...], "request": "..."}, session)
"""
from __future__ import annotations

import ctypes
import json
import math
import os
import resource
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cact  # noqa: E402
import model as M  # noqa: E402

WEIGHTS = ("float", "quantised")


# ---------------------------------------------------------------------------------------------
# 1. The incremental model
# ---------------------------------------------------------------------------------------------

class DecodeSession:
    """One decode session of docs/model.md on a trained model's weights (see the module's docstring).

    reset(sink) starts an empty session whose first `sink` positions stay attended; feed(ids,
    want_logits) runs ids at the next positions and keeps the logits after the last one
    (`self.logits`, a [vocab] f32 tensor) when asked."""

    def __init__(self, net: M.Needle2, weights: str = "float", device="cpu"):
        if weights not in WEIGHTS:
            raise ValueError(f"weights must be one of {WEIGHTS}, not {weights!r}")
        g = net.g
        self.g, self.weights, self.device = g, weights, torch.device(device)
        with torch.no_grad():
            w = net.archive_weights(qat=weights == "quantised", exact=True)
            self.w = {name: t.detach().to(self.device, torch.float32).clone() for name, t in w.items()}
        w = self.w
        # Per layer: the three mHC projections as one matrix ([2N + N^2, N d]: pre, post, res rows) and
        # the q, k, v, gate projections as one ([H hd + 2 KV hd + H hd, d]); the same numbers as
        # separate products.
        self.phi = torch.cat([w["phi_pre"], w["phi_post"], w["phi_res"]], dim=1)
        self.attn_in = torch.cat([w["q_proj"], w["k_proj"], w["v_proj"], w["gate_proj"]], dim=1)
        self.pre_off = net.pre_off.to(self.device)
        self.post_off = net.post_off.to(self.device)
        self.hada = net.hada.to(self.device)                     # H_n, symmetric
        self.rope_cos = net.rope_cos.to(self.device)
        self.rope_sin = net.rope_sin.to(self.device)
        # The engram ring: row p mod R holds v_p; the taps read back (taps - 1) * dilation positions.
        self.ring_rows = (g.engram_conv_taps - 1) * g.engram_conv_dilation + 1
        self.reset(0)

    # ---- state ----

    def reset(self, sink: int = 0) -> None:
        """A new, empty session with `sink` pinned positions."""
        g = self.g
        if sink < 0:
            raise ValueError(f"sink {sink} is negative")
        self.sink = int(sink)
        self.position = 0                                        # the next logical position
        self.tokens = torch.zeros(g.max_seq_len, dtype=torch.int64, device=self.device)
        shape = (g.num_layers, g.num_kv_heads, g.max_seq_len, g.head_dim)
        self.keys = torch.zeros(shape, device=self.device)       # normed, rotated k by position
        self.values = torch.zeros(shape, device=self.device)     # raw v by position
        self.ring = torch.zeros(len(g.engram_sites), self.ring_rows, g.d_model, device=self.device)
        self.logits = None

    @torch.no_grad()
    def feed(self, ids, want_logits: bool = True) -> None:
        """Runs ids at positions position .. position + n - 1 (docs/model.md "One step", for all of
        them at once). A chunk that would pass max_seq_len or holds an id >= vocab is refused before
        anything changes."""
        g = self.g
        ids = [int(t) for t in ids]
        n, p0 = len(ids), self.position
        if n == 0:
            raise ValueError("feed: no ids")
        if p0 + n > g.max_seq_len:
            raise ValueError(f"feed: positions {p0}..{p0 + n - 1} pass max_seq_len {g.max_seq_len}")
        bad = [t for t in ids if not 0 <= t < g.vocab]
        if bad:
            raise ValueError(f"feed: token id {bad[0]} is outside the vocabulary of {g.vocab}")
        p1 = p0 + n
        self.tokens[p0:p1] = torch.tensor(ids, dtype=torch.int64, device=self.device)
        w, d, N = self.w, g.d_model, g.mhc_lanes

        # 1.-2. Embedding x sqrt(d), broadcast to the lanes.
        e = w["embedding"][self.tokens[p0:p1]] * math.sqrt(d)   # [n, d]
        X = e[:, None, :].expand(n, N, d)
        # 3. Engram keys and values of these positions, per site.
        engram = [self._engram(s, p0, p1) for s in range(len(g.engram_sites))]
        # 4. The layers.
        attended = self.attended(p0, p1)
        for i in range(g.num_layers):
            X = self._layer(i, X, p0, p1, engram, attended)
        self.position = p1
        # 5. Output at the last position: lane mean, final norm, tied logits.
        if want_logits:
            x = M.zcrms(X[-1].mean(dim=0), w["final_norm"])
            self.logits = w["embedding"] @ x
        else:
            self.logits = None

    def attended(self, p0: int, p1: int) -> torch.Tensor:
        """[n, p1] bool: key position pk is attended from query p (model.md "Keys attended"): every
        pk < min(sink, p + 1), plus every pk with max(sink, p - W + 1) <= pk <= p (W = 0: all pk <= p)."""
        p = torch.arange(p0, p1, device=self.device)[:, None]
        pk = torch.arange(p1, device=self.device)[None, :]
        causal = pk <= p
        if not self.g.kv_window:
            return causal
        pinned = pk < self.sink
        recent = pk >= torch.clamp(p - self.g.kv_window + 1, min=self.sink)
        return causal & (pinned | recent)

    # ---- the parts of a step ----

    def _engram(self, s: int, p0: int, p1: int):
        """(k_p, v'_p) [n, d] of site s for positions p0..p1-1 (model.md step 3); updates the ring."""
        g, w = self.g, self.w
        n, Tt, sub = p1 - p0, g.num_engram_tables, g.engram_sub_dim
        # 3.1 Slots from the token history (positions before 0 read token 0).
        slot = M.engram_slots(self.tokens[None, :p1], g)[0, p0:p1]            # [n, Tt]
        rows = slot + torch.arange(Tt, device=self.device) * g.engram_slots
        # 3.2-3.3 A table's row only once its n-gram is whole (p >= order - 1), else zeros.
        orders = torch.tensor(g.table_orders(), device=self.device)
        whole = torch.arange(p0, p1, device=self.device)[:, None] >= orders[None, :] - 1
        e_p = (w["engram_tables"][s][rows] * whole[:, :, None]).reshape(n, Tt * sub)
        # 3.4 Key and value projections.
        k_p = e_p @ w["engram_key_proj"][s].t()
        v_p = e_p @ w["engram_value_proj"][s].t()
        # 3.5 Dilated causal taps on v: v'_p = sum_j taps[j] v_{p - dilation j}, terms before 0 dropped.
        # `history` holds v for positions p0 - (R - 1) .. p1 - 1: the ring's rows, then this chunk.
        R = self.ring_rows
        before = [self.ring[s, q % R] if q >= 0 else torch.zeros(g.d_model, device=self.device)
                  for q in range(p0 - (R - 1), p0)]
        history = torch.cat([torch.stack(before), v_p]) if before else v_p
        taps = w["engram_taps"][s]
        v_tapped = torch.zeros_like(v_p)
        for j in range(g.engram_conv_taps):
            back = j * g.engram_conv_dilation
            v_tapped = v_tapped + taps[j] * history[R - 1 - back:R - 1 - back + n]
        for t in range(max(0, n - R), n):                        # ring row p mod R <- v_p
            self.ring[s, (p0 + t) % R] = v_p[t]
        return k_p, v_tapped

    def _layer(self, i: int, X: torch.Tensor, p0: int, p1: int, engram: list, attended: torch.Tensor):
        """Layer i (model.md step 4) on the lanes X [n, N, d] of positions p0..p1-1."""
        g, w = self.g, self.w
        n, N, d = X.shape
        # 4.1-4.3 mHC coefficients from nx = rmsunit(all lanes).
        nx = M.rmsunit(X.reshape(n, N * d))
        proj = nx @ self.phi[i].t()                                            # [n, 2N + N^2]
        hpre = torch.sigmoid(w["a_pre"][i] * proj[:, :N] + w["b_pre"][i] + self.pre_off[i])
        hpost = M.HPOST_FACTOR * torch.sigmoid(w["a_post"][i] * proj[:, N:2 * N] + w["b_post"][i]
                                               + self.post_off[i])
        M_res = w["a_res"][i] * proj[:, 2 * N:].reshape(n, N, N) + w["b_res"][i]
        # 4.4 Sinkhorn; 4.5 the pre-mix u = sum_k hpre_k X_k.
        P = M.sinkhorn_log(M_res)                                              # [n, N, N]
        u = (hpre[:, :, None] * X).sum(dim=1)
        # 4.6 Engram gate at a site layer.
        b = u
        if i in g.engram_sites:
            k_p, v_tapped = engram[g.engram_sites.index(i)]
            alpha = torch.sigmoid((M.rmsunit(u) * M.rmsunit(k_p)).sum(-1, keepdim=True) / math.sqrt(d))
            b = u + alpha * v_tapped
        # 4.7 Attention; 4.8 the Hadamard MLP; 4.9 the update y.
        a = self._attention(i, b, p0, p1, attended)
        x1 = b + torch.sigmoid(w["attn_gate"][i]) * M.zcrms(a, w["post_norm"][i])
        out = x1 + self._mlp(i, x1)
        y = out - u
        # 4.10 Routing: X_r <- sum_c P_rc X_c + hpost_r y.
        return P @ X + hpost[:, :, None] * y[:, None, :]

    def _attention(self, i: int, b: torch.Tensor, p0: int, p1: int, attended: torch.Tensor):
        """a = Wout(o * sigmoid(g)); o from the normed, rotated queries of these positions over the
        cached keys they attend (this chunk's keys written to the cache first)."""
        g, w = self.g, self.w
        n = b.shape[0]
        H, KV, hd = g.num_heads, g.num_kv_heads, g.head_dim
        rep = H // KV
        h = M.zcrms(b, w["norm_in"][i])
        q, k, v, gate = torch.split(h @ self.attn_in[i].t(), [g.q_dim, g.kv_dim, g.kv_dim, g.q_dim], dim=-1)
        cos, sin = self.rope_cos[p0:p1], self.rope_sin[p0:p1]
        q = M.apply_rope(M.zcrms(q.reshape(n, H, hd), w["q_norm"][i]), cos, sin)
        k = M.apply_rope(M.zcrms(k.reshape(n, KV, hd), w["k_norm"][i]), cos, sin)
        self.keys[i, :, p0:p1] = k.transpose(0, 1)
        self.values[i, :, p0:p1] = v.reshape(n, KV, hd).transpose(0, 1)
        # Query head j reads KV head j // rep: the rep query heads of a KV head share its keys.
        q = q.reshape(n, KV, rep, hd).permute(1, 2, 0, 3).reshape(KV, rep * n, hd)
        scores = q @ self.keys[i, :, :p1].transpose(1, 2) / math.sqrt(hd)     # [KV, rep n, p1]
        scores = scores.masked_fill(~attended.repeat(rep, 1)[None], float("-inf"))
        o = torch.softmax(scores, dim=-1) @ self.values[i, :, :p1]            # [KV, rep n, hd]
        o = o.reshape(KV, rep, n, hd).permute(2, 0, 1, 3).reshape(n, H * hd)
        return (o * torch.sigmoid(gate)) @ w["out_proj"][i].t()

    def _mlp(self, i: int, x1: torch.Tensor) -> torch.Tensor:
        """(d3 * H_n silu(d2 * H_n (d1 * pad(ZCRMS(x1, pre_hada)))))[:d]."""
        w, d = self.w, self.g.d_model
        z = F.pad(M.zcrms(x1, w["pre_hada"][i]), (0, self.g.hada_n - d))
        z = (w["d1"][i] * z) @ self.hada
        z = F.silu(w["d2"][i] * z) @ self.hada
        return (w["d3"][i] * z)[:, :d]


# ---------------------------------------------------------------------------------------------
# 2. The tool-call session's C API over ctypes
# ---------------------------------------------------------------------------------------------

NEEDLE_TC_OK, NEEDLE_TC_REFUSED, NEEDLE_TC_FAILED = 0, 1, 2

_ENCODE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint32, ctypes.c_int32,
                           ctypes.POINTER(ctypes.c_uint32), ctypes.c_uint32)
_RESET = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_uint32)
_FEED = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint32), ctypes.c_uint32,
                         ctypes.c_int32)
_SET_SAMPLER = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p)
_SAMPLE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint32))
_LOGPROB = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_void_p, ctypes.c_uint32)
_LOGITS = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)   # const float*: ctypes cannot return pointers
_HEADS_BEGIN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)
_HEAD_OUTPUT = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int32, ctypes.POINTER(ctypes.c_float),
                                ctypes.c_uint32)
_STOP = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)
_ON_TEXT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint32, ctypes.c_uint32,
                            ctypes.c_int32)
_NOW_MS = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_void_p)
_MEMORY = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_void_p)


class _Backend(ctypes.Structure):
    """needle_tc_backend, field for field (capi.h). Unset function fields are NULL."""
    _fields_ = [("user", ctypes.c_void_p), ("encode", _ENCODE), ("reset", _RESET), ("feed", _FEED),
                ("set_sampler", _SET_SAMPLER), ("sample", _SAMPLE), ("logprob", _LOGPROB),
                ("logits", _LOGITS), ("heads_begin", _HEADS_BEGIN), ("head_output", _HEAD_OUTPUT),
                ("stop_requested", _STOP), ("on_text", _ON_TEXT), ("now_ms", _NOW_MS),
                ("memory_bytes", _MEMORY)]


def archive_tokenizer_blob(path: str) -> bytes:
    """The tokenizer record of a .cact archive (its last record, RAW; docs/archive-format.md §8)."""
    archive = cact.read(path)
    if not archive.records or archive.records[-1].dtype != "RAW":
        raise ValueError(f"{path}: the archive has no tokenizer record (pack it with --spm)")
    return archive.blob(len(archive.records) - 1)


def load_library(path: str) -> ctypes.CDLL:
    """libneedle_toolcall.so with the six functions' signatures declared."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} is missing: build it (cmake --build BUILD --target needle_toolcall)")
    lib = ctypes.CDLL(path)
    lib.needle_tc_model_new.restype = ctypes.c_void_p
    lib.needle_tc_model_new.argtypes = [ctypes.c_char_p, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32,
                                        ctypes.c_uint32, ctypes.POINTER(ctypes.c_void_p)]
    lib.needle_tc_model_free.restype = None
    lib.needle_tc_model_free.argtypes = [ctypes.c_void_p]
    lib.needle_tc_complete.restype = ctypes.c_int32
    lib.needle_tc_complete.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(_Backend),
                                       ctypes.POINTER(ctypes.c_void_p)]
    lib.needle_tc_check_tools.restype = ctypes.c_void_p
    lib.needle_tc_check_tools.argtypes = [ctypes.c_char_p]
    lib.needle_tc_free.restype = None
    lib.needle_tc_free.argtypes = [ctypes.c_void_p]
    return lib


class BackendError(RuntimeError):
    """A Python exception inside a backend callback (re-raised after needle_tc_complete returns)."""


class ToolcallModel:
    """A needle_tc_model handle (the tokenizer and its token table, vocab, max_seq_len, no heads) and
    `complete(request, session)`: one request through the C++ session with a DecodeSession as the
    backend. Returns (status, envelope dict)."""

    def __init__(self, library: str, tokenizer_blob: bytes, geometry: M.Geometry):
        self.lib = load_library(library)
        self.vocab = geometry.vocab
        error = ctypes.c_void_p()
        self.handle = self.lib.needle_tc_model_new(tokenizer_blob, len(tokenizer_blob), geometry.vocab,
                                                   geometry.max_seq_len, 0, ctypes.byref(error))
        if not self.handle:
            message = self._take_string(error.value)
            raise ValueError(f"needle_tc_model_new: {message}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        if self.handle:
            self.lib.needle_tc_model_free(self.handle)
            self.handle = None

    def _take_string(self, pointer) -> str:
        if not pointer:
            return ""
        text = ctypes.string_at(pointer).decode("utf-8")
        self.lib.needle_tc_free(pointer)
        return text

    def check_tools(self, tools_json: str) -> str:
        return self._take_string(self.lib.needle_tc_check_tools(tools_json.encode("utf-8")))

    def complete(self, request, session: DecodeSession, pin: bool = True) -> tuple[int, dict]:
        """request: a dict (written as JSON) or JSON text. pin=False resets the session with no pinned
        positions whatever the session asks (attention over the window only, as in training: a
        diagnostic; the engines always pin the tools block)."""
        if session.g.vocab != self.vocab:
            raise ValueError(f"the session's vocab {session.g.vocab} is not the handle's {self.vocab}")
        text = request if isinstance(request, str) else json.dumps(request, ensure_ascii=False)
        buffer = (ctypes.c_float * self.vocab)()
        view = np.ctypeslib.as_array(buffer)
        failure = []

        def guarded(fn, code):
            """A callback that turns a Python exception into the negative code the C API expects."""
            def call(*args):
                try:
                    return fn(*args)
                except Exception as e:  # noqa: BLE001: reported after complete() returns
                    failure.append(e)
                    return code
            return call

        def reset(_user, sink):
            session.reset(sink if pin else 0)
            return 0

        def feed(_user, ids, n, want_logits):
            session.feed([ids[k] for k in range(n)], bool(want_logits))
            return 0

        def logits(_user):
            if session.logits is None:
                raise BackendError("logits asked for, but the last feed kept none")
            view[:] = session.logits.cpu().numpy()
            return ctypes.addressof(buffer)

        def memory_bytes(_user):
            return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)

        callbacks = {"reset": _RESET(guarded(reset, -1)), "feed": _FEED(guarded(feed, -1)),
                     "logits": _LOGITS(guarded(logits, None)),
                     "memory_bytes": _MEMORY(guarded(memory_bytes, 0.0))}
        backend = _Backend(**callbacks)   # every other field NULL; callbacks kept alive by `callbacks`
        out = ctypes.c_void_p()
        status = self.lib.needle_tc_complete(self.handle, text.encode("utf-8"), ctypes.byref(backend),
                                             ctypes.byref(out))
        envelope = json.loads(self._take_string(out.value))
        if failure:
            raise BackendError(f"backend callback failed: {failure[0]!r}") from failure[0]
        return status, envelope
