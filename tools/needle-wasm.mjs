#!/usr/bin/env node
// needle-wasm: the wasm engine (site/engine/) from the command line, with needle-ref's interface.
//
// Loads an archive into the engine (driver + helper Workers on one shared memory), runs a prompt
// teacher-forced, then generates (greedy unless sampling options are given), and prints one JSON
// object: prompt_ids, generated_ids, text (with a tokenizer), prefill_ms, prefill_tokens, decode_ms,
// decode_tokens, ms_per_token, threads, memory_bytes.
import fs from 'node:fs';

import { createEngine } from '../site/engine/needle.mjs';

const usage = `usage: node tools/needle-wasm.mjs --archive FILE (--prompt TEXT | --ids "2 4 ...")
       [--generate N] [--threads T] [--seed S] [--sink N] [--logits-out FILE]
       [--temperature T] [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty R] [--repeat-window N]
       [--wasm FILE]

  --archive FILE      the .cact archive
  --prompt TEXT       ids = [bos] + encode(TEXT) with the archive's tokenizer
  --ids "2 4 ..."     the prompt as token ids (spaces or commas), BOS included
  --generate N        generate up to N tokens (default 0); stops after EOS or a full session
  --threads T         threads, the driver included (default 1)
  --seed S            the sampler's generator seed (default 0)
  --sink N            pin the first N positions in the KV cache (default 0)
  --logits-out FILE   raw little-endian f32, vocab floats per row, one row per step run: each prompt
                      position, then each generated token fed back (the last one is not run)
  sampling            greedy (argmax, lowest id on ties) unless --temperature > 0
  --wasm FILE         engine.wasm (default build/engine.wasm)
Exit status: 0 done, 1 error (bad archive, bad token, ...), 2 usage error.`;

function parseArgs(argv) {
  const opts = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--help' || a === '-h') { console.log(usage); process.exit(0); }
    if (!a.startsWith('--') || i + 1 >= argv.length) throw new UsageError(`unexpected argument ${a}`);
    opts[a.slice(2)] = argv[++i];
  }
  const known = ['archive', 'prompt', 'ids', 'generate', 'threads', 'seed', 'sink', 'logits-out', 'temperature',
    'top-k', 'top-p', 'min-p', 'repeat-penalty', 'repeat-window', 'wasm'];
  for (const k of Object.keys(opts)) if (!known.includes(k)) throw new UsageError(`unknown option --${k}`);
  if (!opts.archive) throw new UsageError('--archive is required');
  if ((opts.prompt === undefined) === (opts.ids === undefined)) throw new UsageError('give exactly one of --prompt and --ids');
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

async function main() {
  let opts;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (e) {
    if (e instanceof UsageError) { console.error(`needle-wasm: ${e.message}\n${usage}`); return 2; }
    throw e;
  }
  const threads = uint(opts.threads, '--threads') ?? 1;
  const generate = uint(opts.generate, '--generate') ?? 0;
  const sink = uint(opts.sink, '--sink') ?? 0;
  if (opts.seed !== undefined && !/^\d+$/.test(opts.seed)) throw new UsageError(`--seed: '${opts.seed}' is not a non-negative integer`);
  const seed = opts.seed === undefined ? 0n : BigInt(opts.seed);
  const sampler = {
    temperature: num(opts.temperature, '--temperature') ?? 0,
    topK: uint(opts['top-k'], '--top-k') ?? 0,
    topP: num(opts['top-p'], '--top-p') ?? 1,
    minP: num(opts['min-p'], '--min-p') ?? 0,
    repetitionPenalty: num(opts['repeat-penalty'], '--repeat-penalty') ?? 1,
    repetitionWindow: uint(opts['repeat-window'], '--repeat-window') ?? 0,
  };
  const size = fs.statSync(opts.archive).size;
  const engine = await createEngine({
    threads: Math.max(1, threads),
    wasm: opts.wasm ? fs.readFileSync(opts.wasm) : undefined,
    maxMemoryBytes: Math.min(2 ** 32 - 65536, Math.ceil(size * 1.3) + 256 * 2 ** 20),
  });
  try {
    await engine.load(opts.archive);
    await engine.reset({ sink });
    let ids;
    if (opts.prompt !== undefined) {
      if (!engine.tokenizer) throw new Error(`${opts.archive}: the archive has no tokenizer; give the prompt with --ids`);
      ids = [engine.tokenizer.bos_id, ...(await engine.encode(opts.prompt))];
    } else {
      ids = opts.ids.split(/[\s,]+/).filter((s) => s !== '').map((s) => uint(s, '--ids'));
      if (ids.length === 0) throw new UsageError('--ids needs at least one token id');
    }
    const r = await engine.generate(ids, { maxTokens: generate, sampler, seed: BigInt.asUintN(64, seed),
                                           wantRows: !!opts['logits-out'] });
    if (opts['logits-out']) {
      const out = fs.openSync(opts['logits-out'], 'w');
      for (const row of r.rows) fs.writeSync(out, new Uint8Array(row.buffer, row.byteOffset, row.byteLength));
      fs.closeSync(out);
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
