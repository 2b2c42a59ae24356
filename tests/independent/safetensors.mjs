// safetensors.mjs: a minimal safetensors reader (F32, F16, BF16 -> Float32Array) and writer (F32, with
// a __metadata__ map of strings). Format: u64 LE header length, JSON header, then the data bytes;
// data_offsets are relative to the start of the data section.
import { fromF16Bits } from './format.mjs';

// tensors: Map or object key -> {shape, data: Float32Array}; metadata: {name: string}.
export function writeSafetensors(tensors, metadata = {}) {
  const entries = tensors instanceof Map ? [...tensors] : Object.entries(tensors);
  const header = {};
  if (Object.keys(metadata).length) {
    header.__metadata__ = {};
    for (const [k, v] of Object.entries(metadata)) {
      if (typeof v !== 'string') throw new Error(`safetensors metadata '${k}' must be a string`);
      header.__metadata__[k] = v;
    }
  }
  let offset = 0;
  for (const [name, t] of entries) {
    const count = t.shape.reduce((a, b) => a * b, 1);
    if (count !== t.data.length) throw new Error(`tensor '${name}': shape ${t.shape} does not hold ${t.data.length} values`);
    header[name] = { dtype: 'F32', shape: t.shape, data_offsets: [offset, offset + 4 * count] };
    offset += 4 * count;
  }
  let json = JSON.stringify(header);
  while ((8 + Buffer.byteLength(json)) % 8) json += ' '; // customary 8-byte alignment of the data
  const jsonBytes = Buffer.from(json, 'utf8');
  const out = new Uint8Array(8 + jsonBytes.length + offset);
  const dv = new DataView(out.buffer);
  dv.setBigUint64(0, BigInt(jsonBytes.length), true);
  out.set(jsonBytes, 8);
  let p = 8 + jsonBytes.length;
  for (const [, t] of entries) {
    for (let i = 0; i < t.data.length; i++, p += 4) dv.setFloat32(p, t.data[i], true);
  }
  return out;
}

// Returns {metadata, tensors: Map name -> {dtype, shape, data: Float32Array}}.
export function readSafetensors(bytes) {
  const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  const dv = new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
  if (u8.length < 8) throw new Error('safetensors: file shorter than its 8-byte header length');
  const n = Number(dv.getBigUint64(0, true));
  if (8 + n > u8.length) throw new Error(`safetensors: header length ${n} runs past the end (${u8.length} bytes)`);
  const header = JSON.parse(Buffer.from(u8.subarray(8, 8 + n)).toString('utf8'));
  const base = 8 + n;
  const tensors = new Map();
  let metadata = {};
  for (const [name, info] of Object.entries(header)) {
    if (name === '__metadata__') { metadata = info; continue; }
    const [b, e] = info.data_offsets;
    const count = info.shape.reduce((a, c) => a * c, 1);
    const size = { F32: 4, F16: 2, BF16: 2 }[info.dtype];
    if (!size) throw new Error(`safetensors tensor '${name}': unsupported dtype ${info.dtype}`);
    if (e - b !== size * count || base + e > u8.length)
      throw new Error(`safetensors tensor '${name}': data_offsets [${b}, ${e}] do not fit shape ${info.shape}`);
    const data = new Float32Array(count);
    for (let i = 0; i < count; i++) {
      const p = base + b + size * i;
      if (info.dtype === 'F32') data[i] = dv.getFloat32(p, true);
      else if (info.dtype === 'F16') data[i] = fromF16Bits(dv.getUint16(p, true));
      else {
        const tmp = new DataView(new ArrayBuffer(4));
        tmp.setUint32(0, dv.getUint16(p, true) << 16);
        data[i] = tmp.getFloat32(0);
      }
    }
    tensors.set(name, { dtype: info.dtype, shape: info.shape, data });
  }
  return { metadata, tensors };
}
