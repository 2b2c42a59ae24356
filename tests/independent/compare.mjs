// compare.mjs: byte-level comparison of two Needle 2 archives, region by region, and the logits
// error measure of docs/numerics.md.
import { HEADER_BYTES, DIRECTORY_OFFSET, RECORD_BYTES, DTYPE } from './format.mjs';
import { Archive } from './cact-reader.mjs';

const countDiff = (a, b) => {
  let n = 0;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) n++;
  return n;
};

// Returns a summary {lengthEqual, headerDiff, codebookDiff, directoryDiff: [messages], fp16Diff,
// rawDiff, gapDiff, cq: {bytes, diffBytes, indexDiff, normDiff}, perRecord: [...]}.
export function compareArchives(mineBytes, oursBytes) {
  const A = new Archive(mineBytes);
  const B = new Archive(oursBytes);
  const r = {
    lengthEqual: mineBytes.length === oursBytes.length, lengths: [mineBytes.length, oursBytes.length],
    headerDiff: countDiff(mineBytes.subarray(0, HEADER_BYTES), oursBytes.subarray(0, HEADER_BYTES)),
    codebookDiff: countDiff(mineBytes.subarray(HEADER_BYTES, DIRECTORY_OFFSET), oursBytes.subarray(HEADER_BYTES, DIRECTORY_OFFSET)),
    directoryDiff: [], fp16Diff: 0, rawDiff: 0, gapDiff: 0,
    cq: { bytes: 0, diffBytes: 0, normDiff: 0 }, perRecord: [],
  };
  for (const [key, ra] of A.records) {
    const rb = B.records.get(key);
    const pa = ra.recordOffset, pb = rb.recordOffset;
    const da = mineBytes.subarray(pa, pa + RECORD_BYTES), db = oursBytes.subarray(pb, pb + RECORD_BYTES);
    if (countDiff(da, db)) {
      r.directoryDiff.push(`${key}: mine dtype ${ra.dtype} shape [${ra.shape}] off ${ra.offset} len ${ra.length} group ${ra.group} bits ${ra.bits}; ` +
        `ours dtype ${rb.dtype} shape [${rb.shape}] off ${rb.offset} len ${rb.length} group ${rb.group} bits ${rb.bits}`);
      continue;
    }
    const ba = A.blob(key), bb = B.blob(key);
    if (ra.dtype === DTYPE.CQ) {
      const [rows, cols] = ra.shape;
      const cp = Math.ceil(cols / 128) * 128;
      const idxBytes = ra.length - 2 * rows * (cp / 128);
      const di = countDiff(ba.subarray(0, idxBytes), bb.subarray(0, idxBytes));
      const dn = countDiff(ba.subarray(idxBytes), bb.subarray(idxBytes));
      r.cq.bytes += ra.length;
      r.cq.diffBytes += di + dn;
      r.cq.normDiff += dn;
      if (di + dn) r.perRecord.push(`${key}: ${di} index bytes and ${dn} norm bytes differ of ${ra.length}`);
    } else {
      const n = countDiff(ba, bb);
      if (ra.dtype === DTYPE.FP16) r.fp16Diff += n; else r.rawDiff += n;
      if (n) r.perRecord.push(`${key}: ${n} of ${ra.length} ${ra.dtype === DTYPE.FP16 ? 'FP16' : 'RAW'} bytes differ`);
    }
  }
  // gaps (everything not a blob after the directory) must be zero in ours
  const n = A.records.size;
  let pos = DIRECTORY_OFFSET + RECORD_BYTES * n;
  for (const [, rb] of B.records) {
    for (let i = pos; i < rb.offset; i++) if (oursBytes[i] !== 0) r.gapDiff++;
    pos = rb.offset + rb.length;
  }
  return r;
}

// max_i |a_i - ref_i| / max_i |ref_i|
export function maxRel(a, ref) {
  let num = 0, den = 0;
  for (let i = 0; i < ref.length; i++) {
    num = Math.max(num, Math.abs(a[i] - ref[i]));
    den = Math.max(den, Math.abs(ref[i]));
  }
  return num / den;
}
