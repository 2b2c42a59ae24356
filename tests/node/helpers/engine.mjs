// engine.mjs (test helper): paths, the engine build, a watchdog, and the C++ reference tools.
//
// Every engine test runs the engine exactly as the page does: site/engine/needle.mjs with a driver
// Worker and helper Workers on one shared memory. The watchdog turns a deadlock into a failed test:
// it terminates the engine's Workers (which ends their waits) and rejects.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { createEngine } from '../../../site/engine/needle.mjs';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const buildDir = path.resolve(root, process.env.NEEDLE_BUILD_DIR ?? 'build');
export const binDir = path.join(buildDir, 'bin');
export const modelsDir = path.join(buildDir, 'models');
export const wasmPath = path.join(buildDir, 'engine.wasm');   // as scripts/build.sh and bench.mjs place it
// The tool-call module (scripts/build-toolcall-wasm.sh): every test engine can run tool calls with it.
export const toolcallPath = path.join(buildDir, 'toolcall.mjs');

// Assembles <build dir>/engine.wasm when it is missing or older than engine.wat.
export function ensureWasm() {
  const wat = path.join(root, 'engine.wat');
  const stale = !fs.existsSync(wasmPath) || fs.statSync(wasmPath).mtimeMs < fs.statSync(wat).mtimeMs;
  if (stale) {
    // assembled under a private name and renamed, so that test files running in parallel never read
    // a half-written module
    const tmp = `${wasmPath}.${process.pid}.tmp`;
    execFileSync('bash', [path.join(root, 'scripts', 'build-engine.sh'), tmp], { stdio: 'pipe' });
    fs.renameSync(tmp, wasmPath);
  }
  return wasmPath;
}

// A fresh engine (driver + helpers); `threads` includes the driver.
export async function makeEngine(options = {}) {
  ensureWasm();
  return createEngine({ wasm: fs.readFileSync(wasmPath), toolcall: toolcallPath, ...options });
}

// Kills every Worker of an engine at once (a driver stuck in a wait included).
export async function killEngine(engine) {
  const workers = [engine.driver, ...engine.helpers].filter(Boolean);
  engine.driver = null;
  engine.helpers = [];
  await Promise.all(workers.map((w) => w.terminate()));
}

// Runs body(engine) with a fresh engine; fails (and kills the engine) after `ms` milliseconds.
export async function withEngine(options, ms, body) {
  const engine = await makeEngine(options);
  let timer;
  const watchdog = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`watchdog: no answer within ${ms} ms (deadlock?)`)), ms);
  });
  try {
    return await Promise.race([body(engine), watchdog]);
  } finally {
    clearTimeout(timer);
    await killEngine(engine);
  }
}

// The path of a model in build/models, or null (tests that need it skip).
export function model(name) {
  const p = path.join(modelsDir, name);
  return fs.existsSync(p) ? p : null;
}
export function tool(name) {
  const p = path.join(binDir, name);
  return fs.existsSync(p) ? p : null;
}

// Runs a C++ tool; returns {status, stdout, stderr}.
export function runTool(name, args, input) {
  const r = spawnSync(path.join(binDir, name), args, { input, encoding: 'utf8', maxBuffer: 1 << 28 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

// needle-ref --dump for ids; returns the parsed dump (cached per options in a temp directory).
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'needle-engine-test-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));
export function tempPath(name) { return path.join(tmp, name); }

export function referenceDump(archive, ids, { kv = 'int8', act = 'a8', sink = 0, generate = 0 } = {}) {
  const file = tempPath(`dump-${path.basename(archive)}-${kv}-${act}-${sink}-${generate}-${ids.length}.json`);
  const r = runTool('needle-ref', ['--archive', archive, '--ids', ids.join(' '), '--kv', kv, '--act', act,
    '--sink', String(sink), '--generate', String(generate), '--dump', file]);
  if (r.status !== 0) throw new Error(`needle-ref failed: ${r.stderr}`);
  return { dump: JSON.parse(fs.readFileSync(file, 'utf8')), summary: JSON.parse(r.stdout) };
}

// needle-ref --logits-out rows (Float32Array per row) and its JSON summary.
export function referenceRows(archive, ids, { kv = 'int8', act = 'a8', sink = 0, generate = 0 } = {}) {
  const file = tempPath(`rows-${path.basename(archive)}-${kv}-${act}-${sink}-${generate}-${ids.length}.f32`);
  const r = runTool('needle-ref', ['--archive', archive, '--ids', ids.join(' '), '--kv', kv, '--act', act,
    '--sink', String(sink), '--generate', String(generate), '--logits-out', file]);
  if (r.status !== 0) throw new Error(`needle-ref failed: ${r.stderr}`);
  const buf = fs.readFileSync(file);
  return { all: new Float32Array(buf.buffer, buf.byteOffset, buf.length / 4), summary: JSON.parse(r.stdout) };
}

// maxRel(a, ref) = max |a - ref| / max |ref| (docs/numerics.md).
export function maxRel(a, ref) {
  let num = 0;
  let den = 0;
  for (let i = 0; i < ref.length; i++) {
    num = Math.max(num, Math.abs(a[i] - ref[i]));
    den = Math.max(den, Math.abs(ref[i]));
  }
  return den === 0 ? num : num / den;
}

export function argmax(v) {
  let best = 0;
  for (let i = 1; i < v.length; i++) if (v[i] > v[best]) best = i;
  return best;
}

// KL(p_ref || p) of the softmaxes of two logits rows, in nats.
export function kl(ref, a) {
  const lse = (v) => { let m = -Infinity; for (const x of v) m = Math.max(m, x); let s = 0; for (const x of v) s += Math.exp(x - m); return m + Math.log(s); };
  const lr = lse(ref);
  const la = lse(a);
  let sum = 0;
  for (let i = 0; i < ref.length; i++) {
    const lp = ref[i] - lr;
    sum += Math.exp(lp) * (lp - (a[i] - la));
  }
  return sum;
}

// A deterministic pseudo-random generator for test data (xorshift32).
export function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s / 4294967296; };
}
