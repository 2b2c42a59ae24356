// spm-model.mjs: writes a minimal SentencePiece ModelProto (.model) by hand, so that needle-pack --spm
// can be fed a tokenizer whose pieces we chose, and classifies pieces into the archive's type codes
// (design page §1.5). Protobuf field numbers are those of sentencepiece_model.proto (checked against a
// model written by spm_train 0.1.97).

export const SPM_TYPE = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 };
export const CHAT_MARKERS = ['<|im_start|>', '<|im_end|>', '<think>', '</think>', '<tools>', '</tools>',
  '<tool_call>', '</tool_call>', '<tool_result>', '</tool_result>'];

// §1.5: control, unknown, byte, "is one of the 10 chat markers", otherwise normal.
// Archive codes: 0 NORMAL, 1 UNKNOWN, 2 CONTROL, 3 USER_DEFINED, 4 BYTE.
export function archiveType(spmType, piece) {
  if (spmType === SPM_TYPE.CONTROL) return 2;
  if (spmType === SPM_TYPE.UNKNOWN) return 1;
  if (spmType === SPM_TYPE.BYTE) return 4;
  if (CHAT_MARKERS.includes(piece)) return 3;
  return 0;
}

function varint(n) {
  const out = [];
  let v = BigInt(n);
  if (v < 0n) v += 1n << 64n; // negative int32 is a 10-byte varint
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v) b |= 0x80;
    out.push(b);
  } while (v);
  return out;
}
const tag = (field, wire) => varint((field << 3) | wire);
const fVarint = (field, n) => [...tag(field, 0), ...varint(n)];
const fBytes = (field, bytes) => [...tag(field, 2), ...varint(bytes.length), ...bytes];
const fString = (field, s) => fBytes(field, [...new TextEncoder().encode(s)]);
const fFloat = (field, x) => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setFloat32(0, x, true);
  return [...tag(field, 5), ...b];
};

// pieces: [{piece, score, spmType}] in id order. Needle's special ids: pad 0, eos 1, bos 2, unk 3.
export function encodeSpmModel(pieces) {
  const out = [];
  for (const p of pieces) {
    const msg = [...fString(1, p.piece), ...fFloat(2, p.score)];
    if (p.spmType !== SPM_TYPE.NORMAL) msg.push(...fVarint(3, p.spmType));
    out.push(...fBytes(1, msg));
  }
  const trainer = [
    ...fVarint(3, 2), // model_type BPE
    ...fVarint(4, pieces.length), // vocab_size
    ...fVarint(35, 1), // byte_fallback
    ...fVarint(40, 3), ...fVarint(41, 2), ...fVarint(42, 1), ...fVarint(43, 0), // unk bos eos pad ids
  ];
  out.push(...fBytes(2, trainer));
  const normalizer = [...fString(1, 'identity'), ...fBytes(2, []), ...fVarint(3, 1), ...fVarint(4, 0), ...fVarint(5, 1)];
  out.push(...fBytes(3, normalizer));
  return Uint8Array.from(out);
}

// A test vocabulary of `size` pieces: the 14 Needle specials, 256 byte pieces, then normal pieces
// (multi-byte UTF-8 among them) and one USER_DEFINED piece that is not a chat marker.
export function testVocabulary(size) {
  const T = SPM_TYPE;
  const pieces = [
    { piece: '<pad>', score: 0, spmType: T.CONTROL }, { piece: '</s>', score: 0, spmType: T.CONTROL },
    { piece: '<s>', score: 0, spmType: T.CONTROL }, { piece: '<unk>', score: 0, spmType: T.UNKNOWN },
    ...CHAT_MARKERS.map((m) => ({ piece: m, score: 0, spmType: T.USER_DEFINED })),
    { piece: '<extra_id>', score: 0, spmType: T.USER_DEFINED },
    ...Array.from({ length: 256 }, (_, b) => ({
      piece: `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`, score: 0, spmType: T.BYTE })),
  ];
  const extras = ['\u2581', '\u2581na\u00efve', '\u00e9', '\u2581\u65e5\u672c', '\u{1f600}'];
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  for (let i = 0; pieces.length < size; i++) {
    const piece = i < extras.length ? extras[i] : (i % 2 ? '\u2581' : '') + letters[i % 26] + letters[Math.floor(i / 26) % 26] + (i >= 676 ? i : '');
    pieces.push({ piece, score: Math.fround(-0.37 * i - 1), spmType: T.NORMAL });
  }
  return pieces;
}
