"""cact.py: a small reader of Needle 2 archives (docs/archive-format.md) for the trainer's checks.

It reads the header, the codebooks and the directory, and decodes each record: FP16 arrays, and CQ
blobs into their level indices and fp16 group norms (docs/cq.md §1: LSB-first bit stream per row,
then the norms). The tests compare these with the trainer's fake quantisation, and parity.py uses
the geometry, unpack.py the weights (train.py --init ARCHIVE). It checks the header's size and tag and
that the directory fits; the records' contents are the caller's to check (unpack.py does).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

TAG = 0x05E12A83
HEADER_FIELDS = ("tag", "num_tensors", "codebook_len", "kv_window", "kv_bits", "vocab", "d_model",
                 "num_heads", "num_kv_heads", "num_layers", "head_dim", "max_seq_len", "hada_n",
                 "mhc_lanes", "engram_slots", "engram_sub_dim", "num_engram_tables",
                 "engram_conv_taps", "engram_conv_dilation", "num_engram_orders")
DTYPES = {1: "FP16", 2: "FP32", 3: "CQ", 4: "RAW"}
RECORD = struct.Struct("<BBH4IQQII")  # dtype, ndim, 0, shape[4], offset, length, group, bits
TERNARY_CRUMB_TO_INDEX = {3: 0, 0: 1, 1: 2}  # crumbs 3/0/1 hold levels -t/0/+t


@dataclass
class Record:
    dtype: str
    shape: tuple
    offset: int
    length: int
    group: int
    bits: int


@dataclass
class Archive:
    header: dict
    codebooks: np.ndarray
    records: list
    data: bytes

    def blob(self, i: int) -> bytes:
        r = self.records[i]
        return self.data[r.offset:r.offset + r.length]

    def fp16(self, i: int) -> np.ndarray:
        r = self.records[i]
        return np.frombuffer(self.blob(i), dtype="<f2").astype(np.float32).reshape(r.shape)

    def cq(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """(level indices [rows, groups, group] int64, group norms [rows, groups] float32). Ternary
        indices are into the levels {-t, 0, +t}, as cq.quantize returns them."""
        r = self.records[i]
        rows, cols = r.shape
        groups = -(-cols // r.group)
        cols_padded = groups * r.group
        width = 2 if r.bits == 5 else r.bits
        row_bytes = cols_padded * width // 8
        blob = np.frombuffer(self.blob(i), dtype=np.uint8)
        packed = blob[:rows * row_bytes].reshape(rows, row_bytes)
        stream = np.unpackbits(packed, axis=1, bitorder="little").reshape(rows, cols_padded, width)
        index = (stream.astype(np.int64) << np.arange(width)).sum(-1)
        if r.bits == 5:
            lut = np.full(4, -1, dtype=np.int64)
            for crumb, level in TERNARY_CRUMB_TO_INDEX.items():
                lut[crumb] = level
            index = lut[index]
        norms = np.frombuffer(blob[rows * row_bytes:].tobytes(), dtype="<f2").astype(np.float32)
        return index.reshape(rows, groups, r.group), norms.reshape(rows, groups)


def read(path: str) -> Archive:
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 232:
        raise ValueError(f"{path}: {len(data)} bytes: shorter than the header and codebooks (232 bytes)")
    u32 = struct.unpack_from("<29I", data, 0)
    header = dict(zip(HEADER_FIELDS, u32[:20]))
    if header["tag"] != TAG:
        raise ValueError(f"{path}: tag 0x{header['tag']:08X} is not Needle 2 (0x{TAG:08X})")
    if header["num_engram_orders"] > 4 or u32[24] > 4:
        raise ValueError(f"{path}: header: {header['num_engram_orders']} engram orders, {u32[24]} sites "
                         "(at most 4 each)")
    if 232 + 44 * header["num_tensors"] > len(data):
        raise ValueError(f"{path}: the directory of {header['num_tensors']} records ends past the archive")
    header["engram_orders"] = list(u32[20:20 + header["num_engram_orders"]])
    header["num_engram_sites"] = u32[24]
    header["engram_sites"] = list(u32[25:25 + u32[24]])
    header["rope_theta"] = struct.unpack_from("<f", data, 116)[0]
    codebooks = np.frombuffer(data, dtype="<f4", count=28, offset=120).copy()
    records = []
    for k in range(header["num_tensors"]):
        dtype, ndim, _, s0, s1, s2, s3, offset, length, group, bits = RECORD.unpack_from(data, 232 + 44 * k)
        if dtype not in DTYPES or ndim > 4:
            raise ValueError(f"{path}: record {k}: dtype {dtype}, {ndim} dimensions")
        records.append(Record(DTYPES[dtype], (s0, s1, s2, s3)[:ndim], offset, length, group, bits))
    return Archive(header, codebooks, records, data)
