// Reusing the tools prefix in the engine (docs/toolcall.md, "Reusing the tools prefix"): the driver's
// complete() keeps the last request's BOS + system turn + tools in the engine's snapshot slot; a
// request that starts with the same ids restores it and gives, bit for bit, what a fresh engine gives
// (reply ids, calls, text, confidence) at 1, 2 and 3 threads; tools, system turn, pooling and archive
// changes prefill whole; later conversation turns and a >5-tool ranking keep it; needle-wasm --batch
// and needle-run --batch reuse the same lines and agree.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import { ensureWasm, model, root, tool, toolcallPath, wasmPath, withEngine } from './helpers/engine.mjs';

const micro = model('micro.cact');
const small = model('small.cact');
const needleRun = tool('needle-run');
const skip = !micro || !small ? 'needs build/models'
  : !fs.existsSync(toolcallPath) ? 'needs the tool-call module (scripts/build-toolcall-wasm.sh)' : false;

const TOOLS = [
  { name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1, maximum: 7 } }, required: ['city'] } },
  { name: 'note', description: 'Write a note', parameters: { type: 'object', properties: { text: { type: 'string', minLength: 1 } }, required: ['text'] } },
];
const OTHER = [TOOLS[0]];
// Everything the session decides but the reuse itself.
const decided = (e) => ({ success: e.success, error: e.error, calls: e.function_calls, ids: e.reply_ids, text: e.text,
  confidence: e.confidence, prompt: e.prompt_tokens, pinned: e.pinned_tokens, forced: e.forced_tokens, offered: e.tools_offered });

const REQUESTS = [
  { tools: TOOLS, request: 'Weather in Oslo for 3 days?', temperature: 1, seed: '3', max_tokens: 96 },
  { tools: TOOLS, request: 'Note: buy milk', temperature: 0.8, top_k: 40, seed: '18446744073709551615', max_tokens: 96 },
  { tools: TOOLS, request: 'hello', temperature: 1, seed: '1', max_tokens: 24, constrain: false },
  { tools: TOOLS, request: 'Weather in Oslo for 3 days?', temperature: 1, seed: '3', max_tokens: 96, repeat_penalty: 1.3 },
];

for (const threads of [1, 2, 3]) {
  test(`a restored prefix gives what a fresh engine gives, bit for bit (${threads} thread${threads > 1 ? 's' : ''})`,
    { skip, timeout: 300000 }, async () => {
      await withEngine({ threads }, 280000, async (engine) => {
        // Fresh: each request right after a load (which forgets the snapshot and the tool-call handle).
        const fresh = [];
        for (const r of REQUESTS) {
          await engine.load(micro);
          const e = await engine.complete(r);
          assert.equal(e.reused_prompt_tokens, 0);
          fresh.push(e);
        }
        // Reused: all of them on one load; the first saves the prefix, the others restore it.
        await engine.load(micro);
        for (let i = 0; i < REQUESTS.length; i++) {
          const e = await engine.complete(REQUESTS[i]);
          assert.deepEqual(decided(e), decided(fresh[i]), `request ${i + 1}`);
          assert.equal(e.reused_prompt_tokens, i === 0 ? 0 : e.pinned_tokens, `request ${i + 1}`);
          assert.ok(e.pinned_tokens > 64, 'the tools alone pass the window: the restored rows are sinks');
        }
        assert.ok(fresh.some((e) => e.confidence !== null && e.function_calls.length > 0));
      });
    });
}

test('tools, system turn, pooling and archive changes prefill whole; the next same prefix restores', { skip, timeout: 300000 }, async () => {
  await withEngine({ threads: 1 }, 280000, async (engine) => {
    await engine.load(micro);
    const steps = [
      [{ tools: TOOLS, request: 'weather?', seed: 1, temperature: 1 }, false],
      [{ tools: TOOLS, request: 'a note', seed: 2, temperature: 1 }, true],
      [{ tools: OTHER, request: 'weather?', seed: 1, temperature: 1 }, false],          // tools
      [{ tools: OTHER, request: 'weather now?', seed: 1, temperature: 1 }, true],
      [{ tools: OTHER, system: 'today is Monday', request: 'weather?' }, false],          // system turn
      [{ tools: OTHER, system: 'today is Monday', request: 'and now?' }, true],
      [{ tools: OTHER, system: 'today is Monday', request: 'and now?', use_heads: false }, false],  // pooling
      [{ tools: OTHER, system: 'today is Monday', request: 'then?', use_heads: false }, true],
    ];
    const seen = [];
    for (const [r, reused] of steps) {
      const e = await engine.complete(r);
      assert.equal(e.success, true, e.error);
      assert.equal(e.reused_prompt_tokens, reused ? e.pinned_tokens : 0, JSON.stringify(r));
      seen.push(e);
    }
    // Another archive, then micro again: a new tool-call handle and a forgotten snapshot.
    await engine.load(small);
    assert.equal((await engine.complete(steps[0][0])).reused_prompt_tokens, 0);
    await engine.load(micro);
    const again = await engine.complete(steps[7][0]);
    assert.equal(again.reused_prompt_tokens, 0);
    assert.deepEqual(decided(again), decided(seen[7]));
    // A snapshot saved by someone else (the driver's own snapshotSave), even of the prefix's length, is
    // not taken for the prefix: the backend compares the restored history with the prefix's ids.
    await engine.reset({ sink: 0 });
    await engine.prefill(Array.from({ length: seen[7].pinned_tokens }, (_, i) => (i === 0 ? 2 : 100 + (i % 50))));
    assert.equal(await engine.snapshotSave(), seen[7].pinned_tokens);
    const after = await engine.complete(steps[7][0]);
    assert.equal(after.reused_prompt_tokens, 0);
    assert.deepEqual(decided(after), decided(seen[7]));
  });
});

test('later turns of a conversation and a ranking of more than 5 tools keep the prefix', { skip, timeout: 300000 }, async () => {
  await withEngine({ threads: 2 }, 280000, async (engine) => {
    await engine.load(micro);
    const first = await engine.complete({ tools: TOOLS, request: 'Weather in Oslo?', seed: 4, temperature: 1 });
    const history = [
      { role: 'user', content: 'Weather in Oslo?' },
      { role: 'assistant', content: ' <tool_call>[{"name":"get_weather","arguments":{"city":"Oslo"}}]</tool_call><|im_end|>' },
      { role: 'tool', content: [{ name: 'get_weather', result: { temperature_c: 4 } }] },
    ];
    const later = { tools: TOOLS, history, seed: 5, temperature: 1 };
    const reused = await engine.complete(later);
    assert.equal(reused.reused_prompt_tokens, first.pinned_tokens);
    await engine.load(micro);
    assert.deepEqual(decided(reused), decided(await engine.complete(later)));

    const many = ['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((n) => ({ name: `tool_${n}`, description: `does ${n}`,
      parameters: { type: 'object', properties: { x: { type: 'string' } } } }));
    const ranked = { tools: many, request: 'do c please', seed: 6, temperature: 1 };
    await engine.load(micro);
    const a = await engine.complete(ranked);
    const b = await engine.complete({ ...ranked, seed: 7 });
    assert.equal(a.tools_offered.length, 5);
    assert.equal(a.reused_prompt_tokens, 0);
    assert.equal(b.reused_prompt_tokens, b.pinned_tokens);  // the ranking sessions left the snapshot
    await engine.load(micro);
    assert.deepEqual(decided(b), decided(await engine.complete({ ...ranked, seed: 7 })));
  });
});

test('needle-wasm --batch and needle-run --batch reuse the prefix on the same lines and agree', { skip, timeout: 300000 }, () => {
  ensureWasm();
  const lines = [...REQUESTS, { tools: OTHER, request: 'x', seed: 2, temperature: 1, max_tokens: 48 },
    { tools: OTHER, request: 'y', seed: 2, temperature: 1, max_tokens: 48 }, REQUESTS[0]];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'needle-prefix-'));
  const batch = path.join(dir, 'batch.jsonl');
  fs.writeFileSync(batch, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  const native = spawnSync(needleRun, ['--archive', micro, '--batch', batch], { encoding: 'utf8', maxBuffer: 1 << 26 });
  const wasm = spawnSync(process.execPath, [path.join(root, 'tools', 'needle-wasm.mjs'), '--archive', micro, '--batch', batch,
    '--wasm', wasmPath, '--toolcall', toolcallPath], { encoding: 'utf8', maxBuffer: 1 << 26 });
  fs.rmSync(dir, { recursive: true, force: true });
  assert.equal(native.status, 0, native.stderr);
  assert.equal(wasm.status, 0, wasm.stderr);
  const a = native.stdout.trim().split('\n').map((l) => JSON.parse(l));
  const b = wasm.stdout.trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(a.map((e) => e.reused_prompt_tokens > 0), [false, true, true, true, false, true, false]);
  for (let i = 0; i < lines.length; i++) {
    assert.deepEqual(decided(b[i]), decided(a[i]), `line ${i + 1}`);
    assert.equal(b[i].reused_prompt_tokens, a[i].reused_prompt_tokens, `line ${i + 1}`);
  }
});
