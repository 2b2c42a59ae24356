#!/usr/bin/env node
// needle-wasm: the wasm engine (site/engine/) from the command line.
//
// Two modes. Without --tools it has needle-ref's interface: loads an archive into the engine (driver +
// helper Workers on one shared memory), runs a prompt teacher-forced, then generates (greedy unless
// sampling options are given), and prints one JSON object: prompt_ids, generated_ids, text (with a
// tokenizer), prefill_ms, prefill_tokens, decode_ms, decode_tokens, ms_per_token, threads,
// memory_bytes. With --tools (or --batch) it is needle-run's counterpart: one tool-call request through
// engine.complete (the session of host/toolcall/ in toolcall.wasm, the engine as its backend), printing
// the envelope (docs/toolcall.md, "The envelope").
import fs from 'node:fs';

import { formatJobLog, summarizeJobLog } from '../site/engine/joblog.mjs';
import { createEngine, ToolcallError } from '../site/engine/needle.mjs';

const usage = `usage: node tools/needle-wasm.mjs --archive FILE (--prompt TEXT | --ids "2 4 ...")
       [--generate N] [--threads T] [--seed S] [--sink N] [--logits-out FILE] [--prefill batched|steps]
       [--temperature T] [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty R] [--repeat-window N]
       [--trace] [--wasm FILE]
   or: node tools/needle-wasm.mjs --archive FILE --tools TOOLS.json [--prompt REQUEST] [--system TEXT]
       [--history FILE] [--max-tokens N] [--no-constrain] [--no-heads] [--no-call-bias B] [--no-call-doubt W]
       [--no-call-named V] [--steer-named] [--span-strings] [--stream] [--threads T]
       [--seed S] [sampling options] [--wasm FILE] [--toolcall FILE]
   or: node tools/needle-wasm.mjs --archive FILE --batch FILE [--threads T] [--wasm FILE] [--toolcall FILE]

  --archive FILE      the .cact archive
  --prompt TEXT       ids = [bos] + encode(TEXT) with the archive's tokenizer; with --tools, the
                      user's request
  --ids "2 4 ..."     the prompt as token ids (spaces or commas), BOS included
  --generate N        generate up to N tokens (default 0); stops after EOS or a full session
  --threads T         threads, the driver included (default 1)
  --seed S            the sampler's generator seed, 0 .. 2^64-1 (default 0)
  --sink N            pin the first N positions in the KV cache (default 0)
  --logits-out FILE   raw little-endian f32, vocab floats per row, one row per step run: each prompt
                      position, then each generated token fed back (the last one is not run)
  --prefill MODE      the prompt through the engine's batched prefill (batched, the default) or one
                      step per id (steps); the same state and logits either way
  sampling            greedy (argmax, lowest id on ties) unless --temperature > 0
  --trace             the engine's job log (docs/engine.md, "Job log") on stderr after the run: per
                      kind of job, how many ran per step and per prefill, their wall time and each
                      thread's busy time, and the time the driver spends outside jobs
  --wasm FILE         engine.wasm (default build/engine.wasm)

Tool calls (the same session and flags as needle-run; the same request and seed give the same
calls, reply ids and confidence):
  --tools FILE        the tools: a JSON array of {name, description, parameters}
  --system TEXT       the system turn (default: none)
  --history FILE      earlier turns, a JSON array of {"role": "user"|"assistant"|"tool", "content": ...}
                      (docs/toolcall.md, "The request"); --prompt may then be left out
  --max-tokens N      reply tokens at most, sampled and forced (default 256)
  --no-constrain      plain sampling: no mask, no forced fragments (the reply is still read)
  --no-heads          do not rank tools or give confidence with the probe heads
  --no-call-bias B    added to the log-odds of answering [] where the call list opens (docs/toolcall.md,
                      "The no-call bias"; default 0; the session refuses one outside -100 .. 100)
  --no-call-doubt W   the weight of the drawn call's doubt in that decision: calls withdrawn when
                      margin + bias + W x doubt - V x named > 0 (the same section; default 0, 0 .. 100)
  --no-call-named V   the credit in that decision of calls whose tools the request names (a name word
                      in common; the same section; default 0, 0 .. 100)
  --steer-named       the first call's name is the one offered tool the request names, when only one
                      is named (the same section, "The named steer")
  --span-strings      free string values are spans of the request (docs/toolcall.md, "Span strings")
  --stream            also write the reply's text to stderr as it is generated
  --batch FILE        one request JSON per line (docs/toolcall.md, "The request"; "-" reads stdin),
                      one envelope per line on stdout; the archive is loaded once, and a request
                      whose prompt starts with the last one's tools prefix (BOS, system turn, tools)
                      restores it from the engine's snapshot instead of running it again
                      (reused_prompt_tokens). A refused line prints its error envelope and the run
                      goes on.
  --toolcall FILE     toolcall.mjs, with toolcall.wasm beside it (default build/toolcall.mjs)
Exit status: 0 done (with --tools: the envelope's "success" says whether the reply is a valid call),
1 error (bad archive, bad token, malformed tools JSON, an unsupported schema keyword, a prompt that
does not fit the context; with --batch: some line was refused or failed), 2 usage error.`;

const TOOLCALL_FLAGS = ['no-constrain', 'no-heads', 'span-strings', 'steer-named', 'stream'];
const FLAGS = [...TOOLCALL_FLAGS, 'trace'];
const GENERATE_OPTIONS = ['ids', 'generate', 'sink', 'logits-out', 'prefill', 'trace'];
const TOOLCALL_OPTIONS = ['tools', 'system', 'history', 'max-tokens', 'no-call-bias', 'no-call-doubt', 'no-call-named', 'batch', 'toolcall', ...TOOLCALL_FLAGS];

function parseArgs(argv) {
  const opts = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--help' || a === '-h') { console.log(usage); process.exit(0); }
    if (a.startsWith('--') && FLAGS.includes(a.slice(2))) { opts[a.slice(2)] = true; continue; }
    if (!a.startsWith('--') || i + 1 >= argv.length) throw new UsageError(`unexpected argument ${a}`);
    opts[a.slice(2)] = argv[++i];
  }
  const known = ['archive', 'prompt', 'ids', 'generate', 'threads', 'seed', 'sink', 'logits-out', 'prefill', 'wasm',
    ...samplingFlags.map((f) => f.flag), ...FLAGS, ...TOOLCALL_OPTIONS];
  for (const k of Object.keys(opts)) if (!known.includes(k)) throw new UsageError(`unknown option --${k}`);
  if (!opts.archive) throw new UsageError('--archive is required');
  if (opts.tools !== undefined || opts.batch !== undefined) {
    if ((opts.tools === undefined) === (opts.batch === undefined)) throw new UsageError('give --tools FILE (one request) or --batch FILE');
    for (const k of GENERATE_OPTIONS) if (opts[k] !== undefined) throw new UsageError(`--${k} does not go with --tools or --batch`);
    if (opts.batch !== undefined) {
      for (const k of Object.keys(opts))
        if (!['archive', 'batch', 'threads', 'wasm', 'toolcall'].includes(k)) throw new UsageError(`--${k} does not go with --batch (each line is a whole request)`);
    } else if (opts.prompt === undefined && opts.history === undefined) {
      throw new UsageError('the request is missing: give --prompt REQUEST (or --history FILE)');
    }
    return opts;
  }
  for (const k of TOOLCALL_OPTIONS) if (opts[k] !== undefined) throw new UsageError(`--${k} needs --tools`);
  if ((opts.prompt === undefined) === (opts.ids === undefined)) throw new UsageError('give exactly one of --prompt and --ids');
  if (opts.prefill !== undefined && !['batched', 'steps'].includes(opts.prefill))
    throw new UsageError(`--prefill: '${opts.prefill}' is not batched or steps`);
  return opts;
}

class UsageError extends Error {}

function uint(text, what) {
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text)) throw new UsageError(`${what}: '${text}' is not a non-negative integer`);
  return Number(text);
}
function num(text, what) {
  if (text === undefined) return undefined;
  const v = Number(text);
  if (!Number.isFinite(v)) throw new UsageError(`${what}: '${text}' is not a number`);
  return v;
}
// The sampling flags: each one's key in a tool-call request (docs/toolcall.md, "The request"), its key
// in the engine's sampler settings (--generate), how it is read, and its default.
const samplingFlags = [
  { flag: 'temperature', request: 'temperature', sampler: 'temperature', read: num, otherwise: 0 },
  { flag: 'top-k', request: 'top_k', sampler: 'topK', read: uint, otherwise: 0 },
  { flag: 'top-p', request: 'top_p', sampler: 'topP', read: num, otherwise: 1 },
  { flag: 'min-p', request: 'min_p', sampler: 'minP', read: num, otherwise: 0 },
  { flag: 'repeat-penalty', request: 'repeat_penalty', sampler: 'repetitionPenalty', read: num, otherwise: 1 },
  { flag: 'repeat-window', request: 'repeat_window', sampler: 'repetitionWindow', read: uint, otherwise: 0 },
];
// The sampling flags' values (their defaults where not given), keyed for the 'request' or the 'sampler'.
function samplingOptions(opts, keys) {
  return Object.fromEntries(samplingFlags.map((f) => [f[keys], f.read(opts[f.flag], `--${f.flag}`) ?? f.otherwise]));
}
// The seed as a string of digits, 0 .. 2^64 - 1.
function seedText(text) {
  if (text === undefined) return '0';
  if (!/^\d+$/.test(text)) throw new UsageError(`--seed: '${text}' is not a non-negative integer`);
  if (BigInt(text) >= 2n ** 64n) throw new UsageError(`--seed: ${text} is larger than 2^64 - 1`);
  return text;
}

// A file's text; an error names the file.
function readText(file) {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new Error(`${file}: cannot read (${e.code ?? e.message})`);
  }
}

// The request of --tools and the flags (docs/toolcall.md, "The request"). The tools go in as their
// text, so the session reads them (messages with line and column); the history file is read here.
async function toolcallRequest(engine, opts) {
  const toolsText = readText(opts.tools);
  const problem = await engine.checkTools(toolsText);
  if (problem) throw new Error(`${opts.tools}: ${problem}`);
  const request = { tools: toolsText };
  if (opts.prompt !== undefined) request.request = opts.prompt;
  if (opts.system !== undefined) request.system = opts.system;
  if (opts.history !== undefined) {
    try {
      request.history = JSON.parse(readText(opts.history));
    } catch (e) {
      throw new Error(`${opts.history}: history JSON: ${e.message}`);
    }
  }
  const maxTokens = uint(opts['max-tokens'], '--max-tokens');
  if (maxTokens !== undefined) {
    if (maxTokens < 1 || maxTokens > 2 ** 20) throw new UsageError('--max-tokens must be from 1 to 1048576');
    request.max_tokens = maxTokens;
  }
  if (opts['no-constrain']) request.constrain = false;
  if (opts['no-heads']) request.use_heads = false;
  if (opts['span-strings']) request.span_strings = true;
  if (opts['steer-named']) request.steer_named = true;
  const noCallBias = num(opts['no-call-bias'], '--no-call-bias');
  if (noCallBias !== undefined) request.no_call_bias = noCallBias;
  const noCallDoubt = num(opts['no-call-doubt'], '--no-call-doubt');
  if (noCallDoubt !== undefined) request.no_call_doubt = noCallDoubt;
  const noCallNamed = num(opts['no-call-named'], '--no-call-named');
  if (noCallNamed !== undefined) request.no_call_named = noCallNamed;
  Object.assign(request, samplingOptions(opts, 'request'), { seed: seedText(opts.seed) });
  return request;
}

// --tools: one request, its envelope on stdout. A refused request: the message, exit 1.
async function runToolcall(engine, opts) {
  const request = await toolcallRequest(engine, opts);
  const onText = opts.stream ? ({ text }) => process.stderr.write(text) : null;
  const envelope = await engine.complete(request, { onText, envelopeText: true });
  if (opts.stream) process.stderr.write('\n');
  console.log(envelope);
  return 0;
}

// --batch: each line a request, each envelope a line; a refused line prints its error envelope.
async function runBatch(engine, opts) {
  const text = opts.batch === '-' ? fs.readFileSync(0, 'utf8') : readText(opts.batch);
  let status = 0;
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (/^[ \t\r]*$/.test(lines[i])) continue;
    let envelope;
    try {
      envelope = await engine.complete(lines[i], { envelopeText: true });
    } catch (e) {
      if (!(e instanceof ToolcallError)) throw e;
      envelope = e.envelopeText;
      console.error(`needle-wasm: ${opts.batch} line ${i + 1}: ${e.message}`);
      status = 1;
    }
    process.stdout.write(`${envelope}\n`);
  }
  return status;
}

async function main() {
  let opts;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (e) {
    if (e instanceof UsageError) { console.error(`needle-wasm: ${e.message}\n${usage}`); return 2; }
    throw e;
  }
  const threads = uint(opts.threads, '--threads') ?? 1;
  const toolcallMode = opts.tools !== undefined || opts.batch !== undefined;
  const generate = uint(opts.generate, '--generate') ?? 0;
  const sink = uint(opts.sink, '--sink') ?? 0;
  if (opts.seed !== undefined && !/^\d+$/.test(opts.seed)) throw new UsageError(`--seed: '${opts.seed}' is not a non-negative integer`);
  const seed = opts.seed === undefined ? 0n : BigInt(opts.seed);
  const sampler = samplingOptions(opts, 'sampler');
  const size = fs.statSync(opts.archive).size;
  const engine = await createEngine({
    threads: Math.max(1, threads),
    wasm: opts.wasm ? fs.readFileSync(opts.wasm) : undefined,
    maxMemoryBytes: Math.min(2 ** 32 - 65536, Math.ceil(size * 1.3) + 256 * 2 ** 20),
    toolcall: opts.toolcall,
  });
  try {
    await engine.load(opts.archive);
    if (toolcallMode) return await (opts.batch !== undefined ? runBatch(engine, opts) : runToolcall(engine, opts));
    await engine.reset({ sink });
    let ids;
    if (opts.prompt !== undefined) {
      if (!engine.tokenizer) throw new Error(`${opts.archive}: the archive has no tokenizer; give the prompt with --ids`);
      ids = [engine.tokenizer.bos_id, ...(await engine.encode(opts.prompt))];
    } else {
      ids = opts.ids.split(/[\s,]+/).filter((s) => s !== '').map((s) => uint(s, '--ids'));
      if (ids.length === 0) throw new UsageError('--ids needs at least one token id');
    }
    if (opts.trace) await engine.jobLogStart();
    const r = await engine.generate(ids, { maxTokens: generate, sampler, seed: BigInt.asUintN(64, seed),
                                           wantRows: !!opts['logits-out'], prefill: opts.prefill ?? 'batched' });
    if (opts['logits-out']) {
      const out = fs.openSync(opts['logits-out'], 'w');
      for (const row of r.rows) fs.writeSync(out, new Uint8Array(row.buffer, row.byteOffset, row.byteLength));
      fs.closeSync(out);
    }
    if (opts.trace) {
      const records = await engine.jobLogStop();
      for (const span of ['prefill', 'step'])
        if (records.some((x) => x.kind === span)) console.error(formatJobLog(summarizeJobLog(records, span)));
    }
    const result = { prompt_ids: ids, generated_ids: r.generated };
    if (engine.tokenizer) result.text = await engine.decode(r.generated);
    Object.assign(result, {
      prefill_ms: +r.prefillMs.toFixed(3), prefill_tokens: r.prefillTokens,
      decode_ms: +r.decodeMs.toFixed(3), decode_tokens: r.decodeTokens,
      ms_per_token: r.decodeTokens ? +(r.decodeMs / r.decodeTokens).toFixed(4) : 0,
      threads: engine.threads, memory_bytes: await engine.call('memoryBytes'),
    });
    console.log(JSON.stringify(result));
    return 0;
  } finally {
    await engine.close();
  }
}

main().then((code) => { process.exitCode = code; }, (e) => {
  if (e instanceof UsageError) { console.error(`needle-wasm: ${e.message}\n${usage}`); process.exitCode = 2; return; }
  console.error(`needle-wasm: ${e.message}`);
  process.exitCode = 1;
});
