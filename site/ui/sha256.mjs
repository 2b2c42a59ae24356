// sha256.mjs: SHA-256 (FIPS 180-4) over a stream of chunks. WebCrypto's digest() needs the whole
// input at once; the page hashes an archive while it streams into wasm memory, chunk by chunk, so
// that it never holds a second copy. Written from the standard, section 6.2.
//
//   const h = new Sha256(); h.update(chunk1); h.update(chunk2); h.hex()  // 64 hex digits

// The first 32 bits of the fractional parts of the cube roots of the first 64 primes (§4.2.2).
const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

// The initial hash value: the first 32 bits of the fractional parts of the square roots of the
// first 8 primes (§5.3.3).
const H0 = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

const rotr = (x, n) => (x >>> n) | (x << (32 - n));

export class Sha256 {
  constructor() {
    this.h = new Uint32Array(H0);
    this.block = new Uint8Array(64);   // the message block being filled
    this.filled = 0;                   // bytes of it so far
    this.bytes = 0;                    // message length so far (a Number: exact up to 2^53 bytes)
    this.w = new Uint32Array(64);      // the message schedule
    this.digestBytes = null;           // set by digest(); update() then refuses
  }

  // Adds bytes (a Uint8Array) to the message.
  update(data) {
    if (this.digestBytes) throw new Error('sha256: update after digest');
    let at = 0;
    this.bytes += data.length;
    if (this.filled > 0) {
      const take = Math.min(64 - this.filled, data.length);
      this.block.set(data.subarray(0, take), this.filled);
      this.filled += take;
      at = take;
      if (this.filled < 64) return this;
      this.compress(this.block, 0);
      this.filled = 0;
    }
    for (; at + 64 <= data.length; at += 64) this.compress(data, at);
    if (at < data.length) {
      this.block.set(data.subarray(at), 0);
      this.filled = data.length - at;
    }
    return this;
  }

  // One 512-bit block at `data[at..at+64)` into the hash value (§6.2.2, steps 1 to 4).
  compress(data, at) {
    const w = this.w;
    for (let t = 0; t < 16; t++) {
      const i = at + 4 * t;
      w[t] = (data[i] << 24) | (data[i + 1] << 16) | (data[i + 2] << 8) | data[i + 3];
    }
    for (let t = 16; t < 64; t++) {
      const s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >>> 3);
      const s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >>> 10);
      w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    const h = this.h;
    let a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (let t = 0; t < 64; t++) {
      const S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
      const ch = (e & f) ^ (~e & g);
      const t1 = (hh + S1 + ch + K[t] + w[t]) | 0;
      const S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
      const maj = (a & b) ^ (a & c) ^ (b & c);
      const t2 = (S0 + maj) | 0;
      hh = g; g = f; f = e; e = (d + t1) | 0;
      d = c; c = b; b = a; a = (t1 + t2) | 0;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
  }

  // The 32-byte digest: the message padded with 1, zeros and its length in bits (§5.1.1).
  digest() {
    if (this.digestBytes) return this.digestBytes;
    const bits = this.bytes * 8;
    const pad = new Uint8Array((this.filled < 56 ? 64 : 128) - this.filled);
    pad[0] = 0x80;
    const view = new DataView(pad.buffer);
    view.setUint32(pad.length - 8, Math.floor(bits / 2 ** 32));
    view.setUint32(pad.length - 4, bits >>> 0);
    const length = this.bytes;
    this.update(pad);
    this.bytes = length;
    const out = new Uint8Array(32);
    const outView = new DataView(out.buffer);
    for (let i = 0; i < 8; i++) outView.setUint32(4 * i, this.h[i]);
    this.digestBytes = out;
    return out;
  }

  // The digest as 64 lower-case hex digits.
  hex() { return Array.from(this.digest(), (b) => b.toString(16).padStart(2, '0')).join(''); }
}
