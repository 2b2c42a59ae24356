// bench-engine.mjs: the engine's own speed figures, measured the same way in Node (bench.mjs imports
// it) and in a Chromium page (bench.mjs --browser serves it): for each thread count, one engine,
// all of them alive at once and measured in turn, round after round (interleaved, so that a busy
// moment of the machine hits every configuration alike); the best figure of each kind is kept.
//
//   decode tok/s    a 64-id prompt, then 64 greedy tokens (each fed back): decodeTokens / decodeMs
//   prefill tok/s   a 256-id prompt and its last logits, batched (the engine's prefill) and one step
//                   per id (the same positions, no logits before the last)
//   job log         after the rounds, one more decode of each engine of 2 threads or more with the
//                   engine's job log on (docs/engine.md, "Job log"): where a step's time goes, per job
//                   and per thread, written through onLine (not a figure: the log's clock reads cost)
//
// measureEngine(createEngine, {wasm, archive, archiveBytes, threads, rounds, onLine}) -> [{threads,
// decode, prefillBatched, prefillSteps, memoryBytes, jobLog}]; `archive` is what engine.load takes (a path in
// Node, bytes in the page), `wasm` what createEngine takes; each engine's memory may grow to
// archiveBytes x 1.3 + 256 MiB (the page's rule).

import { formatJobLog, summarizeJobLog } from '../site/engine/joblog.mjs';

// n ids spread over the vocabulary (below 4: the special tokens), as bench.mjs's prompts.
export function promptIds(n, vocab, offset = 0) {
  const ids = [];
  for (let i = 0; i < n; i++) ids.push(4 + (((i + offset) * 7919 + 13) % (vocab - 4)));
  return ids;
}

export async function measureEngine(createEngine, { wasm, archive, archiveBytes, threads, rounds = 3, onLine = () => {},
  decodePrompt = 64, decodeTokens = 64, prefillPrompt = 256 } = {}) {
  const engines = [];
  try {
    for (const t of threads) {
      const maxMemoryBytes = Math.ceil((archiveBytes * 1.3 + (256 << 20)) / 65536) * 65536;
      const engine = await createEngine({ threads: t, wasm, maxMemoryBytes });
      engines.push(engine);
      await engine.load(archive);
    }
    const vocab = engines[0].geometry.vocab;
    const short = promptIds(decodePrompt, vocab);
    const long = promptIds(prefillPrompt, vocab, 1000);
    const best = threads.map((t) => ({ threads: t, decode: 0, prefillBatched: 0, prefillSteps: 0, memoryBytes: 0 }));
    for (let round = 1; round <= rounds; round++) {
      for (let k = 0; k < engines.length; k++) {
        const engine = engines[k];
        const b = best[k];
        await engine.reset();
        const d = await engine.generate(short, { maxTokens: decodeTokens, stopIds: [] });
        const decode = (d.decodeTokens * 1000) / d.decodeMs;
        await engine.reset();
        const pb = await engine.generate(long, { maxTokens: 0 });
        const batched = (pb.prefillTokens * 1000) / pb.prefillMs;
        await engine.reset();
        const ps = await engine.generate(long, { maxTokens: 0, prefill: 'steps' });
        const steps = (ps.prefillTokens * 1000) / ps.prefillMs;
        b.decode = Math.max(b.decode, decode);
        b.prefillBatched = Math.max(b.prefillBatched, batched);
        b.prefillSteps = Math.max(b.prefillSteps, steps);
        b.memoryBytes = engine.memory.buffer.byteLength;
        onLine(`  round ${round}, ${b.threads} thread${b.threads === 1 ? '' : 's'}: decode ${decode.toFixed(1)} tok/s, ` +
          `prefill ${batched.toFixed(1)} tok/s batched, ${steps.toFixed(1)} tok/s one by one`);
      }
    }
    for (let k = 0; k < engines.length; k++) {
      if (threads[k] < 2) continue;
      await engines[k].reset();
      await engines[k].jobLogStart();
      await engines[k].generate(short, { maxTokens: decodeTokens, stopIds: [] });
      best[k].jobLog = summarizeJobLog(await engines[k].jobLogStop(), 'step');
      for (const line of formatJobLog(best[k].jobLog).split('\n')) onLine(`  ${line}`);
    }
    return best;
  } finally {
    for (const e of engines) await e.close();
  }
}

// The table rows of the results: threads, decode tok/s, decode vs 1 thread, prefill batched and one
// by one, batched vs one by one, batched vs decode at that thread count, memory.
export function engineRows(results) {
  const one = results.find((r) => r.threads === 1);
  const x = (a, b) => (a > 0 && b > 0 ? `${(a / b).toFixed(2)}x` : '-');
  return results.map((r) => [r.threads, r.decode.toFixed(1), one ? x(r.decode, one.decode) : '-',
    r.prefillBatched.toFixed(1), r.prefillSteps.toFixed(1), x(r.prefillBatched, r.prefillSteps),
    x(r.prefillBatched, r.decode), `${(r.memoryBytes / (1 << 20)).toFixed(1)} MiB`]);
}

export const ENGINE_HEADER = ['threads', 'decode tok/s', 'decode vs 1 thread', 'prefill tok/s batched',
  'prefill tok/s one by one', 'batched vs one by one', 'batched vs decode', 'wasm memory'];
