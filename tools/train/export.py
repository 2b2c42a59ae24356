#!/usr/bin/python3
"""export.py: a trainer checkpoint -> safetensors that `needle-pack --safetensors` reads.

Tensor names and shapes are needlework's (host/layout.cpp, docs/cq.md §7): CQ matrices [out, in],
every per-layer tensor under layers.{i}., the mHC tensors stacked over layers, one engram.{s}. group
per site, final_norm; no probe heads. Values are the float weights, unquantised: needle-pack
quantises them exactly as the trainer's fake quantisation does. The geometry travels in
__metadata__ under the header's field names.

    /usr/bin/python3 tools/train/export.py --checkpoint RUN/checkpoint.pt -o RUN/model.safetensors
"""
from __future__ import annotations

import argparse
import json
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model as M  # noqa: E402


def archive_tensors(net: M.Needle2) -> dict:
    """Archive key -> float32 numpy array of the model's float weights, in the canonical record order."""
    return archive_tensors_from(net, dict(net.named_parameters()))


def archive_tensors_from(net: M.Needle2, weights: dict) -> dict:
    """The same for any set of the model's tensors by parameter name (e.g. the fake-quantised ones
    of net.archive_weights())."""
    g = net.g
    L, N, d = g.num_layers, g.mhc_lanes, g.d_model
    p = {name: t.detach().to("cpu", torch.float32) for name, t in weights.items()}
    out = {"embedding": p["embedding"]}
    for i in range(L):
        k = f"layers.{i}."
        out[k + "norm_in"] = p["norm_in"][i]
        out[k + "q_proj"] = p["q_proj"][i]
        out[k + "k_proj"] = p["k_proj"][i]
        out[k + "v_proj"] = p["v_proj"][i]
        out[k + "q_norm"] = p["q_norm"][i]
        out[k + "k_norm"] = p["k_norm"][i]
        out[k + "gate_proj"] = p["gate_proj"][i]
        out[k + "out_proj"] = p["out_proj"][i]
        out[k + "post_norm"] = p["post_norm"][i]
        out[k + "attn_gate"] = p["attn_gate"][i].reshape(1)
        out[k + "pre_hada"] = p["pre_hada"][i]
        out[k + "d1"] = p["d1"][i]
        out[k + "d2"] = p["d2"][i]
        out[k + "d3"] = p["d3"][i]
    for name in M.MHC_FP16:
        out["mhc." + name] = p[name]
    out["mhc.phi_pre"] = p["phi_pre"].reshape(L * N, N * d)
    out["mhc.phi_post"] = p["phi_post"].reshape(L * N, N * d)
    out["mhc.phi_res"] = p["phi_res"].reshape(L * N * N, N * d)
    for s in range(len(g.engram_sites)):
        k = f"engram.{s}."
        out[k + "tables"] = p["engram_tables"][s]
        out[k + "key_proj"] = p["engram_key_proj"][s]
        out[k + "value_proj"] = p["engram_value_proj"][s]
        out[k + "taps"] = p["engram_taps"][s]
    out["final_norm"] = p["final_norm"]
    return {k: np.ascontiguousarray(v.numpy(), dtype=np.float32) for k, v in out.items()}


def write_safetensors(path: str, tensors: dict, metadata: dict) -> None:
    """The standard layout: u64 header length, JSON header, data; F32 only, tensors in the given
    order, the header padded with spaces so the data starts 8-byte aligned. Written to a temporary
    name and renamed."""
    header = {"__metadata__": metadata}
    offset = 0
    for key, a in tensors.items():
        header[key] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((-(8 + len(text))) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for a in tensors.values():
            f.write(a.astype("<f4").tobytes())
    os.replace(tmp, path)


def export(net: M.Needle2, path: str) -> None:
    write_safetensors(path, archive_tensors(net), net.g.metadata())


def load_model(checkpoint: str, device="cpu") -> M.Needle2:
    """The model of a train.py checkpoint (its geometry and bits map are stored in it)."""
    state = torch.load(checkpoint, map_location="cpu")
    import cq
    net = M.Needle2(M.Geometry.from_dict(state["geometry"]), cq.BitsMap.parse(state["bits_map"]))
    net.load_state_dict(state["model"])
    return net.to(device)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True, help="train.py checkpoint (checkpoint.pt)")
    ap.add_argument("-o", "--out", required=True, help="safetensors file to write")
    args = ap.parse_args()
    net = load_model(args.checkpoint)
    export(net, args.out)
    state = torch.load(args.checkpoint, map_location="cpu")
    print(f"wrote {args.out}: {M.count_parameters(net):,} parameters, geometry "
          f"{json.dumps(state['geometry'])}; pack with: needle-pack --safetensors {args.out} "
          f"--bits-map '{state['bits_map']}' --spm TOKENIZER.model -o MODEL.cact")
    return 0


if __name__ == "__main__":
    sys.exit(main())
