"""unpack.py: a packed Needle 2 archive's weights as a trainer model, for `train.py --init ARCHIVE`
(start_from reads either an archive or a checkpoint, for train.py's and transplant.py's --init).

A run can start from an archive instead of a train.py checkpoint. The float weights are chosen so
that the trainer's fake quantisation gives back exactly the archive's CQ indices and norms
(cq.preimage; FP16 records are read exactly): the new run's first forward is the archive's forward,
the one needle-ref computes. The float master weights that packing rounded away are gone; these sit
inside the archive's quantisation cells. This is how a user who has only a `.cact` continues
training it, and how our recipe continues from a run whose checkpoint it no longer has
(docs/training.md, "Starting from an archive").

Checked before anything is trusted: the header's geometry (model.Geometry's rules), the codebooks
(the trainer's own, else its quantiser would not be the archive's), every record's kind, shape and
blob against the canonical order of that geometry. The bits map is read back from the CQ records'
widths, by upstream's canonical names (one width per name: the trainer's map has no per-layer entries).
"""
from __future__ import annotations

import json
import os
import pickle
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cact  # noqa: E402
import cq  # noqa: E402
import export  # noqa: E402
import model as M  # noqa: E402

GEOMETRY_FIELDS = ("vocab", "d_model", "num_heads", "num_kv_heads", "num_layers", "head_dim", "max_seq_len",
                   "hada_n", "engram_slots", "engram_sub_dim", "num_engram_tables", "kv_window",
                   "mhc_lanes", "engram_conv_taps", "engram_conv_dilation", "kv_bits", "codebook_len")


class ArchiveError(ValueError):
    """An archive (or checkpoint) the trainer cannot start from; the message says what and where."""


def geometry_of(archive: cact.Archive, path: str) -> M.Geometry:
    h = archive.header
    d = {name: h[name] for name in GEOMETRY_FIELDS}
    d.update(engram_orders=list(h["engram_orders"]), engram_sites=list(h["engram_sites"]),
             rope_theta=float(h["rope_theta"]))
    try:
        return M.Geometry.from_dict(d)
    except (TypeError, ValueError) as e:
        raise ArchiveError(f"{path}: header: {e}") from None


def width_text(bits: int) -> str:
    return "1.58" if bits == cq.TERNARY_BITS else str(bits)


def cq_keys(g: M.Geometry) -> dict:
    """Upstream's canonical bits name -> the archive keys of its CQ records (host/layout.cpp)."""
    out = {"embedding": ["embedding"]}
    for name, bits_name in M.LAYER_CQ.items():
        out[bits_name] = [f"layers.{i}.{name}" for i in range(g.num_layers)]
    for name, bits_name in M.MHC_CQ.items():
        out[bits_name] = [f"mhc.{name}"]
    for s in range(len(g.engram_sites)):
        for part in ("tables", "key_proj", "value_proj"):
            out[f"engram{s}.{part}"] = [f"engram.{s}.{part}"]
    return out


def bits_map_of(g: M.Geometry, keys: list, records: list, path: str) -> str:
    """The bits map that gives every CQ record its width: 'default=W' when all share one, else one
    entry per canonical name (the default the commonest width)."""
    by_key = dict(zip(keys, records))
    canonical = cq_keys(g)
    widths = {}
    for bits_name, archive_keys in canonical.items():
        found = {by_key[k].bits for k in archive_keys}
        if len(found) != 1:
            raise ArchiveError(f"{path}: {bits_name}: layers stored with different widths "
                               f"{sorted(found)}; the trainer's bits map gives one width per name")
        widths[bits_name] = found.pop()
    values = list(widths.values())
    default = max(set(values), key=values.count)
    entries = [f"{name}={width_text(b)}" for name, b in widths.items() if b != default]
    return ",".join(entries + [f"default={width_text(default)}"])


def check_records(archive: cact.Archive, g: M.Geometry, expected: dict, path: str) -> None:
    """Each record: the kind, shape and blob length that the canonical order of this geometry gives."""
    records = tensor_records(archive)
    if len(records) != len(expected):
        raise ArchiveError(f"{path}: {len(records)} tensor records; the geometry's canonical order has "
                           f"{len(expected)} (an archive with probe heads or another layout)")
    matrices = {k for keys in cq_keys(g).values() for k in keys}
    for (key, values), r in zip(expected.items(), records):
        want = "CQ" if key in matrices else "FP16"
        if r.dtype != want:
            raise ArchiveError(f"{path}: {key}: stored as {r.dtype}, expected {want}")
        if tuple(r.shape) != values.shape:
            raise ArchiveError(f"{path}: {key}: shape {tuple(r.shape)}, expected {values.shape}")
        if r.offset + r.length > len(archive.data):
            raise ArchiveError(f"{path}: {key}: blob ends past the archive "
                               f"({r.offset} + {r.length} > {len(archive.data)} bytes)")
        if want == "FP16":
            need = values.size * 2
        else:
            if r.group != cq.GROUP or r.bits not in (2, 3, 4, cq.TERNARY_BITS):
                raise ArchiveError(f"{path}: {key}: group {r.group}, bits {r.bits} (expected group "
                                   f"{cq.GROUP}, bits 2, 3, 4 or 5)")
            rows, cols = values.shape
            groups = -(-cols // cq.GROUP)
            width = 2 if r.bits == cq.TERNARY_BITS else r.bits
            need = rows * groups * cq.GROUP * width // 8 + rows * groups * 2
        if r.length != need:
            raise ArchiveError(f"{path}: {key}: blob of {r.length} bytes, expected {need}")


def tensor_records(archive: cact.Archive) -> list:
    """The records less the tokenizer (the last record, when it is RAW)."""
    records = archive.records
    return records[:-1] if records and records[-1].dtype == "RAW" else records


def model_tensors(net: M.Needle2, tensors: dict) -> dict:
    """Archive key -> array, back to the model's parameters (export.archive_tensors_from inverted)."""
    g = net.g
    L, N, d = g.num_layers, g.mhc_lanes, g.d_model
    t = {k: torch.from_numpy(np.ascontiguousarray(v, dtype=np.float32)) for k, v in tensors.items()}
    out = {"embedding": t["embedding"]}
    for name in (*M.LAYER_CQ, *M.LAYER_FP16):
        out[name] = torch.stack([t[f"layers.{i}.{name}"] for i in range(L)])
    out["attn_gate"] = out["attn_gate"].reshape(L)
    for name in M.MHC_FP16:
        out[name] = t["mhc." + name]
    out["phi_pre"] = t["mhc.phi_pre"].reshape(L, N, N * d)
    out["phi_post"] = t["mhc.phi_post"].reshape(L, N, N * d)
    out["phi_res"] = t["mhc.phi_res"].reshape(L, N * N, N * d)
    sites = range(len(g.engram_sites))
    for part, name in (("tables", "engram_tables"), ("key_proj", "engram_key_proj"),
                       ("value_proj", "engram_value_proj"), ("taps", "engram_taps")):
        out[name] = torch.stack([t[f"engram.{s}.{part}"] for s in sites]) if g.engram_sites \
            else net.state_dict()[name]
    out["final_norm"] = t["final_norm"]
    return out


def start_from(path: str) -> dict:
    """The weights a new run or a transplant starts from (their --init): weights_of(PATH); a file that
    is neither an archive nor a checkpoint stops with `--init: PATH: why`."""
    try:
        return weights_of(path)
    except ArchiveError as e:
        raise SystemExit(f"--init: {e}") from None


def weights_of(path: str) -> dict:
    """A packed archive's weights as checkpoint fields (load) when PATH ends in .cact, else a train.py
    checkpoint's fields; raises ArchiveError (`PATH: why`) for a file that is neither."""
    if path.endswith(".cact"):
        return load(path)
    try:
        saved = torch.load(path, map_location="cpu")
    except OSError as e:
        raise ArchiveError(f"{path}: {e.strerror or e}") from None
    except (RuntimeError, EOFError, ValueError, pickle.UnpicklingError) as e:
        raise ArchiveError(f"{path}: not a checkpoint ({e})") from None
    if not isinstance(saved, dict) or any(key not in saved for key in ("model", "geometry", "args")):
        raise ArchiveError(f"{path}: not a train.py checkpoint (no model, geometry and args)")
    return saved


def load(path: str) -> dict:
    """A train.py checkpoint's fields (model, geometry, bits_map, args, state) for the archive's
    weights, and inexact_groups (CQ groups whose weights do not quantise back to the archive's, see
    cq.preimage); raises ArchiveError for an archive the trainer cannot start from."""
    try:
        archive = cact.read(path)
    except OSError as e:
        raise ArchiveError(f"{path}: {e.strerror or e}") from None
    except ValueError as e:
        raise ArchiveError(str(e)) from None
    if not np.array_equal(archive.codebooks.view(np.uint32), cq.codebooks().view(np.uint32)):
        raise ArchiveError(f"{path}: codebooks differ from the trainer's (docs/cq.md §2): "
                           "its CQ levels would not be the ones the trainer quantises to")
    g = geometry_of(archive, path)
    net = M.Needle2(g, cq.BitsMap.parse("default=4"))
    expected = export.archive_tensors(net)
    check_records(archive, g, expected, path)
    keys = list(expected)
    bits_map = bits_map_of(g, keys, tensor_records(archive), path)
    tensors, inexact_groups = {}, 0
    for k, (key, values) in enumerate(expected.items()):
        r = archive.records[k]
        if r.dtype == "FP16":
            tensors[key] = archive.fp16(k)
        else:
            index, norm = archive.cq(k)
            w, inexact = cq.preimage(torch.from_numpy(index), torch.from_numpy(norm), r.bits, values.shape[1])
            tensors[key] = w.numpy()
            inexact_groups += inexact
        if not np.isfinite(tensors[key]).all():
            raise ArchiveError(f"{path}: {key}: values that are not finite")
    state = {name: v.clone() for name, v in model_tensors(net, tensors).items()}
    geometry = json.loads(g.to_json())
    return {"model": state, "geometry": geometry, "bits_map": bits_map,
            "args": {"geometry": json.dumps(geometry), "bits_map": bits_map},
            "state": {"step": 0, "tokens": 0}, "archive": path, "inexact_groups": inexact_groups}
