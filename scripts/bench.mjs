#!/usr/bin/env node
// bench.mjs: the speed table of `npm run bench` (scripts/bench.sh builds everything first).
//
// Runs, each in its own process and one after another, the same greedy decode of a fixed id prompt on
// a base-geometry archive: the C++ reference built natively (-O3), the same C++ built with Emscripten
// (-O3 -msimd128) under Node, and the hand-written wasm engine at 1 and 2 threads. Every program prints
// one JSON object with its own timings (prefill_ms, prefill_tokens, decode_ms, decode_tokens), so
// process start-up and archive loading are not counted. Each configuration runs --reps times; the best
// figure of each kind is kept. Then it prints tokens/s and ratios; docs/benchmarks.md explains them.
// Then the engine's own figures (scripts/bench-engine.mjs), in this process: decode tok/s at 1, 2 and
// nproc threads with the scaling over 1 thread, and prefill tok/s of a 256-id prompt batched and one
// step per id; with --browser the same figures in headless Chromium (V8 in a page and in Node differ).
// With --toolcall-archive (an archive with a tokenizer), it also runs the same tool-call requests in
// needle-run and needle-wasm --batch and prints what the call grammar costs per generated token (masks
// and forced fragments) next to the time per reply token, and the share of tokens that were forced.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { ENGINE_HEADER, engineRows, measureEngine } from './bench-engine.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const usage = `usage: node scripts/bench.mjs --archive BASE.cact [options]
  --build DIR         native build directory with bin/needle-ref (default build)
  --emscripten DIR    Emscripten build with needle-ref.js (default build-emscripten)
  --archive FILE      the archive to time (base geometry)
  --tiny FILE         a small archive for the Emscripten-vs-native id check (skipped without it)
  --prompt-tokens N   prompt length in ids (default 64)
  --generate N        tokens to generate (default 64)
  --reps N            runs of each configuration, best kept (default 2)
  --threads LIST      engine thread counts (default 1,2,nproc)
  --rounds N          rounds of the engine's own figures, best kept (default 3)
  --browser           the engine's own figures in headless Chromium too (playwright-core)
  --engine-cli FILE   the engine's command line (default tools/needle-wasm.mjs)
  --no-f32            skip the f32 rows of the reference
  --toolcall-archive FILE  an archive with a tokenizer (base geometry) for the tool-call rows
                      (skipped without it); needs bin/needle-run and toolcall.mjs in the build
`;

// Parses --name value options into an object; exits with the usage on anything unknown.
function parseArgs(argv) {
  const opts = {
    build: 'build', emscripten: 'build-emscripten', archive: '', tiny: '',
    promptTokens: 64, generate: 64, reps: 2, threads: [...new Set([1, 2, os.cpus().length])], f32: true, toolcallArchive: '',
    rounds: 3, browser: false,
    engineCli: path.join(root, 'tools', 'needle-wasm.mjs'),
  };
  const num = (name, text) => {
    if (!/^\d+$/.test(text ?? '')) fail(`${name} needs a non-negative integer, got '${text}'`);
    return Number(text);
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) fail(`${a} needs a value`);
      return argv[++i];
    };
    switch (a) {
      case '--build': opts.build = value(); break;
      case '--emscripten': opts.emscripten = value(); break;
      case '--archive': opts.archive = value(); break;
      case '--tiny': opts.tiny = value(); break;
      case '--prompt-tokens': opts.promptTokens = num(a, value()); break;
      case '--generate': opts.generate = num(a, value()); break;
      case '--reps': opts.reps = Math.max(1, num(a, value())); break;
      case '--threads': opts.threads = value().split(',').map((t) => num(a, t)); break;
      case '--engine-cli': opts.engineCli = path.resolve(value()); break;
      case '--no-f32': opts.f32 = false; break;
      case '--rounds': opts.rounds = Math.max(1, num(a, value())); break;
      case '--browser': opts.browser = true; break;
      case '--toolcall-archive': opts.toolcallArchive = value(); break;
      case '--help': case '-h': process.stdout.write(usage); process.exit(0);
      default: fail(`unknown option ${a}`);
    }
  }
  if (!opts.archive) fail('--archive is required');
  if (opts.promptTokens < 1 || opts.generate < 1) fail('--prompt-tokens and --generate must be >= 1');
  return opts;
}

function fail(message) {
  process.stderr.write(`bench: ${message}\n\n${usage}`);
  process.exit(2);
}

// The few header fields the benchmark needs (docs/archive-format.md: u32 LE at fixed offsets).
function readGeometry(file) {
  const fd = fs.openSync(file, 'r');
  const h = Buffer.alloc(120);
  try {
    if (fs.readSync(fd, h, 0, 120, 0) !== 120) throw new Error(`${file}: shorter than the 120-byte header`);
  } finally {
    fs.closeSync(fd);
  }
  const u32 = (off) => h.readUInt32LE(off);
  if (u32(0) !== 0x05e12a83) throw new Error(`${file}: tag 0x${u32(0).toString(16)} is not Needle 2`);
  return {
    vocab: u32(20), d: u32(24), heads: u32(28), kvHeads: u32(32), layers: u32(36),
    maxSeqLen: u32(44), kvWindow: u32(12), bytes: fs.statSync(file).size,
  };
}

// A fixed prompt of n ids spread over the vocabulary (ids below 4 are left to the special tokens).
function promptIds(n, vocab) {
  const ids = [];
  for (let i = 0; i < n; i++) ids.push(4 + ((i * 7919 + 13) % (vocab - 4)));
  return ids.join(' ');
}

// Runs one program; returns {json} with its parsed JSON object, or {error} with what went wrong.
function runJson(command, args, env = {}) {
  const r = spawnSync(command, args, {
    cwd: root, encoding: 'utf8', maxBuffer: 64 << 20, timeout: 15 * 60 * 1000,
    env: { ...process.env, ...env },
  });
  if (r.error) return { error: r.error.message };
  if (r.status !== 0) {
    const why = (r.stderr || r.stdout || '').trim().split('\n').slice(-3).join(' | ');
    return { error: `exit ${r.status ?? r.signal}: ${why}` };
  }
  const text = r.stdout.trim();
  const candidates = [text, ...text.split('\n').reverse().filter((l) => l.trim().startsWith('{'))];
  for (const c of candidates) {
    try {
      return { json: JSON.parse(c) };
    } catch { /* try the next candidate */ }
  }
  return { error: `no JSON object on stdout: ${text.slice(0, 200)}` };
}

// The programs under test. Each returns [command, args, env] for an archive, ids and length.
function programs(opts) {
  const native = path.resolve(root, opts.build, 'bin', 'needle-ref');
  const emjs = path.resolve(root, opts.emscripten, 'needle-ref.js');
  const engineCli = opts.engineCli;
  const engineWasm = path.resolve(root, opts.build, 'engine.wasm');
  const common = (archive, ids, n, mode) =>
    ['--archive', archive, '--ids', ids, '--generate', String(n), ...mode];
  return {
    native: {
      present: fs.existsSync(native), where: native,
      cmd: (archive, ids, n, mode, threads, extra = []) => [native, [...common(archive, ids, n, mode), ...extra], {}],
    },
    emscripten: {
      present: fs.existsSync(emjs), where: emjs,
      cmd: (archive, ids, n, mode, threads, extra = []) =>
        [process.execPath, [emjs, ...common(archive, ids, n, mode), ...extra], {}],
    },
    // The engine always computes A8 + int8 KV, so it takes no mode flags; engine.wasm is the one
    // scripts/build-engine.sh assembled into the build directory.
    engine: {
      present: fs.existsSync(engineCli) && fs.existsSync(engineWasm), where: engineCli,
      cmd: (archive, ids, n, mode, threads, extra = []) => [process.execPath,
        [engineCli, ...common(archive, ids, n, []), '--threads', String(threads), '--wasm', engineWasm, ...extra], {}],
    },
  };
}

const A8 = ['--kv', 'int8', '--act', 'a8'];   // what engine.wat computes (docs/numerics.md)
const F32 = ['--kv', 'f32', '--act', 'f32'];  // the exact oracle

// Tokens per second of one run's JSON, or NaN when a figure is missing.
function rates(json) {
  const rate = (tokens, ms) => (Number.isFinite(tokens) && ms > 0 ? (tokens * 1000) / ms : NaN);
  return {
    prefill: rate(json.prefill_tokens, json.prefill_ms),
    decode: rate(json.decode_tokens, json.decode_ms),
  };
}

// The wasm memory size the engine reports, in bytes, under any of the names it might use.
function memoryBytes(json) {
  for (const k of ['memory_bytes', 'wasm_memory_bytes', 'memoryBytes', 'memory']) {
    if (Number.isFinite(json?.[k])) return json[k];
  }
  return NaN;
}

const fmt = (x, digits = 1) => (Number.isFinite(x) ? x.toFixed(digits) : '-');
const ratio = (a, b) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${(a / b).toFixed(2)}x` : '-');
const mib = (bytes) => `${(bytes / (1 << 20)).toFixed(1)} MiB`;

function cpuModel() {
  try {
    const m = fs.readFileSync('/proc/cpuinfo', 'utf8').match(/^model name\s*:\s*(.*)$/m);
    if (m) return m[1];
  } catch { /* not Linux */ }
  return os.cpus()[0]?.model ?? 'unknown CPU';
}

function firstLine(command, args) {
  const r = spawnSync(command, args, { encoding: 'utf8', env: { ...process.env, NODE_PATH: '/usr/share/nodejs' } });
  return r.status === 0 ? (r.stdout || r.stderr).trim().split('\n')[0] : 'unknown';
}

// The native build's C++ compiler and its Release flags, from the CMake cache.
function nativeCompiler(buildDir) {
  try {
    const cache = fs.readFileSync(path.resolve(root, buildDir, 'CMakeCache.txt'), 'utf8');
    const compiler = cache.match(/^CMAKE_CXX_COMPILER:[A-Z]+=(.*)$/m)?.[1];
    const flags = cache.match(/^CMAKE_CXX_FLAGS_RELEASE:[A-Z]+=(.*)$/m)?.[1] ?? '';
    if (compiler) return `${firstLine(compiler, ['--version'])} ${flags}`.trim();
  } catch { /* no cache: fall through */ }
  return 'unknown';
}

// Prints a table with a header row, columns padded; numeric columns right-aligned.
function printTable(header, rows) {
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => String(r[c]).length)));
  const line = (cells) => cells.map((cell, c) =>
    c < 3 ? String(cell).padEnd(widths[c]) : String(cell).padStart(widths[c])).join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) console.log(line(r));
}

// maxRel over logits rows (docs/numerics.md): the largest max_i |a_i - b_i| / max_i |b_i| of any row,
// over the rows both files hold; Infinity when the files differ in length.
function logitsMaxRel(fileA, fileB, vocab) {
  const read = (f) => {
    const b = fs.readFileSync(f);
    return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
  };
  const a = read(fileA), b = read(fileB);
  if (a.length !== b.length || a.length % vocab !== 0) return Infinity;
  let worst = 0;
  for (let row = 0; row < a.length; row += vocab) {
    let diff = 0, scale = 0;
    for (let i = row; i < row + vocab; i++) {
      diff = Math.max(diff, Math.abs(a[i] - b[i]));
      scale = Math.max(scale, Math.abs(b[i]));
    }
    worst = Math.max(worst, scale > 0 ? diff / scale : diff);
  }
  return worst;
}

// Checks that the Emscripten build (and the engine, when built) compute what the native reference
// computes on the tiny archive: the same generated ids, and every logits row within 1e-4 relative
// (the A8 parity bound of docs/numerics.md; two compilers' f32 differ by a few ulps). Prints one line
// per check; returns the number of problems.
function checkSameIds(opts, progs) {
  if (!opts.tiny || !fs.existsSync(opts.tiny)) {
    console.log('check: skipped (no --tiny archive)');
    return 0;
  }
  if (!progs.native.present) {
    console.log('check: skipped (native needle-ref not built)');
    return 0;
  }
  const geo = readGeometry(opts.tiny);
  const ids = promptIds(16, geo.vocab);
  const n = 24;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'needle-bench-'));
  let problems = 0;
  const checks = [
    ['emscripten', 'a8 + int8 KV', A8, 0],
    ['emscripten', 'f32', F32, 0],
    ['engine', 'a8 + int8 KV', A8, 1],
    ['engine', 'a8 + int8 KV', A8, 2],
  ];
  const reference = {};
  try {
    for (const [name, label, mode, threads] of checks) {
      if (!progs[name].present) continue;
      const key = mode.join(' ');
      const wantRows = path.join(tmp, `native ${key}.f32`);
      reference[key] ??= runJson(...progs.native.cmd(opts.tiny, ids, n, mode, 0, ['--logits-out', wantRows]));
      const want = reference[key];
      const gotRows = path.join(tmp, `${name} ${threads} ${key}.f32`);
      const got = runJson(...progs[name].cmd(opts.tiny, ids, n, mode, threads, ['--logits-out', gotRows]));
      const who = `${name}${threads ? ` ${threads}T` : ''} (${label})`;
      if (want.error || got.error) {
        console.log(`check: WARNING ${who}: could not compare: ${want.error ?? got.error}`);
        problems++;
        continue;
      }
      const same = JSON.stringify(got.json.generated_ids) === JSON.stringify(want.json.generated_ids) &&
        JSON.stringify(got.json.prompt_ids) === JSON.stringify(want.json.prompt_ids);
      const rel = logitsMaxRel(gotRows, wantRows, geo.vocab);
      const relText = Number.isFinite(rel) ? `logits maxRel ${rel.toExponential(1)}` : 'logits rows differ in number';
      if (same && rel <= 1e-4) {
        console.log(`check: ${who} = native reference on the tiny archive: ` +
          `the same ${want.json.generated_ids.length} ids, ${relText}`);
      } else {
        problems++;
        console.log(`check: WARNING ${who} differs from the native reference on the tiny archive: ${relText}` +
          (same ? ' (same ids)' : `\n  native: ${JSON.stringify(want.json.generated_ids)}` +
            `\n  ${name}: ${JSON.stringify(got.json.generated_ids)}`));
      }
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  return problems;
}

// The tool-call requests of the constraint rows: the page's default tools and a third with nested
// arguments, four requests, temperature 1 (so that the reply reaches the arguments' strings and
// numbers, where masks cost the most), two seeds each; replies of at most 128 tokens.
function toolcallBatch() {
  const tools = [
    { name: 'get_weather', description: 'Weather forecast for a city on a given day',
      parameters: { type: 'object', properties: { city: { type: 'string', description: 'City name' }, day: { type: 'string', enum: ['today', 'tomorrow'] } }, required: ['city'] } },
    { name: 'set_timer', description: 'Start a countdown timer',
      parameters: { type: 'object', properties: { minutes: { type: 'integer' } }, required: ['minutes'] } },
    { name: 'send_message', description: 'Send a text message',
      parameters: { type: 'object', properties: { to: { type: 'array', items: { type: 'string' }, minItems: 1 }, body: { type: 'string', maxLength: 80 }, at: { type: 'number', minimum: 0, maximum: 24 } }, required: ['to', 'body'] } },
  ];
  const requests = ["What's the weather in Lisbon tomorrow?", 'Set a timer for 12 minutes', 'Tell Ana and Bo that I am late', 'Weather in Porto today'];
  const lines = [];
  for (const seed of [1, 2]) for (const request of requests) lines.push(JSON.stringify({ tools, request, temperature: 1, seed, max_tokens: 128 }));
  return lines.join('\n') + '\n';
}

// Runs the tool-call batch in needle-run (native, A8 + int8 KV) and in the engine at 1 thread, and
// prints per program: reply tokens, the share forced, the time per reply token (decode_tps counts
// every reply token, sampled or forced, masks included), and the constraint's cost per reply token
// (constraint_ms: masks, forced fragments and the matcher's steps). Returns the number of failures.
function toolcallRows(opts) {
  if (!opts.toolcallArchive) {
    console.log('tool calls: skipped (no --toolcall-archive)');
    return 0;
  }
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'needle-bench-'));
  const batch = path.join(tmp, 'requests.jsonl');
  fs.writeFileSync(batch, toolcallBatch());
  const native = path.resolve(root, opts.build, 'bin', 'needle-run');
  const toolcall = path.resolve(root, opts.build, 'toolcall.mjs');
  const engineWasm = path.resolve(root, opts.build, 'engine.wasm');
  const runs = [
    ['C++ reference + session, native -O3', fs.existsSync(native), native, ['--archive', opts.toolcallArchive, '--batch', batch]],
    ['wasm engine + toolcall.wasm, 1 thread', fs.existsSync(toolcall) && fs.existsSync(engineWasm), process.execPath,
      [opts.engineCli, '--archive', opts.toolcallArchive, '--batch', batch, '--threads', '1', '--wasm', engineWasm, '--toolcall', toolcall]],
  ];
  const rows = [];
  const replies = [];
  let failures = 0;
  // Time to first token of a 5-tool request, cold and with the tools prefix restored: its own table
  // (scripts/bench-ttft.mjs), in its own process; with --browser also in headless Chromium.
  const ttft = spawnSync(process.execPath, [path.join(root, 'scripts', 'bench-ttft.mjs'), '--archive', opts.toolcallArchive,
    '--build', opts.build, '--engine-cli', opts.engineCli, '--threads', opts.threads.join(','),
    ...(opts.browser ? ['--browser'] : [])], { cwd: root, stdio: 'inherit' });
  if (ttft.status !== 0) failures++;
  try {
    for (const [label, present, cmd, args] of runs) {
      if (!present) {
        console.log(`tool calls: ${label}: not built`);
        continue;
      }
      const r = spawnSync(cmd, args, { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20, timeout: 15 * 60 * 1000 });
      const envelopes = r.status === 0 ? r.stdout.trim().split('\n').map((l) => JSON.parse(l)) : [];
      if (r.status !== 0 || envelopes.some((e) => !e.success)) {
        console.log(`tool calls: ${label}: FAILED: ${(r.stderr || '').trim().split('\n').slice(-2).join(' | ') || envelopes.find((e) => !e.success)?.error}`);
        failures++;
        continue;
      }
      const sum = (key) => envelopes.reduce((n, e) => n + e[key], 0);
      const tokens = sum('generated_tokens');
      const decodeMs = envelopes.reduce((n, e) => n + (e.decode_tps > 0 ? (e.generated_tokens * 1000) / e.decode_tps : 0), 0);
      const constraintMs = sum('constraint_ms');
      rows.push([label, envelopes.length, tokens, `${fmt((100 * sum('forced_tokens')) / tokens)}%`,
        fmt(decodeMs / tokens, 2), fmt(constraintMs / tokens, 3), `${fmt((100 * constraintMs) / decodeMs)}%`]);
      replies.push(JSON.stringify(envelopes.map((e) => e.reply_ids)));
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  if (rows.length) {
    console.log(`tool calls on ${opts.toolcallArchive} (${toolcallBatch().trim().split('\n').length} requests, ` +
      'temperature 1, at most 128 reply tokens each):');
    printTable(['program', 'requests', 'reply tokens', 'forced', 'ms per reply token', 'constraint ms per token', 'constraint share'], rows);
    if (new Set(replies).size > 1) console.log('WARNING: the two programs gave different reply ids');
    console.log('');
  }
  return failures;
}

// The engine's own figures (bench-engine.mjs) in Node, and with --browser in headless Chromium.
async function engineFigures(opts) {
  const wasmFile = path.resolve(root, opts.build, 'engine.wasm');
  if (!fs.existsSync(wasmFile)) {
    console.log(`engine figures: skipped (${wasmFile} is missing)\n`);
    return;
  }
  const { createEngine } = await import(pathToFileURL(path.join(root, 'site', 'engine', 'needle.mjs')).href);
  console.log(`engine figures in Node ${process.version} (${opts.rounds} rounds, interleaved, best kept; load ` +
    `${os.loadavg()[0].toFixed(2)}):`);
  const node = await measureEngine(createEngine, { wasm: fs.readFileSync(wasmFile), archive: opts.archive,
    archiveBytes: fs.statSync(opts.archive).size,
    threads: opts.threads, rounds: opts.rounds, onLine: (l) => console.log(l) });
  console.log('');
  printTable(ENGINE_HEADER, engineRows(node));
  console.log('');
  if (opts.browser) {
    const r = await browserFigures(opts, wasmFile);
    if (r.error) console.log(`engine figures in Chromium: ${r.error}\n`);
    else {
      console.log(`engine figures in ${r.agent} (${r.cores} cores, the same rounds):`);
      for (const l of r.lines) console.log(l);
      console.log('');
      printTable(ENGINE_HEADER, engineRows(r.results));
      console.log('');
    }
  }
}

// Runs bench-engine.mjs in a cross-origin isolated page of headless Chromium (the repository served
// with COOP/COEP, the archive at /model.cact, the engine at /engine.wasm); {results, lines, agent} or
// {error}.
async function browserFigures(opts, wasmFile) {
  let runIsolatedPage;
  try {
    ({ runIsolatedPage } = await import(pathToFileURL(path.join(root, 'tests', 'node', 'helpers', 'browser.mjs')).href));
  } catch (e) { return { error: `skipped (${e.message})` }; }
  const archive = path.resolve(opts.archive);
  const threads = JSON.stringify(opts.threads.length ? opts.threads : [1, 2]);
  const html = `<!doctype html><meta charset="utf-8"><script type="module">
import { createEngine } from '/site/engine/needle.mjs';
import { measureEngine } from '/scripts/bench-engine.mjs';
const lines = [];
try {
  const bytes = new Uint8Array(await (await fetch('/model.cact')).arrayBuffer());
  const cores = navigator.hardwareConcurrency;
  const threads = [...new Set([...${threads}.filter((t) => t !== ${os.cpus().length}), cores])];
  const results = await measureEngine(createEngine, { wasm: new URL('/engine.wasm', location.href), archive: bytes,
    archiveBytes: bytes.length,
    threads, rounds: ${opts.rounds}, onLine: (l) => lines.push(l) });
  window.result = { results, lines, agent: navigator.userAgent.split(' ').find((w) => w.includes('Chrom')) ?? navigator.userAgent, cores };
} catch (e) { window.result = { error: String(e && e.stack || e), lines }; }
</script>`;
  return runIsolatedPage({ root, html, files: { '/model.cact': archive, '/engine.wasm': wasmFile }, dirs: ['site', 'scripts'] });
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const progs = programs(opts);
  const geo = readGeometry(opts.archive);
  if (opts.promptTokens + opts.generate > geo.maxSeqLen) {
    fail(`prompt + generate = ${opts.promptTokens + opts.generate} exceeds max_seq_len ${geo.maxSeqLen}`);
  }
  const ids = promptIds(opts.promptTokens, geo.vocab);
  const load0 = os.loadavg();

  console.log(`archive: ${opts.archive} (${mib(geo.bytes)}; d ${geo.d}, ${geo.layers} layers, ` +
    `${geo.heads}/${geo.kvHeads} heads, vocab ${geo.vocab}, kv_window ${geo.kvWindow})`);
  console.log(`machine: ${cpuModel()}, ${os.cpus().length} cores; node ${process.version}`);
  console.log(`compilers: native ${nativeCompiler(opts.build)}; ${firstLine('em++', ['--version'])}`);
  console.log(`load average at start: ${load0.map((l) => l.toFixed(2)).join(' ')}` +
    (load0[0] > 0.5 ? '  (WARNING: other work is running; figures may be low and noisy)' : ''));
  console.log(`run: ${opts.promptTokens} prompt ids, ${opts.generate} generated tokens, greedy, ` +
    `best of ${opts.reps}\n`);

  // The configurations, in the order they run within one repetition.
  const configs = [
    { name: 'native', label: 'C++ reference, native -O3', mode: 'a8 + int8 KV', args: A8, prog: 'native' },
    { name: 'emscripten', label: 'C++ reference, em++ -O3 -msimd128', mode: 'a8 + int8 KV', args: A8, prog: 'emscripten' },
  ];
  if (opts.f32) {
    configs.push(
      { name: 'native-f32', label: 'C++ reference, native -O3', mode: 'f32', args: F32, prog: 'native' },
      { name: 'emscripten-f32', label: 'C++ reference, em++ -O3 -msimd128', mode: 'f32', args: F32, prog: 'emscripten' });
  }
  for (const t of opts.threads) {
    configs.push({ name: `engine-${t}`, label: 'wasm engine (engine.wat)', mode: 'a8 + int8 KV', args: A8,
      prog: 'engine', threads: t });
  }

  const missing = new Set();
  for (const c of configs) {
    c.best = { prefill: NaN, decode: NaN };
    c.memory = NaN;
    if (!progs[c.prog].present) missing.add(c.prog);
  }
  for (let rep = 1; rep <= opts.reps; rep++) {
    for (const c of configs) {
      if (!progs[c.prog].present || c.error) continue;
      const [cmd, args, env] = progs[c.prog].cmd(opts.archive, ids, opts.generate, c.args, c.threads);
      const r = runJson(cmd, args, env);
      if (r.error) {
        c.error = r.error;
        console.log(`  ${c.name} rep ${rep}: FAILED: ${r.error}`);
        continue;
      }
      const j = r.json;
      const rt = rates(j);
      c.best.prefill = Math.max(Number.isFinite(c.best.prefill) ? c.best.prefill : -1, rt.prefill);
      c.best.decode = Math.max(Number.isFinite(c.best.decode) ? c.best.decode : -1, rt.decode);
      if (Number.isFinite(memoryBytes(j))) c.memory = memoryBytes(j);
      c.tokens = { prefill: j.prefill_tokens, decode: j.decode_tokens };
      c.generated = j.generated_ids;
      console.log(`  ${c.name} rep ${rep}: prefill ${j.prefill_tokens} tok in ${fmt(j.prefill_ms)} ms, ` +
        `decode ${j.decode_tokens} tok in ${fmt(j.decode_ms)} ms`);
    }
  }
  console.log('');

  // Ratios compare with the reference in the same mode: the engine and the a8 rows with the a8
  // reference, the f32 rows with the f32 reference.
  const byName = Object.fromEntries(configs.map((c) => [c.name, c]));
  const baseline = (c, kind) => byName[(c.args === F32 ? `${kind}-f32` : kind)]?.best ?? {};
  const rows = configs.filter((c) => progs[c.prog].present).map((c) => {
    const em = baseline(c, 'emscripten');
    const nat = baseline(c, 'native');
    return [c.label, c.mode, c.threads ?? 1,
      c.error ? 'failed' : fmt(c.best.prefill), c.error ? 'failed' : fmt(c.best.decode),
      ratio(c.best.prefill, em.prefill), ratio(c.best.decode, em.decode),
      ratio(c.best.prefill, nat.prefill), ratio(c.best.decode, nat.decode)];
  });
  printTable(['engine', 'mode', 'threads', 'prefill tok/s', 'decode tok/s',
    'prefill vs em++', 'decode vs em++', 'prefill vs native', 'decode vs native'], rows);
  console.log('');

  for (const p of ['native', 'emscripten']) {
    if (missing.has(p)) console.log(`${p}: not built (${progs[p].where} is missing)`);
  }
  if (missing.has('engine')) {
    console.log(`engine: not built (${path.relative(root, progs.engine.where)} or ` +
      `${path.join(opts.build, 'engine.wasm')} is missing)`);
  } else {
    const mem = configs.filter((c) => c.prog === 'engine' && Number.isFinite(c.memory));
    if (mem.length) {
      for (const c of mem) console.log(`engine memory (${c.threads} thread${c.threads === 1 ? "" : "s"}): ${mib(c.memory)} of wasm memory`);
    } else {
      console.log('engine memory: not reported by needle-wasm');
    }
    // The goal (docs/benchmarks.md): one thread >= 4x the Emscripten build and >= 1x native.
    const one = byName['engine-1'];
    if (one && !one.error) {
      const verdict = (x, b, goal) => (x / b >= goal ? `${(x / b).toFixed(2)}x meets` : `${(x / b).toFixed(2)}x BELOW`);
      const em = byName.emscripten.best;
      const nat = byName.native.best;
      console.log(`goal, engine at 1 thread: >= 4x em++ (decode ${verdict(one.best.decode, em.decode, 4)}, ` +
        `prefill ${verdict(one.best.prefill, em.prefill, 4)}); >= 1x native (decode ` +
        `${verdict(one.best.decode, nat.decode, 1)}, prefill ${verdict(one.best.prefill, nat.prefill, 1)})`);
      // The f32 reference computes more but has no quantisation step in its products; when it is the
      // faster native mode, say how the engine does against that too.
      const natF32 = byName['native-f32']?.best;
      if (natF32 && natF32.decode > nat.decode) {
        console.log(`  against the faster native f32 mode: decode ${(one.best.decode / natF32.decode).toFixed(2)}x, ` +
          `prefill ${(one.best.prefill / natF32.prefill).toFixed(2)}x`);
      }
    }
  }
  // Different token counts would make rows incomparable (a program that stops at an end token early).
  const counts = new Set(configs.filter((c) => c.tokens).map((c) => `${c.tokens.prefill}/${c.tokens.decode}`));
  if (counts.size > 1) {
    console.log(`WARNING: the programs timed different token counts (prefill/decode: ${[...counts].join(', ')})`);
  }
  const gens = configs.filter((c) => c.args === A8 && c.generated).map((c) => JSON.stringify(c.generated));
  if (new Set(gens).size > 1) {
    console.log('WARNING: the a8 + int8 KV runs generated different ids on the base archive');
  }
  const load1 = os.loadavg();
  console.log(`load average at end: ${load1.map((l) => l.toFixed(2)).join(' ')}\n`);

  await engineFigures(opts);
  toolcallRows(opts);
  checkSameIds(opts, progs);
  const failed = configs.filter((c) => c.error && c.prog !== 'engine');
  process.exit(failed.length ? 1 : 0);
}

await main();
