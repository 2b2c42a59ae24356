// bench-ttft.mjs: time to first token of a 5-tool request (about 410 prompt positions on the test
// tokenizer), cold and with the tools prefix restored (docs/toolcall.md, "Reusing the tools prefix"),
// for bench.mjs's --toolcall-archive rows: needle-run (the C++ Reference, natively) and needle-wasm
// (the engine + toolcall.wasm in Node) at each thread count, each program one --batch run.
//
// The batch interleaves the two variants, pair after pair, so that a busy moment of the machine hits
// both alike: a cold request (a system turn of its own, so the prompt is prefilled whole and its prefix
// saved), then a second request with that same system turn and tools (the prefix restored, only the
// request prefilled). A first pair warms up (the token table, the JIT) and is not counted. The
// figure is the envelope's time_to_first_token_ms: from the start of the request in the session to
// its first reply token (ranking, prompt, prefill or restore and prefill, the first mask and draw).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const fmt = (x, digits = 1) => (Number.isFinite(x) ? x.toFixed(digits) : '-');

// Five tools in the styles of the page's ready sets.
export const TTFT_TOOLS = [
  { name: 'get_weather', description: 'Weather forecast for a city on a given day',
    parameters: { type: 'object', properties: { city: { type: 'string', description: 'City name' }, day: { type: 'string', enum: ['today', 'tomorrow'] } }, required: ['city'] } },
  { name: 'set_timer', description: 'Start a countdown timer',
    parameters: { type: 'object', properties: { minutes: { type: 'integer', minimum: 1, maximum: 600 }, label: { type: 'string' } }, required: ['minutes'] } },
  { name: 'send_message', description: 'Send a text message to one or more contacts',
    parameters: { type: 'object', properties: { to: { type: 'array', items: { type: 'string' }, minItems: 1 }, body: { type: 'string', maxLength: 80 } }, required: ['to', 'body'] } },
  { name: 'create_event', description: 'Add an event to the calendar',
    parameters: { type: 'object', properties: { title: { type: 'string' }, date: { type: 'string', description: 'YYYY-MM-DD' }, hour: { type: 'number', minimum: 0, maximum: 24 }, attendees: { type: 'array', items: { type: 'string' } } }, required: ['title', 'date'] } },
  { name: 'play_music', description: 'Play music by artist, album or genre',
    parameters: { type: 'object', properties: { query: { type: 'string' }, shuffle: { type: 'boolean' }, volume: { type: 'integer', minimum: 0, maximum: 100 } }, required: ['query'] } },
];

const REQUESTS = ["What's the weather in Lisbon tomorrow?", 'Set a timer for 12 minutes', 'Tell Ana and Bo that I am late',
  'Lunch with Sam on 2026-12-03 at 13', 'Play some jazz, shuffled'];

// The batch: a warm-up pair, then `pairs` pairs (cold, restored). Each line: {kind, json}.
export function ttftLines(pairs) {
  const line = (system, request, seed) => JSON.stringify({ tools: TTFT_TOOLS, system, request, temperature: 1, seed, max_tokens: 8 });
  const warm = 'You plan the day. (warm-up)';
  const lines = [{ kind: 'warm-up', json: line(warm, REQUESTS[0], 0) }, { kind: 'warm-up', json: line(warm, REQUESTS[1], 0) }];
  for (let i = 0; i < pairs; i++) {
    const system = `You plan the day. Session ${i + 1}.`;
    lines.push({ kind: 'cold', json: line(system, REQUESTS[i % REQUESTS.length], i + 1) });
    lines.push({ kind: 'restored', json: line(system, REQUESTS[(i + 2) % REQUESTS.length], i + 1) });
  }
  return lines;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : NaN;
};

// One table row from a batch's envelopes (a problem noted when the prefix was not reused exactly on
// the restored lines, or was on a cold one).
function ttftRow(label, lines, envelopes, problems) {
  const of = (kind) => envelopes.filter((_, i) => lines[i].kind === kind);
  const cold = of('cold');
  const restored = of('restored');
  if (cold.some((e) => e.reused_prompt_tokens !== 0) || restored.some((e) => e.reused_prompt_tokens !== e.pinned_tokens))
    problems.push(`${label}: the prefix was not reused exactly on the restored lines`);
  const c = cold.map((e) => e.time_to_first_token_ms);
  const w = restored.map((e) => e.time_to_first_token_ms);
  return [label, cold[0].prompt_tokens, cold[0].pinned_tokens, fmt(median(c)), fmt(Math.min(...c)),
    fmt(median(w)), fmt(Math.min(...w)), `${fmt(median(c) / median(w))}x`];
}

// Runs the batch in each program; returns {rows, problems}: per program the prompt and pinned
// positions, TTFT cold and restored (median and least, ms) and their ratio; a problem when a program
// fails, a restored line did not reuse the prefix (or a cold one did), or the programs' reply ids differ.
export function measureTtft({ archive, needleRun, engineCli, wasm, toolcall, threads = [1], pairs = 5, cwd }) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'needle-ttft-'));
  const lines = ttftLines(pairs);
  const batch = path.join(tmp, 'ttft.jsonl');
  fs.writeFileSync(batch, lines.map((l) => l.json).join('\n') + '\n');
  const programs = [];
  if (fs.existsSync(needleRun)) programs.push(['C++ reference + session, native -O3', needleRun, ['--archive', archive, '--batch', batch]]);
  if (fs.existsSync(wasm) && fs.existsSync(toolcall))
    for (const t of threads)
      programs.push([`wasm engine + toolcall.wasm, ${t} thread${t > 1 ? 's' : ''}`, process.execPath,
        [engineCli, '--archive', archive, '--batch', batch, '--threads', String(t), '--wasm', wasm, '--toolcall', toolcall]]);
  const rows = [];
  const problems = [];
  const replies = new Set();
  try {
    for (const [label, cmd, args] of programs) {
      const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', maxBuffer: 64 << 20, timeout: 20 * 60 * 1000 });
      const envelopes = r.status === 0 ? r.stdout.trim().split('\n').map((l) => JSON.parse(l)) : [];
      if (r.status !== 0 || envelopes.length !== lines.length) {
        problems.push(`${label}: failed: ${(r.stderr || '').trim().split('\n').slice(-2).join(' | ')}`);
        continue;
      }
      rows.push(ttftRow(label, lines, envelopes, problems));
      replies.add(JSON.stringify(envelopes.map((e) => e.reply_ids)));
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  if (replies.size > 1) problems.push('the programs gave different reply ids');
  return { rows, problems, pairs, replies: [...replies] };
}

// The same batch in headless Chromium (tests/node/helpers/browser.mjs: playwright-core), the engine
// and toolcall.wasm in a cross-origin isolated page, one engine per thread count, each request through
// engine.complete. Returns {rows, problems, replies} (replies: each thread count's reply ids, JSON),
// or {error} when Chromium cannot run.
export async function measureTtftBrowser({ root, archive, wasm, toolcall, threads = [1], pairs = 5 }) {
  let runIsolatedPage;
  try {
    ({ runIsolatedPage } = await import(pathToFileURL(path.join(root, 'tests', 'node', 'helpers', 'browser.mjs')).href));
  } catch (e) { return { error: `skipped (${e.message})` }; }
  const lines = ttftLines(pairs);
  const archiveBytes = fs.statSync(archive).size;
  const page = `<!doctype html><meta charset="utf-8"><script type="module">
import { createEngine } from '/site/engine/needle.mjs';
try {
  const bytes = new Uint8Array(await (await fetch('/model.cact')).arrayBuffer());
  const out = [];
  for (const threads of ${JSON.stringify(threads)}) {
    const maxMemoryBytes = Math.ceil((${archiveBytes} * 1.3 + (256 << 20)) / 65536) * 65536;
    const engine = await createEngine({ threads, maxMemoryBytes, wasm: new URL('/engine.wasm', location.href),
      toolcall: new URL('/toolcall.mjs', location.href) });
    await engine.load(bytes);
    const envelopes = [];
    for (const line of ${JSON.stringify(lines.map((l) => l.json))}) envelopes.push(await engine.complete(line));
    out.push({ threads, envelopes });
    await engine.close();
  }
  window.result = { out, agent: navigator.userAgent.match(/Chrom[a-z]*\\/[0-9.]+/)?.[0] ?? navigator.userAgent };
} catch (e) { window.result = { error: String(e && e.stack || e) }; }
</script>`;
  const files = { '/model.cact': archive, '/engine.wasm': wasm, '/toolcall.mjs': toolcall,
    '/toolcall.wasm': path.join(path.dirname(toolcall), 'toolcall.wasm') };
  const result = await runIsolatedPage({ root, html: page, files, dirs: ['site'] });
  if (result.error) return { error: result.error };
  const problems = [];
  const rows = result.out.map(({ threads: t, envelopes }) =>
    ttftRow(`wasm engine + toolcall.wasm in ${result.agent}, ${t} thread${t > 1 ? 's' : ''}`, lines, envelopes, problems));
  return { rows, problems, replies: result.out.map(({ envelopes }) => JSON.stringify(envelopes.map((e) => e.reply_ids))) };
}

export const TTFT_HEADER = ['program', 'prompt tokens', 'pinned', 'TTFT cold ms (median)', '(least)',
  'TTFT restored ms (median)', '(least)', 'cold / restored'];

// As a program (bench.mjs runs it so): node scripts/bench-ttft.mjs --archive FILE [--build DIR]
// [--engine-cli FILE] [--threads 1,2] [--pairs N] [--browser]; prints the table; exit status 1 on a
// problem.
if (import.meta.url === `file://${process.argv[1]}`) {
  const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
  const opts = { archive: '', build: 'build', engineCli: path.join(root, 'tools', 'needle-wasm.mjs'), threads: [1], pairs: 5, browser: false };
  for (let i = 2; i < process.argv.length; i += 2) {
    const [k, v] = [process.argv[i], process.argv[i + 1]];
    if (k === '--archive') opts.archive = v;
    else if (k === '--build') opts.build = v;
    else if (k === '--engine-cli') opts.engineCli = v;
    else if (k === '--threads') opts.threads = v.split(',').map(Number);
    else if (k === '--pairs') opts.pairs = Number(v);
    else if (k === '--browser') { opts.browser = true; i--; }
    else { console.error(`bench-ttft: unknown option ${k}`); process.exit(2); }
  }
  if (!opts.archive) { console.error('bench-ttft: --archive FILE is required'); process.exit(2); }
  const build = path.resolve(root, opts.build);
  const t = measureTtft({ archive: opts.archive, needleRun: path.join(build, 'bin', 'needle-run'), engineCli: opts.engineCli,
    wasm: path.join(build, 'engine.wasm'), toolcall: path.join(build, 'toolcall.mjs'), threads: opts.threads, pairs: opts.pairs, cwd: root });
  console.log(`time to first token, a 5-tool request on ${opts.archive} (${t.pairs} pairs: a cold request, then one ` +
    'with its tools prefix restored; load average ' + os.loadavg().map((l) => l.toFixed(2)).join(' ') + '):');
  const table = [TTFT_HEADER, ...t.rows.map((r) => r.map(String))];
  if (opts.browser) {
    const b = await measureTtftBrowser({ root, archive: path.resolve(opts.archive), wasm: path.join(build, 'engine.wasm'),
      toolcall: path.join(build, 'toolcall.mjs'), threads: opts.threads, pairs: opts.pairs });
    if (b.error) console.log(`headless Chromium: ${b.error}`);
    else {
      for (const r of b.rows) table.push(r.map(String));
      t.problems.push(...b.problems);
      if (b.replies.some((r) => !t.replies.includes(r))) t.problems.push('Chromium gave other reply ids than Node');
    }
  }
  const widths = TTFT_HEADER.map((_, c) => Math.max(...table.map((r) => r[c].length)));
  for (const r of table) console.log(r.map((x, c) => (c === 0 ? x.padEnd(widths[c]) : x.padStart(widths[c]))).join('  '));
  for (const p of t.problems) console.log(`WARNING: ${p}`);
  console.log('');
  process.exit(t.problems.length ? 1 : 0);
}
