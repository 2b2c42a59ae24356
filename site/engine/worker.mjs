// worker.mjs: the script of every engine Worker, in Node (worker_threads) and in the browser (a
// module Worker). Each one instantiates engine.wasm on the one shared memory it is sent.
//
//  * role "helper": calls the module's `helper` export, which never returns until the pool is shut
//    down: it spins and sleeps on the pool's words and runs slices of the driver's jobs.
//  * role "driver": answers requests from the page (load, encode, step, generate, complete, ...) by
//    calling the module's exports. Only the driver ever blocks in a wait (a browser page's main thread
//    may not), so it is a Worker too. For tool calls it also holds the tool-call module
//    (toolcall.wasm, loaded on the first request that needs it), whose session runs with this
//    engine as its backend (docs/engine.md, "Tool calls").
// Every number the engine defines (addresses, error codes) is read from the module's exports.
import { engineImports } from './imports.mjs';
import { loadToolcallModule } from './toolcall-module.mjs';

const isNode = typeof process === 'object' && !!(process.versions && process.versions.node);
let post;
let listen;
if (isNode) {
  const { parentPort } = await import('node:worker_threads');
  post = (message, transfer) => parentPort.postMessage(message, transfer);
  listen = (handler) => parentPort.on('message', handler);
} else {
  post = (message, transfer) => self.postMessage(message, transfer);
  listen = (handler) => { self.onmessage = (event) => handler(event.data); };
}

let ex = null;       // the instance's exports
let generalKernels = false;  // test entry matvec: every row by the general kernel
let memory = null;   // the shared WebAssembly.Memory
const now = () => (typeof performance === 'object' ? performance.now() : Date.now());

// Views of the memory as it is now (it may have grown since the last call).
const u32 = () => new Uint32Array(memory.buffer);
const i32 = () => new Int32Array(memory.buffer);
const u8 = () => new Uint8Array(memory.buffer);
const f32 = () => new Float32Array(memory.buffer);
const field = (name) => u32()[ex[name].value >> 2];

// The header fields the host needs, by name (offsets as in the archive header).
// The header fields, each read at the address the module exports as GEO_<field>: the two engram
// arrays are u32[4], rope_theta is f32, the rest u32 (engine.wat, the header table).
const GEO_ARRAYS = new Set(['engram_orders', 'engram_sites']);

function geometry() {
  const w = u32();
  const g = {};
  for (const [name, value] of Object.entries(ex)) {
    if (!name.startsWith('GEO_')) continue;
    const field = name.slice(4);
    const at = value.value >> 2;
    g[field] = field === 'rope_theta' ? f32()[at] : GEO_ARRAYS.has(field) ? Array.from(w.subarray(at, at + 4)) : w[at];
  }
  return g;
}

function tokenizerInfo() {
  const n = ex.tok_size();
  if (!n) return null;
  const ids = ex.ADDR_TOK_IDS.value >> 2;
  const w = u32();
  return { pieces: n, pad_id: w[ids], eos_id: w[ids + 1], bos_id: w[ids + 2], unk_id: w[ids + 3] };
}

function fail(code, what) {
  const e = new Error(`${what}: engine error ${code}`);
  e.code = code;
  return e;
}

// An error with a message of its own and the engine's code for it (e.g. ERR_FULL).
function refuse(name, message) {
  const e = new Error(message);
  e.code = ex[name].value;
  return e;
}

// The sampler's options ({temperature, topK, topP, minP, repetitionPenalty, repetitionWindow}, each
// off by default) and the generator's 64-bit seed (a BigInt or a non-negative integer).
function configureSampler(sampler = {}, seed = 0) {
  ex.sampler(sampler.temperature ?? 0, sampler.topK ?? 0, sampler.topP ?? 1, sampler.minP ?? 0,
             sampler.repetitionPenalty ?? 1, sampler.repetitionWindow ?? 0);
  const big = BigInt.asUintN(64, BigInt(seed));
  ex.seed(Number(big & 0xffffffffn) | 0, Number(big >> 32n) | 0);
}

// Writes a token mask (a Uint32Array of ceil(vocab / 32) words: bit id % 32 of word id / 32 set =
// token id allowed) into the engine's mask block.
function writeMask(mask) {
  const words = (geometry().vocab + 31) >>> 5;
  if (!(mask instanceof Uint32Array) || mask.length !== words)
    throw refuse('ERR_ARG', `token mask: expected a Uint32Array of ${words} words for a vocabulary of ` +
                            `${geometry().vocab}, got ${mask && mask.constructor ? mask.constructor.name : typeof mask}` +
                            `${mask && mask.length !== undefined ? ` of ${mask.length}` : ''}`);
  u32().set(mask, field('ADDR_MASK') >> 2);
}

// One token from the last logits: with a mask, only among the tokens it allows.
function sampleOne(mask) {
  if (mask) writeMask(mask);
  const token = mask ? ex.sample_masked() : ex.sample();
  if (token === -ex.ERR_MASK_EMPTY.value)
    throw refuse('ERR_MASK_EMPTY', `sample: the token mask allows none of the ${geometry().vocab} ids`);
  if (token < 0) throw fail(-token, 'sample');
  return token;
}

const HEAD_KINDS = { 1: 'contrastive', 2: 'confidence' };

// ---- Tool calls: the session of host/toolcall/ (in toolcall.wasm) with this engine as its backend.

let tc = null;      // the tool-call module (toolcall-module.mjs), once toolcallInit has run
let tcModel = 0;    // its model handle for the archive loaded now (0: not made yet)
let tcHeads = 0;    // the handle's head bits (capi.h NEEDLE_TC_HEAD_*)

// Forgets the model handle (a new archive is coming: the tokenizer blob it was made from moves).
function dropToolcallModel() {
  if (tc && tcModel) tc.freeModel(tcModel);
  tcModel = 0;
  tcHeads = 0;
}

// The model handle for the loaded archive, made on first use from the archive's tokenizer blob (the
// token table is built once per archive).
function toolcallModel() {
  if (!tc) throw new Error('tool calls: the tool-call module is not loaded');
  if (tcModel) return tcModel;
  if (!field('ADDR_LOADED')) throw refuse('ERR_NOT_LOADED', 'tool calls: no archive is loaded');
  if (!ex.tok_size()) throw refuse('ERR_NO_TOKENIZER', 'tool calls: the archive has no tokenizer');
  const blobAt = field('ADDR_TOK_BLOB');
  const blob = u8().subarray(blobAt, blobAt + field('ADDR_TOK_BLOBLEN'));
  let heads = 0;
  for (let h = 0; h < field('ADDR_NHEADS'); h++) {
    const code = ex.head_code(h);
    if (code === tc.constants.CODE_CONTRASTIVE) heads |= tc.constants.HEAD_CONTRASTIVE;
    if (code === tc.constants.CODE_CONFIDENCE) heads |= tc.constants.HEAD_CONFIDENCE;
  }
  tcModel = tc.newModel(blob, { vocab: geometry().vocab, maxSeqLen: geometry().max_seq_len, heads });
  tcHeads = heads;
  return tcModel;
}

// Positions per prefill call when the session feeds a prompt: Stop is checked between pieces.
const FEED_PIECE = 128;

// The backend the session calls (host/wasm/toolcall_module.cpp forwards capi.h's callbacks here):
// engine exports, with pointers into the tool-call module's memory. No function throws: a failure
// returns the engine's code negated (what capi.h asks) and keeps a message for the envelope.
// `streamId`: the request whose 'text' events carry each token's text (null: no events).
function engineBackend(streamId) {
  const m = tc.m;
  const state = { error: null };
  const words = (geometry().vocab + 31) >>> 5;
  const failure = (what, e) => {
    state.error = `${what}: ${e.message}`;
    return -(e.code ?? ex.ERR_ARG.value);
  };
  const engineCode = (what, rc) => {
    state.error = `${what}: ${errorNameOf(rc)}`;
    return -rc;
  };
  const functions = {
    reset(sink) {
      try {
        const rc = ex.session_reset(sink >>> 0);
        return rc ? engineCode(`reset (sink ${sink})`, rc) : 0;
      } catch (e) { return failure('reset', e); }
    },
    feed(idsAt, n, wantLogits) {
      try {
        const ids = m.HEAPU32.slice(idsAt >> 2, (idsAt >> 2) + n);
        for (let at = 0; at < n; at += FEED_PIECE) {
          // The engine's batched prefill, a piece at a time: Stop during a long feed (the prompt's
          // prefill) skips the rest of it; the session checks stop_requested before its next token
          // and ends the reply there, so the positions left out are never read (docs/engine.md,
          // "Tool calls").
          if (at > 0 && Atomics.load(i32(), ex.ADDR_STOP.value >> 2)) return 0;
          const count = Math.min(FEED_PIECE, n - at);
          const p = ex.io_buffer(count * 4 + 64);
          if (!p) return engineCode('feed', ex.ERR_MEMORY.value);
          u32().set(ids.subarray(at, at + count), p >> 2);
          const rc = ex.prefill(p, count, wantLogits && at + count === n ? 1 : 0);
          if (rc) return engineCode(`prefill of ${count} tokens at position ${field('ADDR_POS')}`, rc);
        }
        return 0;
      } catch (e) { return failure('feed', e); }
    },
    // The engine's one snapshot slot holds the session's tools prefix between requests (docs/toolcall.md,
    // "Reusing the tools prefix").
    snapshotSave() {
      try {
        const rc = ex.snapshot_save();
        return rc ? engineCode('snapshot save', rc) : 0;
      } catch (e) { return failure('snapshot save', e); }
    },
    // Restores the snapshot when it holds exactly the n ids at prefixAt (position and history); n, or
    // negative (no snapshot, or another one: the session then resets and prefills whole).
    snapshotRestore(prefixAt, n) {
      try {
        if (ex.snapshot_position() !== n) return -ex.ERR_NO_SNAPSHOT.value;
        const rc = ex.snapshot_restore();
        if (rc) return -rc;
        const history = u32().subarray(field('ADDR_HIST') >> 2, (field('ADDR_HIST') >> 2) + n);
        const prefix = m.HEAPU32.subarray(prefixAt >> 2, (prefixAt >> 2) + n);
        for (let i = 0; i < n; i++) if (history[i] !== prefix[i]) return -ex.ERR_NO_SNAPSHOT.value;
        return n;
      } catch (e) { return failure('snapshot restore', e); }
    },
    setSampler(temperature, topK, topP, minP, repetitionPenalty, repetitionWindow, seedLo, seedHi) {
      try {
        ex.sampler(temperature, topK, topP, minP, repetitionPenalty, repetitionWindow);
        ex.seed(seedLo | 0, seedHi | 0);
        return 0;
      } catch (e) { return failure('set_sampler', e); }
    },
    sample(maskAt) {
      try {
        if (maskAt) u32().set(m.HEAPU32.subarray(maskAt >> 2, (maskAt >> 2) + words), field('ADDR_MASK') >> 2);
        const token = maskAt ? ex.sample_masked() : ex.sample();
        return token < 0 ? engineCode('sample', -token) : token;
      } catch (e) { return failure('sample', e); }
    },
    logprob(token) {
      try { return ex.logprob(token >>> 0); } catch (e) { failure('logprob', e); return NaN; }
    },
    headsBegin() {
      try {
        const rc = ex.heads_begin();
        return rc ? engineCode('heads_begin', rc) : 0;
      } catch (e) { return failure('heads_begin', e); }
    },
    headOutput(code, outAt, cap) {
      try {
        for (let h = 0; h < field('ADDR_NHEADS'); h++) {
          if (ex.head_code(h) !== code) continue;
          const p = ex.io_buffer(ex.head_size(h) * 4 + 64);
          if (!p) return engineCode('head output', ex.ERR_MEMORY.value);
          const n = ex.head_output(h, p);
          if (n < 0) return engineCode(`head output (head ${h})`, -n);
          m.HEAPF32.set(f32().subarray(p >> 2, (p >> 2) + Math.min(n, cap)), outAt >> 2);
          return n;
        }
        return engineCode(`head output (code ${code})`, ex.ERR_NO_HEAD.value);
      } catch (e) { return failure('head output', e); }
    },
    stopRequested() { return Atomics.load(i32(), ex.ADDR_STOP.value >> 2); },
    onText(textAt, bytes, token, forced) {
      if (streamId !== null) post({ id: streamId, event: 'text', text: tc.text(textAt, bytes), token, forced: !!forced });
    },
    nowMs() { return now(); },
    memoryBytes() { return memory.buffer.byteLength + tc.memoryBytes(); },
  };
  return { functions, state };
}

// The ERR_* name of an engine error code.
function errorNameOf(code) {
  for (const [name, value] of Object.entries(ex))
    if (name.startsWith('ERR_') && value.value === code) return name;
  return `engine error ${code}`;
}

// Runs one tool-call request (an object or its JSON text; docs/toolcall.md, "The request"). Returns
// {status: 'ok' | 'refused' | 'failed', envelope, text}: the envelope object, whose error names a
// backend failure's engine error too, and its JSON text (the module's bytes as written, so that a
// number keeps the form the model wrote: 10002.0 stays 10002.0).
function complete({ request, stream = false }, streamId) {
  const model = toolcallModel();
  // (the Stop flag was cleared by NeedleEngine.complete when it posted this request)
  const backend = engineBackend(stream ? streamId : null);
  const json = typeof request === 'string' ? request : JSON.stringify(request);
  const r = tc.complete(model, json, backend.functions, tcHeads !== 0);
  const envelope = JSON.parse(r.envelope);
  const c = tc.constants;
  const status = r.status === c.OK ? 'ok' : r.status === c.REFUSED ? 'refused' : 'failed';
  if (status === 'failed' && backend.state.error) {
    envelope.error = `${envelope.error} (${backend.state.error})`;
    return { status, envelope, text: JSON.stringify(envelope) };
  }
  return { status, envelope, text: r.envelope };
}

// Runs `ids` from the next position with the engine's prefill (docs/engine.md, "Prefill and
// snapshots"): the state of ids.length steps, and their last logits (a Float32Array) with wantLogits,
// else null. A token past the vocabulary or a prompt longer than the positions left is refused before
// any work, the session unchanged.
function prefill(ids, wantLogits) {
  const n = ids.length;
  const p = ex.io_buffer(n * 4 + 64);
  if (!p) throw fail(ex.ERR_MEMORY.value, 'prefill');
  u32().set(ids, p >> 2);
  const rc = ex.prefill(p, n, wantLogits ? 1 : 0);
  if (rc === ex.ERR_FULL.value) {
    const maxSeq = geometry().max_seq_len;
    const used = field('ADDR_POS');
    throw refuse('ERR_FULL', `prefill of ${n} tokens is longer than the ${maxSeq - used} positions left ` +
                             `(max_seq_len ${maxSeq}, ${used} used); nothing was run`);
  }
  if (rc === ex.ERR_TOKEN.value) {
    const at = i32()[ex.ADDR_ERR_DETAIL.value >> 2];
    throw refuse('ERR_TOKEN', `prefill: token ${ids[at]} at index ${at} is not an id of the vocabulary ` +
                              `(${geometry().vocab}); nothing was run`);
  }
  if (rc) throw fail(rc, 'prefill');
  if (!wantLogits) return null;
  const at = field('ADDR_LOGITS') >> 2;
  return f32().slice(at, at + geometry().vocab);
}

// Runs one prompt (teacher-forced) and then a decode loop with the wasm sampler.
function generate(request, streamId) {
  const { ids, maxTokens = 0, sampler = {}, seed = 0, stopIds = [], wantRows = false, stream = false, prefill: mode = 'batched' } = request;
  const vocab = geometry().vocab;
  const maxSeq = geometry().max_seq_len;
  const used = field('ADDR_POS');
  // The whole prompt must fit the session: refused before any step, the session left as it was.
  if (ids.length > maxSeq - used)
    throw refuse('ERR_FULL', `prompt of ${ids.length} tokens is longer than the ${maxSeq - used} positions left ` +
                             `(max_seq_len ${maxSeq}, ${used} used); nothing was run`);
  const rows = [];
  const stopAt = ex.ADDR_STOP.value >> 2;
  Atomics.store(i32(), stopAt, 0);
  const logitsCopy = () => f32().slice(field('ADDR_LOGITS') >> 2, (field('ADDR_LOGITS') >> 2) + vocab);
  let t0 = now();
  if (wantRows) {  // every prompt position's logits: one step each
    for (let i = 0; i < ids.length; i++) {
      const rc = ex.step(ids[i] >>> 0, 1);
      if (rc) throw fail(rc, `step at prompt position ${i} (token ${ids[i]})`);
      rows.push(logitsCopy());
    }
  } else if (mode === 'steps') {  // one step per position, logits at the last (the bench's comparison)
    for (let i = 0; i < ids.length; i++) {
      const rc = ex.step(ids[i] >>> 0, i + 1 === ids.length ? 1 : 0);
      if (rc) throw fail(rc, `step at prompt position ${i} (token ${ids[i]})`);
    }
  } else if (ids.length > 0) {
    prefill(ids, true);
  }
  const prefillMs = now() - t0;
  configureSampler(sampler, seed);
  const generated = [];
  let decodeSteps = 0;
  t0 = now();
  while (generated.length < maxTokens && ids.length > 0) {
    const next = sampleOne(null);
    generated.push(next);
    if (stream) post({ id: streamId, event: 'token', token: next });
    if (stopIds.includes(next) || generated.length === maxTokens || field('ADDR_POS') >= maxSeq) break;
    if (Atomics.load(i32(), stopAt)) break;
    const rc = ex.step(next, 1);
    if (rc) throw fail(rc, `step at generated token ${generated.length - 1} (token ${next})`);
    decodeSteps++;
    if (wantRows) rows.push(logitsCopy());
  }
  const decodeMs = now() - t0;
  return { generated, prefillMs, decodeMs, prefillTokens: ids.length, decodeTokens: decodeSteps, rows };
}

// The driver's requests: name -> function(args) returning a result (and transferables).
const ops = {
  archiveBuffer: ({ size }) => {
    dropToolcallModel();
    return ex.archive_buffer(size);
  },
  load: () => {
    dropToolcallModel();
    const code = ex.load();
    const w = i32();
    return { code, record: w[ex.ADDR_ERR_RECORD.value >> 2], detail: w[ex.ADDR_ERR_DETAIL.value >> 2],
             geometry: code === 0 ? geometry() : null, tokenizer: code === 0 ? tokenizerInfo() : null };
  },
  setThreads: ({ threads }) => { ex.set_threads(threads); return threads; },
  setSpin: ({ spin }) => { ex.set_spin(spin); return spin; },
  reset: ({ sink = 0 }) => {
    const rc = ex.session_reset(sink >>> 0);
    if (rc) throw fail(rc, 'reset');
    return 0;
  },
  position: () => field('ADDR_POS'),
  encode: ({ bytes, raw }) => {
    // one I/O block: the text, then room for the ids (at most one per byte, plus the dummy prefix)
    const cap = bytes.length + 4;
    const textBytes = (bytes.length + 64) & ~63;
    const p = ex.io_buffer(textBytes + cap * 4);
    if (!p) throw fail(ex.ERR_MEMORY.value, 'encode');
    u8().set(bytes, p);
    const out = p + textBytes;
    const n = ex.encode(p, bytes.length, raw ? 0 : 1, out, cap);
    if (n < 0) throw fail(-n, 'encode');
    return Array.from(u32().subarray(out >> 2, (out >> 2) + n));
  },
  pieceBytes: ({ ids }) => {
    const out = ex.io_buffer(65536 + 16);
    const chunks = [];
    for (const id of ids) {
      const n = ex.piece_bytes(id >>> 0, out);
      if (n < 0) throw fail(-n, `piece bytes of id ${id}`);
      chunks.push(u8().slice(out, out + n));
    }
    return chunks;
  },
  step: ({ token, wantLogits }) => {
    const rc = ex.step(token >>> 0, wantLogits ? 1 : 0);
    if (rc) throw fail(rc, `step (token ${token})`);
    if (!wantLogits) return null;
    const p = field('ADDR_LOGITS') >> 2;
    return f32().slice(p, p + geometry().vocab);
  },
  prefill: ({ ids, wantLogits }) => prefill(ids, wantLogits),
  // The one snapshot slot: save the session, restore it (both return the snapshot's position), and
  // the saved position (-1: none since the last load).
  snapshotSave: () => {
    const rc = ex.snapshot_save();
    if (rc) throw fail(rc, 'snapshot save');
    return ex.snapshot_position();
  },
  snapshotRestore: () => {
    const rc = ex.snapshot_restore();
    if (rc === ex.ERR_NO_SNAPSHOT.value) throw refuse('ERR_NO_SNAPSHOT', 'snapshot restore: no snapshot was saved since the archive was loaded');
    if (rc) throw fail(rc, 'snapshot restore');
    return ex.snapshot_position();
  },
  snapshotPosition: () => ex.snapshot_position(),
  stepTrace: ({ token }) => {
    const t = ex.trace_enable(1);
    if (!t) throw fail(ex.ERR_MEMORY.value, 'trace');
    const rc = ex.step(token >>> 0, 1);
    ex.trace_enable(0);
    if (rc) throw fail(rc, `step (token ${token})`);
    const n = ex.trace_floats();
    const p = field('ADDR_LOGITS') >> 2;
    return { trace: f32().slice(t >> 2, (t >> 2) + n), logits: f32().slice(p, p + geometry().vocab) };
  },
  generate: (request, id) => generate(request, id),
  configureSampler: ({ sampler, seed }) => { configureSampler(sampler, seed); return 0; },
  // The next token from the last step's logits (mask: null or a Uint32Array), and its log-probability
  // under the unmasked softmax at temperature 1 (for the call's decode probability).
  sampleToken: ({ mask = null }) => {
    const token = sampleOne(mask);
    return { token, logprob: ex.logprob(token) };
  },
  logprob: ({ token }) => {
    if (!Number.isInteger(token) || token < 0 || token >= geometry().vocab)
      throw refuse('ERR_TOKEN', `logprob: token ${token} is not an id of the vocabulary (${geometry().vocab})`);
    return ex.logprob(token);
  },
  headsBegin: () => {
    const rc = ex.heads_begin();
    if (rc === ex.ERR_NO_HEAD.value) throw refuse('ERR_NO_HEAD', 'heads: the archive has no probe heads');
    if (rc) throw fail(rc, 'heads_begin');
    return field('ADDR_NHEADS');
  },
  headsEnd: () => ex.heads_end(),
  // Every head's output over the cells pooled since headsBegin: [{head, kind, output}].
  headOutputs: () => {
    const heads = field('ADDR_NHEADS');
    if (!heads) throw refuse('ERR_NO_HEAD', 'heads: the archive has no probe heads');
    const out = [];
    for (let h = 0; h < heads; h++) {
      const n = ex.head_size(h);
      const p = ex.io_buffer(n * 4 + 64);
      if (!p) throw fail(ex.ERR_MEMORY.value, 'head output');
      const rc = ex.head_output(h, p);
      if (rc === -ex.ERR_NO_CELLS.value)
        throw refuse('ERR_NO_CELLS', 'heads: nothing pooled (call headsBegin, then run positions)');
      if (rc < 0) throw fail(-rc, `head_output ${h}`);
      out.push({ head: h, kind: HEAD_KINDS[ex.head_code(h)], output: f32().slice(p >> 2, (p >> 2) + rc) });
    }
    return out;
  },
  // Test entries (the module's test_* exports).
  dequantRow: ({ record, row }) => {
    const cols = ex.test_record_cols(record);
    const out = ex.alloc(cols * 4 + 64);
    ex.test_dequant_row(ex.test_record(record), row, out);
    return f32().slice(out >> 2, (out >> 2) + cols);
  },
  matvec: ({ record, input }) => {
    const rows = ex.test_record_rows(record);
    const x = ex.alloc(input.length * 4 + 64);
    const y = ex.alloc(rows * 4 + 64);
    f32().set(input, x >> 2);
    const rc = ex.test_matvec(record, x, y, generalKernels ? 1 : 0);
    if (rc) throw fail(rc, 'matvec');
    return f32().slice(y >> 2, (y >> 2) + rows);
  },
  poolTest: ({ count, rounds, chunk }) => {
    const arr = ex.alloc(count * 4 + 64);
    u32().fill(0, arr >> 2, (arr >> 2) + count);
    const done = ex.test_pool(arr, count, rounds, chunk);
    const a = u32().slice(arr >> 2, (arr >> 2) + count);
    return { done, values: a };
  },
  math: ({ fn, xs }) => xs.map((x) => ex[`test_${fn}`](x)),
  // Sinkhorn on n x n matrices (values: their rows, one after another), generic = the one-lane way
  sinkhorn: ({ values, n, generic }) => {
    const p = ex.alloc(values.length * 4 + 64);
    f32().set(values, p >> 2);
    for (let i = 0; i < values.length; i += n * n) ex.test_sinkhorn(p + 4 * i, n, generic ? 1 : 0);
    return f32().slice(p >> 2, (p >> 2) + values.length);
  },
  // a four-lane function (test_expf4) on xs four at a time, in place (xs.length a multiple of 4)
  math4: ({ fn, xs }) => {
    const p = ex.alloc(xs.length * 4 + 64);
    f32().set(xs, p >> 2);
    for (let i = 0; i < xs.length; i += 4) ex[`test_${fn}`](p + 4 * i);
    return f32().slice(p >> 2, (p >> 2) + xs.length);
  },
  fwht: ({ values, normalized }) => {
    const p = ex.alloc(values.length * 4 + 64);
    f32().set(values, p >> 2);
    (normalized ? ex.test_fwht_norm : ex.test_fwht)(p, values.length);
    return f32().slice(p >> 2, (p >> 2) + values.length);
  },
  sample: ({ logits, sampler = {}, seed = 0, mask = null }) => {
    // Test entry: sampler on given logits (written over the engine's logits buffer); the penalty
    // reads the session's tokens.
    const p = field('ADDR_LOGITS') >> 2;
    f32().set(logits, p);
    configureSampler(sampler, seed);
    const draws = [];
    for (let k = 0; k < (sampler.draws ?? 1); k++) draws.push(sampleOne(mask));
    return draws;
  },
  // Test entries: load() over many truncations / byte flips of the archive already in memory
  // (written by load), without copying it again. Each returns [code, record] per case; after
  // `truncations` the engine holds the last prefix loaded.
  truncations: ({ lengths }) => {
    return lengths.map((len) => [ex.load_prefix(len), i32()[ex.ADDR_ERR_RECORD.value >> 2]]);
  },
  flips: ({ flips }) => {
    const base = field('ADDR_ARCH_PTR');
    const size = field('ADDR_ARCH_LEN');
    const out = [];
    for (const [offset, xor] of flips) {
      u8()[base + offset] ^= xor;
      out.push([ex.load_prefix(size), i32()[ex.ADDR_ERR_RECORD.value >> 2]]);
      u8()[base + offset] ^= xor;
    }
    return out;
  },
  // matvec by the general kernels only (any group), or by the kernels step uses
  generalKernels: ({ on }) => { generalKernels = !!on; return on; },
  // Test entry: blocks the driver for good (the watchdog test's stand-in for a deadlock).
  hang: () => { Atomics.wait(i32(), (ex.ADDR_ARGS.value >> 2) + 15, i32()[(ex.ADDR_ARGS.value >> 2) + 15]); return 0; },
  // The job log (docs/engine.md, "Job log"): on for up to `capacity` records; off, returning them
  // decoded ({kind, job, slot, items, start, end, pos}, kinds and jobs by name).
  jobLogStart: ({ capacity }) => {
    if (!ex.joblog_start(capacity)) throw new Error(`job log: no memory for ${capacity} records`);
    return true;
  },
  jobLogStop: () => {
    const n = ex.joblog_stop();
    if (n < 0) throw new Error('job log: full before the run ended (give a larger capacity)');
    const names = (prefix) => Object.fromEntries(Object.keys(ex).filter((k) => k.startsWith(prefix))
      .map((k) => [ex[k].value, k.slice(prefix.length).toLowerCase()]));
    const kinds = names('JOBLOG_KIND_');
    const jobs = names('JOB_');
    const at = (name) => ex[`JOBLOG_AT_${name}`].value;
    const view = new DataView(memory.buffer);
    const base = field('ADDR_JOBLOG_BUF');
    const size = ex.JOBLOG_BYTES.value;
    const records = [];
    for (let i = 0; i < n; i++) {
      const r = base + i * size;
      records.push({
        kind: kinds[view.getUint8(r + at('KIND'))], job: jobs[view.getUint8(r + at('JOB'))] ?? null,
        slot: view.getUint16(r + at('SLOT'), true), items: view.getUint32(r + at('ITEMS'), true),
        start: view.getFloat64(r + at('START'), true), end: view.getFloat64(r + at('END'), true),
        pos: view.getUint32(r + at('POS'), true),
      });
    }
    return records;
  },
  // Tool calls: the module (compiled by the main thread) and the URL of its loader toolcall.mjs.
  toolcallInit: async ({ module, script }) => {
    if (!tc) tc = await loadToolcallModule(module, script);
    return true;
  },
  checkTools: ({ json }) => tc.checkTools(json),
  complete: (request, id) => complete(request, id),
  memoryBytes: () => memory.buffer.byteLength,
  heapTop: () => field('ADDR_HEAP_TOP'),
  shutdown: () => { ex.shutdown(); return 0; },
};

listen(async (msg) => {
  if (msg.op === 'init') {
    memory = msg.memory;
    const instance = await WebAssembly.instantiate(msg.module, engineImports(memory));
    ex = instance.exports;
    if (msg.role === 'helper') {
      post({ op: 'started' });
      ex.helper();               // returns only after shutdown
      post({ op: 'exited' });
      return;
    }
    ex.init();                   // the driver sets up the shared tables once
    post({ op: 'ready' });
    return;
  }
  const { id, op, args } = msg;
  try {
    const result = await ops[op](args || {}, id);
    const transfer = [];
    if (result && result.buffer instanceof ArrayBuffer) transfer.push(result.buffer);
    post({ id, result }, transfer);
  } catch (err) {
    post({ id, error: { message: err.message, code: err.code ?? null } });
  }
});
