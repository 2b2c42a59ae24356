// needle.mjs: the one driver module of the wasm engine, for Node and for the browser.
//
// createEngine() makes the shared memory, a driver Worker and helper Workers (site/engine/worker.mjs),
// all instantiating engine.wasm on that one memory. The page (or Node) talks to the driver with
// messages; the archive is streamed straight into wasm memory by this thread (no second copy), and
// the engine parses and validates it in place. docs/engine.md describes the whole arrangement.
//
//   const engine = await createEngine({ threads: 2 });
//   await engine.load('model.cact');            // a path (Node), URL, Response, ArrayBuffer or view
//   const ids = [engine.tokenizer.bos_id, ...await engine.encode('hello')];
//   const out = await engine.generate(ids, { maxTokens: 32 });
//   engine.stop();                              // from anywhere: ends generate after the current token
//   await engine.close();
//
// Token by token (constrained decoding): step(token) for the logits, setSampler(options, {seed}) once,
// then sampleToken({mask}) -> {token, logprob} with a Uint32Array mask of the allowed ids. Probe heads:
// headsBegin() after reset(), run the positions, then headOutputs().
//
// Tool calls (the one session of host/toolcall/, built into toolcall.wasm, run by the driver with this
// engine as its backend; docs/toolcall.md "The request" and "The envelope"):
//   const envelope = await engine.complete({ tools, request: 'Weather in Paris?' }, { onText });
//   await engine.checkTools(toolsJsonText);    // '' or the message, with line and column

import { engineImports } from './imports.mjs';
import { loadToolcallModule } from './toolcall-module.mjs';

const isNode = typeof process === 'object' && !!(process.versions && process.versions.node);
const PAGE = 65536;

// An engine error: `code` is one of the module's ERR_* values, `name` its name, `record` the failing
// archive record (-1: the header or none) and `detail` the header offset or tokenizer piece.
export class EngineError extends Error {
  constructor(message, { code = null, name = null, record = -1, detail = -1 } = {}) {
    super(message);
    this.code = code;
    this.errorName = name;
    this.record = record;
    this.detail = detail;
  }
}

async function readWasm(source, name = 'engine.wasm') {
  if (source instanceof Uint8Array || source instanceof ArrayBuffer) return source;
  const url = source ?? new URL(`../../build/${name}`, import.meta.url);
  if (isNode && (typeof url === 'string' || url.protocol === 'file:')) {
    const fs = await import('node:fs');
    return fs.readFileSync(url);
  }
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${name}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

// The tool-call module's loader (toolcall.mjs) as a URL, and its compiled toolcall.wasm (the file
// beside it). `source`: a path (Node) or URL of toolcall.mjs; default build/toolcall.mjs next to site/.
async function compileToolcall(source) {
  let script = source ?? new URL('../../build/toolcall.mjs', import.meta.url);
  if (isNode && typeof script === 'string') script = (await import('node:url')).pathToFileURL(script);
  script = new URL(String(script));
  const wasmUrl = new URL(script.pathname.replace(/\.mjs$/, '.wasm'), script);
  let bytes;
  try {
    bytes = await readWasm(isNode && wasmUrl.protocol === 'file:' ? (await import('node:url')).fileURLToPath(wasmUrl) : wasmUrl,
      'toolcall.wasm');
  } catch (e) {
    throw new Error(`tool calls need ${wasmUrl.pathname} (scripts/build-toolcall-wasm.sh builds it): ${e.message}`);
  }
  return { module: await WebAssembly.compile(bytes), script: script.href };
}

// The tool-call module on this thread (no engine): the page checks the tools JSON with it as the
// visitor types. `source` as for createEngine's `toolcall`. Returns a ToolcallModule
// (toolcall-module.mjs): checkTools(json) -> '' or the message.
export async function loadToolcall(source) {
  const { module, script } = await compileToolcall(source);
  return loadToolcallModule(module, script);
}

// A refused or failed tool-call request: `status` 'refused' (bad request, tools, history, a prompt
// that does not fit: nothing ran) or 'failed' (the engine failed during the request); `envelope` is
// the envelope, with every key, success false and the message in error; `envelopeText` its JSON text.
export class ToolcallError extends Error {
  constructor(status, envelope, envelopeText = JSON.stringify(envelope)) {
    super(envelope.error);
    this.status = status;
    this.envelope = envelope;
    this.envelopeText = envelopeText;
  }
}

// A worker running worker.mjs, with one message handler interface for both platforms.
async function spawnWorker() {
  const url = new URL('./worker.mjs', import.meta.url);
  if (isNode) {
    const { Worker } = await import('node:worker_threads');
    const w = new Worker(url);
    return {
      post: (m) => w.postMessage(m),
      onMessage: (f) => w.on('message', f),
      onError: (f) => w.on('error', f),
      terminate: () => w.terminate(),
    };
  }
  const w = new Worker(url, { type: 'module' });
  return {
    post: (m) => w.postMessage(m),
    onMessage: (f) => w.addEventListener('message', (e) => f(e.data)),
    onError: (f) => w.addEventListener('error', f),
    terminate: () => w.terminate(),
  };
}

export class NeedleEngine {
  constructor() {
    this.module = null;
    this.memory = null;
    this.driver = null;
    this.helpers = [];
    this.threads = 1;
    this.exports = null;     // a main-thread instance, used only to read the exported constants
    this.pending = new Map();
    this.nextId = 1;
    this.geometry = null;
    this.tokenizer = null;
    this.toolcallSource = undefined;  // createEngine's `toolcall`
    this.toolcallLoaded = null;       // the promise of toolcallReady()
  }

  // The exported immutable globals (ADDR_*, ERR_*, HEAP_BASE) as plain numbers.
  constant(name) { return this.exports[name].value; }

  // ERR_* name of an error code.
  errorName(code) {
    for (const [name, value] of Object.entries(this.exports))
      if (name.startsWith('ERR_') && value.value === code) return name;
    return `ERR_${code}`;
  }

  async call(op, args, { transfer = [], onEvent = null } = {}) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onEvent });
      this.driver.post({ id, op, args }, transfer);
    });
  }


  // Starts one more helper Worker; resolves once it has taken its pool slot (READY went up), or
  // after `waitMs` if it has not (a helper that never runs is simply never counted).
  async addHelper({ waitMs = 10000 } = {}) {
    const ready = new Int32Array(this.memory.buffer);
    const at = this.constant('ADDR_READY') >> 2;
    const before = Atomics.load(ready, at);
    const w = await spawnWorker();
    const started = new Promise((resolve) => w.onMessage((m) => { if (m.op === 'started') resolve(); }));
    w.post({ op: 'init', role: 'helper', module: this.module, memory: this.memory });
    this.helpers.push(w);
    await started;
    for (const t0 = Date.now(); Atomics.load(ready, at) <= before && Date.now() - t0 < waitMs;)
      await new Promise((resolve) => setTimeout(resolve, 1));
    return w;
  }

  // Threads used by the next jobs, driver included; helpers are started when `startHelpers`.
  async setThreads(threads, { startHelpers = true } = {}) {
    this.threads = Math.max(1, threads | 0);
    if (startHelpers) while (this.helpers.length < this.threads - 1) await this.addHelper();
    await this.call('setThreads', { threads: this.threads });
  }

  // Streams the archive into wasm memory and has the engine validate it there.
  async load(source) {
    let size;
    let fill;
    if (isNode && (typeof source === 'string' || (source instanceof URL && source.protocol === 'file:'))) {
      const fs = await import('node:fs');
      const fd = fs.openSync(source, 'r');
      size = fs.fstatSync(fd).size;
      fill = async (ptr) => {
        try {
          for (let at = 0; at < size;) {
            const view = new Uint8Array(this.memory.buffer, ptr + at, Math.min(1 << 22, size - at));
            const n = fs.readSync(fd, view, 0, view.length, at);
            if (n <= 0) throw new Error(`${source}: short read at ${at}`);
            at += n;
          }
        } finally { fs.closeSync(fd); }
      };
    } else if (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) {
      const bytes = source instanceof ArrayBuffer ? new Uint8Array(source)
        : new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
      size = bytes.length;
      fill = async (ptr) => { new Uint8Array(this.memory.buffer, ptr, size).set(bytes); };
    } else {
      const response = source instanceof Response ? source : await fetch(source);
      if (!response.ok) throw new Error(`archive: HTTP ${response.status}`);
      size = Number(response.headers.get('content-length'));
      if (!Number.isSafeInteger(size) || size <= 0) {
        const bytes = new Uint8Array(await response.arrayBuffer());
        return this.load(bytes);
      }
      fill = async (ptr) => {
        const reader = response.body.getReader();
        let at = 0;
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          if (at + value.length > size) throw new Error('archive: longer than its Content-Length');
          new Uint8Array(this.memory.buffer, ptr + at, value.length).set(value);
          at += value.length;
        }
        if (at !== size) throw new Error(`archive: ${at} of ${size} bytes arrived`);
      };
    }
    const ptr = await this.call('archiveBuffer', { size });
    if (!ptr) throw new EngineError(`archive of ${size} bytes does not fit the engine memory`,
      { code: this.constant('ERR_MEMORY'), name: 'ERR_MEMORY' });
    await fill(ptr);
    const r = await this.call('load');
    if (r.code !== 0) {
      const name = this.errorName(r.code);
      throw new EngineError(`archive rejected: ${name} (record ${r.record}, detail ${r.detail})`,
        { code: r.code, name, record: r.record, detail: r.detail });
    }
    this.geometry = r.geometry;
    this.tokenizer = r.tokenizer;
    await this.reset();
    return r;
  }

  // A new session with `sink` pinned KV positions.
  async reset({ sink = 0 } = {}) { await this.call('reset', { sink }); }

  // encode (with the dummy prefix) or, with raw, encodeRaw, of a string.
  async encode(text, { raw = false } = {}) {
    return this.call('encode', { bytes: new TextEncoder().encode(text), raw });
  }

  // The text of ids: all piece bytes first, then one UTF-8 decode; one leading space dropped.
  async decode(ids) {
    const chunks = await this.call('pieceBytes', { ids });
    const total = chunks.reduce((n, c) => n + c.length, 0);
    const all = new Uint8Array(total);
    let at = 0;
    for (const c of chunks) { all.set(c, at); at += c.length; }
    const text = new TextDecoder('utf-8', { fatal: false }).decode(all);
    return text.startsWith(' ') ? text.slice(1) : text;
  }

  // The prompt `ids` from the next position in one call (batched in the engine): the state of that
  // many steps, and the last logits (Float32Array) with wantLogits, else null. Refused before any
  // work (ERR_FULL, ERR_TOKEN) when the ids do not fit or one is past the vocabulary.
  async prefill(ids, { wantLogits = true } = {}) {
    return this.call('prefill', { ids: Uint32Array.from(ids), wantLogits });
  }

  // The one snapshot slot of the session (docs/engine.md, "Prefill and snapshots"): snapshotSave()
  // keeps the session as it is now, snapshotRestore() makes it the session again (steps after it give
  // exactly what the saved session's next steps gave; EngineError ERR_NO_SNAPSHOT without one);
  // both return the snapshot's position. snapshotPosition(): that position, or -1.
  async snapshotSave() { return this.call('snapshotSave'); }
  async snapshotRestore() { return this.call('snapshotRestore'); }
  async snapshotPosition() { return this.call('snapshotPosition'); }

  // The job log (docs/engine.md, "Job log"): jobLogStart({capacity}) before a run, jobLogStop()
  // after it resolves to the records ({kind, job, slot, items, start, end, pos}); joblog.mjs reads
  // them as a table. It rejects when the log filled up before the stop.
  async jobLogStart({ capacity = 1 << 18 } = {}) { return this.call('jobLogStart', { capacity }); }
  async jobLogStop() { return this.call('jobLogStop'); }

  // One step: the logits (Float32Array) after `token`, or null without wantLogits.
  async step(token, { wantLogits = true } = {}) { return this.call('step', { token, wantLogits }); }

  // Prefill `ids` (teacher-forced), then sample up to maxTokens, each fed back except the last.
  // Options: sampler {temperature, topK, topP, minP, repetitionPenalty, repetitionWindow}, seed,
  // stopIds (default: the tokenizer's eos), wantRows (every logits row), onToken(id), prefill
  // ('batched', the default: the engine's prefill; 'steps': one step per prompt id, as the bench
  // compares them).
  async generate(ids, { maxTokens = 0, sampler = {}, seed = 0, stopIds = null, wantRows = false, onToken = null, prefill = 'batched' } = {}) {
    const stops = stopIds ?? [this.tokenizer ? this.tokenizer.eos_id : 1];
    return this.call('generate', { ids, maxTokens, sampler, seed, stopIds: stops, wantRows, stream: !!onToken, prefill },
      { onEvent: onToken ? (m) => onToken(m.token) : null });
  }

  // The sampler's options {temperature, topK, topP, minP, repetitionPenalty, repetitionWindow} (each
  // off by default) and the generator's seed (a BigInt or integer, as u64), for sampleToken.
  async setSampler(sampler = {}, { seed = 0 } = {}) { await this.call('configureSampler', { sampler, seed }); }

  // The next token from the last step's logits with the options of setSampler; `mask` (null, or a
  // Uint32Array of ceil(vocab / 32) words, bit id % 32 of word id / 32 set = id allowed) limits it to the
  // allowed ids. Returns {token, logprob}: logprob is log p(token) under the unmasked softmax at
  // temperature 1. A mask that allows no id throws EngineError ERR_MASK_EMPTY. The token is not run.
  async sampleToken({ mask = null } = {}) { return this.call('sampleToken', { mask }); }

  // log p(token) under the softmax of the last step's logits at temperature 1 (no mask, no penalty).
  async logprob(token) { return this.call('logprob', { token }); }

  // Probe heads: headsBegin() empties the pooling, and every later step of this session feeds it (until
  // headsEnd() or reset()); returns the number of heads. Throws ERR_NO_HEAD for an archive without heads.
  async headsBegin() { return this.call('headsBegin'); }
  async headsEnd() { await this.call('headsEnd'); }
  // [{head, kind: 'contrastive' | 'confidence', output: Float32Array}] over every position pooled so
  // far (the contrastive output is L2-normalised; the confidence output is one logit).
  async headOutputs() { return this.call('headOutputs'); }

  // Loads the tool-call module into the driver, once (the main thread compiles toolcall.wasm).
  async toolcallReady() {
    if (!this.toolcallLoaded) {
      this.toolcallLoaded = compileToolcall(this.toolcallSource).then(({ module, script }) =>
        this.call('toolcallInit', { module, script }));
      this.toolcallLoaded.catch(() => { this.toolcallLoaded = null; });
    }
    return this.toolcallLoaded;
  }

  // One tool-call request (an object, or its JSON text; docs/toolcall.md "The request") in one
  // message: the driver ranks the tools, renders the prompt, runs it and the constrained reply, and
  // reads the reply back. Resolves to the envelope (docs/toolcall.md "The envelope"); `onText({text,
  // token, forced})` receives each reply token's text as it is known. A refused request (bad tools
  // JSON, an unsupported keyword, a prompt that does not fit) or an engine failure rejects with
  // ToolcallError; the engine works as before either way. stop() ends the reply after its current
  // token (the envelope is then that of the reply so far). With envelopeText it resolves to the
  // envelope's JSON text exactly as the tool-call module wrote it (a ToolcallError carries it as
  // envelopeText too): JSON.parse reads 10002.0 as 10002, and a CLI that prints calls keeps the form.
  async complete(request, { onText = null, envelopeText = false } = {}) {
    // Stop is cleared here, when the request is made, not when the driver starts it: a stop() right
    // after complete() (Stop pressed just after Send) still ends this request.
    Atomics.store(new Int32Array(this.memory.buffer), this.constant('ADDR_STOP') >> 2, 0);
    await this.toolcallReady();
    const r = await this.call('complete', { request, stream: !!onText },
      { onEvent: onText ? (m) => onText({ text: m.text, token: m.token, forced: m.forced }) : null });
    if (r.status !== 'ok') throw new ToolcallError(r.status, r.envelope, r.text);
    return envelopeText ? r.text : r.envelope;
  }

  // '' when `json` (text) is a valid tool list for the call grammar, else the message ('tools JSON at
  // line 3, column 7: ...'; 'tool "t" parameter "p": "pattern" is not supported').
  async checkTools(json) {
    await this.toolcallReady();
    return this.call('checkTools', { json });
  }

  // Ends a running generate or complete after its current token (safe from any thread, at any time).
  stop() { Atomics.store(new Int32Array(this.memory.buffer), this.constant('ADDR_STOP') >> 2, 1); }

  // Stops the helpers and the driver.
  async close() {
    if (!this.driver) return;
    await this.call('shutdown');
    await Promise.all([this.driver, ...this.helpers].map((w) => w.terminate()));
    this.driver = null;
    this.helpers = [];
  }
}

// Spin rounds before a helper (or the waiting driver) sleeps (docs/engine.md, "Thread pool"): long
// enough to bridge the driver's serial work between the jobs of one step (about 40 us on the base
// geometry), so that a helper is awake for the next job; between steps helpers sleep at once.
const DEFAULT_SPIN = 20000;

// Options: wasm (bytes, path or URL of engine.wasm; default build/engine.wasm next to site/),
// threads (driver included, default 1), startHelpers (default true; tests start them by hand),
// maxMemoryBytes (the shared memory's maximum, default 2 GiB), spin (rounds before a wait, default DEFAULT_SPIN),
// toolcall (path or URL of toolcall.mjs, toolcall.wasm beside it; default build/toolcall.mjs next to
// site/; loaded by the first complete or checkTools).
export async function createEngine(options = {}) {
  const engine = new NeedleEngine();
  engine.toolcallSource = options.toolcall;
  const bytes = await readWasm(options.wasm);
  engine.module = await WebAssembly.compile(bytes);
  const maxPages = Math.min(65536, Math.ceil((options.maxMemoryBytes ?? 2 ** 31) / PAGE));
  engine.memory = new WebAssembly.Memory({ initial: 2, maximum: maxPages, shared: true });
  engine.exports = (await WebAssembly.instantiate(engine.module, engineImports(engine.memory))).exports;
  engine.driver = await spawnWorker();
  const ready = new Promise((resolve, reject) => {
    engine.driver.onMessage((m) => { if (m.op === 'ready') resolve(); else engine._route(m); });
    engine.driver.onError(reject);
  });
  engine.driver.post({ op: 'init', role: 'driver', module: engine.module, memory: engine.memory });
  await ready;
  await engine.call('setSpin', { spin: options.spin ?? DEFAULT_SPIN });
  await engine.setThreads(options.threads ?? 1, { startHelpers: options.startHelpers ?? true });
  return engine;
}

// Message routing (kept outside the class body's private field so createEngine can install it).
NeedleEngine.prototype._route = function route(m) {
  const entry = this.pending.get(m.id);
  if (!entry) return;
  if (m.event) { if (entry.onEvent) entry.onEvent(m); return; }
  this.pending.delete(m.id);
  if (m.error) {
    const code = m.error.code;
    const name = code != null ? this.errorName(code) : null;
    entry.reject(new EngineError(m.error.message + (name ? ` (${name})` : ''), { code, name }));
  } else entry.resolve(m.result);
};
