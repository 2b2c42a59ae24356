// The page's parts that need no browser (site/ui/*.mjs, site/toolsets.json, site/models.json):
// SHA-256 against node:crypto, the checking stream (progress, size and sha256 errors before the end,
// Cancel), settings read back from storage, the conversation sent as history, the Enter rule, the
// capability checks, and the ready tool sets (valid for the call grammar, examples that are valid
// calls of them). docs/page.md.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import Ajv from 'ajv';

import { loadToolcall } from '../../site/engine/needle.mjs';
import { ArchiveError, checkedStream, progressOf, progressText } from '../../site/ui/download.mjs';
import { Conversation, keptReply, readToolResult, sendsOnKey, statsText } from '../../site/ui/session.mjs';
import { defaultThreads, defaults, loadSettings, modelFields, samplingFields, saveSettings, SETTINGS_KEY } from '../../site/ui/settings.mjs';
import { Sha256 } from '../../site/ui/sha256.mjs';
import { memoryShortfall, missingCapability } from '../../site/ui/support.mjs';
import { root, toolcallPath } from './helpers/engine.mjs';

const sha = (data) => crypto.createHash('sha256').update(data).digest('hex');

test('SHA-256 equals node:crypto for every length around the block and padding edges, fed in any chunks', () => {
  let seed = 7;
  const rand = () => { seed = (seed * 1103515245 + 12345) >>> 0; return seed; };
  const lengths = [0, 1, 3, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 1000, 4096, 100003];
  for (const n of lengths) {
    const data = crypto.randomBytes(n);
    const h = new Sha256();
    for (let at = 0; at < n;) {
      const take = Math.min(n - at, 1 + (rand() % 200));
      h.update(data.subarray(at, at + take));
      at += take;
    }
    assert.equal(h.hex(), sha(data), `length ${n}`);
  }
  assert.equal(new Sha256().update(new TextEncoder().encode('abc')).hex(),
    'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');  // FIPS 180-2, appendix B.1
  const done = new Sha256();
  done.hex();
  assert.throws(() => done.update(new Uint8Array(1)), /after digest/);
});

// A ReadableStream of `data` in chunks of `size`.
function chunked(data, size) {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= data.length) { controller.close(); return; }
      controller.enqueue(data.subarray(at, at + size));
      at += size;
    },
  });
}

async function drain(stream) {
  const parts = [];
  for await (const c of stream) parts.push(c);
  return Buffer.concat(parts);
}

test('the checking stream passes the bytes unchanged with progress, and errors before its end on a wrong size or sha256, or Cancel', async () => {
  const data = crypto.randomBytes(10000);
  let clock = 0;
  const seen = [];
  const ok = checkedStream(chunked(data, 1000), { bytes: data.length, sha256: sha(data), now: () => (clock += 100),
    onProgress: (p) => seen.push(p) });
  assert.deepEqual(await drain(ok.stream), data);
  assert.deepEqual(await ok.result, { bytes: data.length, sha256: sha(data) });
  assert.equal(seen.length, 10);
  assert.deepEqual(seen.map((p) => p.received), [1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000]);
  assert.equal(seen.at(-1).fraction, 1);
  // 1000 bytes per 100 ms after the first chunk's 200 ms: 5 kB/s at the first chunk
  assert.deepEqual(progressOf(1000, 10000, 200), { received: 1000, total: 10000, fraction: 0.1, bytesPerSecond: 5000, secondsLeft: 1.8 });
  assert.equal(progressText(progressOf(1.5e6, 3e6, 1000)), '1.5 MB of 3.0 MB, 1.5 MB/s, 1.0 s left');
  assert.equal(progressText(progressOf(2e5, null, 0)), '200 kB');

  const cases = [
    [{ bytes: data.length + 1 }, 'size', /ended after 10000 of the 10001 bytes/],
    [{ bytes: data.length - 1 }, 'size', /longer than the 9999 bytes/],
    [{ bytes: data.length, sha256: sha(Buffer.from('other')) }, 'sha256', /sha256 is [0-9a-f]{64}, not/],
  ];
  for (const [expected, kind, message] of cases) {
    const r = checkedStream(chunked(data, 1000), expected);
    // the consumer sees the error before the stream ends (a Cache API put never commits it)
    await assert.rejects(drain(r.stream), (e) => e instanceof ArchiveError && e.kind === kind && message.test(e.message));
    await assert.rejects(r.result, (e) => e.kind === kind);
  }

  const controller = new AbortController();
  let chunks = 0;
  const cancelled = checkedStream(chunked(data, 100), { bytes: data.length, signal: controller.signal,
    onProgress: () => { if (++chunks === 3) controller.abort(); } });
  await assert.rejects(drain(cancelled.stream), (e) => e.kind === 'cancelled');
  await assert.rejects(cancelled.result, (e) => e.kind === 'cancelled');
  assert.equal(chunks, 3);
});

// A localStorage stand-in.
function storage(initial = {}) {
  const map = new Map(Object.entries(initial));
  return { getItem: (k) => (map.has(k) ? map.get(k) : null), setItem: (k, v) => map.set(k, String(v)), map };
}

test('settings: defaults (threads three quarters of the cores, 1 to 16), every field checked when read back', () => {
  assert.deepEqual([1, 2, 3, 4, 8, 12, 22, 64, 0, undefined, NaN].map(defaultThreads), [1, 1, 2, 3, 6, 9, 16, 16, 1, 1, 1]);
  assert.deepEqual(defaults(8), { threads: 6, temperature: 0, topP: 1, maxTokens: 256, seed: '0', constrained: true });
  assert.deepEqual(loadSettings(storage(), 8), defaults(8));
  assert.deepEqual(loadSettings(storage({ [SETTINGS_KEY]: '{not json' }), 8), defaults(8));
  const kept = { threads: 3, temperature: 0.7, topP: 0.9, maxTokens: 64, seed: '18446744073709551615', constrained: false };
  const s = storage();
  assert.equal(saveSettings(s, kept), true);
  assert.deepEqual(loadSettings(s, 8), kept);
  // out of range: clamped; unusable: the default
  const odd = { threads: 99, temperature: -1, topP: 'x', maxTokens: 2.5, seed: '18446744073709551616', constrained: 'yes' };
  assert.deepEqual(loadSettings(storage({ [SETTINGS_KEY]: JSON.stringify(odd) }), 4),
    { threads: 16, temperature: 0, topP: 1, maxTokens: 256, seed: '0', constrained: true });
  assert.deepEqual(samplingFields(kept), { max_tokens: 64, temperature: 0.7, top_p: 0.9, seed: '18446744073709551615', constrain: false });
  assert.equal(saveSettings({ setItem: () => { throw new Error('quota'); } }, kept), false);
});

test('the open model\'s fields: a listed model\'s no-call bias, doubt, named credit and steer and span strings, nothing for an archive of one\'s own', () => {
  assert.deepEqual(modelFields({ name: 'needlework-tools', no_call_bias: 1.5 }), { no_call_bias: 1.5 });
  assert.deepEqual(modelFields({ name: 'needlework-tools', no_call_bias: -0.5 }), { no_call_bias: -0.5 });
  assert.deepEqual(modelFields({ name: 'needlework-tools', no_call_bias: 1.5, span_strings: true }), { no_call_bias: 1.5, span_strings: true });
  assert.deepEqual(modelFields({ name: 'needlework-tools', span_strings: true }), { span_strings: true });
  assert.deepEqual(modelFields({ name: 'needlework-tools', no_call_bias: 1, no_call_doubt: 1.5 }), { no_call_bias: 1, no_call_doubt: 1.5 });
  assert.deepEqual(modelFields({ name: 'needlework-tools', no_call_doubt: 0 }), {});
  assert.deepEqual(modelFields({ name: 'needlework-tools', no_call_doubt: '1' }), {});
  assert.deepEqual(modelFields({ name: 'needlework-tools', no_call_bias: 1, no_call_doubt: 4, no_call_named: 8 }),
    { no_call_bias: 1, no_call_doubt: 4, no_call_named: 8 });
  assert.deepEqual(modelFields({ name: 'needlework-tools', no_call_named: 0 }), {});
  assert.deepEqual(modelFields({ name: 'needlework-tools', no_call_named: '8' }), {});
  assert.deepEqual(modelFields({ name: 'needlework-tools', steer_named: true, span_strings: true }), { steer_named: true, span_strings: true });
  for (const steer of [false, 'true', 1]) assert.deepEqual(modelFields({ name: 'needlework-tools', steer_named: steer }), {});
  for (const model of [{ name: 'x.cact', bytes: 10 }, { no_call_bias: 0 }, { no_call_bias: '1' }, { no_call_bias: NaN },
    { span_strings: false }, { span_strings: 'true' }, { span_strings: 1 }, null, undefined])
    assert.deepEqual(modelFields(model), {}, JSON.stringify(model));
});

test('the conversation: history sent with each request, tool results, continuing without a new message', () => {
  const c = new Conversation();
  const fields = { tools: '[]', max_tokens: 8 };
  assert.deepEqual(c.request('first', fields), { tools: '[]', max_tokens: 8, history: [], request: 'first' });
  c.keep('first', ' <tool_call>[{"name":"t","arguments":{}}]</tool_call><|im_end|>');
  assert.equal(c.awaitsResult, true);
  c.addToolResults([{ name: 't', result: { ok: true } }]);
  assert.equal(c.awaitsResult, false);
  const r = c.request(null, fields);
  assert.equal('request' in r, false);
  assert.deepEqual(r.history, [
    { role: 'user', content: 'first' },
    { role: 'assistant', content: ' <tool_call>[{"name":"t","arguments":{}}]</tool_call><|im_end|>' },
    { role: 'tool', content: [{ name: 't', result: { ok: true } }] }]);
  r.history[0].content = 'changed';
  assert.equal(c.turns[0].content, 'first', 'a request holds a copy');
  c.keep(null, 'Done.');
  assert.equal(c.turns.length, 4);
  // a reply is kept as generated, except one whose calls the doubt withdrew: the empty list it counts as
  const written = ' <tool_call>[{"name":"t","arguments":{}}]</tool_call><|im_end|>';
  assert.equal(keptReply({ text: written, function_calls: [{ name: 't', arguments: {} }], withdrawn_calls: [] }), written);
  assert.equal(keptReply({ text: written, function_calls: [], withdrawn_calls: [{ name: 't', arguments: {} }] }),
    '<tool_call>[]</tool_call>');
  c.clear();
  assert.deepEqual(c.turns, []);

  assert.equal(readToolResult('  '), null);
  assert.deepEqual(readToolResult('{"minutes_left": 9}'), { value: { minutes_left: 9 }, asJson: true });
  assert.deepEqual(readToolResult(' timer started '), { value: 'timer started', asJson: false });

  const key = (over) => ({ key: 'Enter', shiftKey: false, altKey: false, ctrlKey: false, metaKey: false, isComposing: false, keyCode: 13, ...over });
  assert.equal(sendsOnKey(key({})), true);
  assert.equal(sendsOnKey(key({ shiftKey: true })), false);
  assert.equal(sendsOnKey(key({ isComposing: true })), false);
  assert.equal(sendsOnKey(key({ keyCode: 229 })), false);
  assert.equal(sendsOnKey(key({ key: 'a', keyCode: 65 })), false);

  const envelope = { prompt_tokens: 120, prefill_tps: 1500.4, decode_tps: 80.6, generated_tokens: 20, forced_tokens: 12, peak_memory_bytes: 48 * 2 ** 20 };
  assert.equal(statsText(envelope, { sendToFirstMs: 95.2, threads: 3 }),
    '120 prompt tokens (0 from a reused prefix) · first token 95 ms after Send · prefill 1500 tok/s · ' +
    'decode 81 tok/s (20 tokens, 12 forced) · 3 threads · memory 48 MiB');
  assert.match(statsText({ ...envelope, reused_prompt_tokens: 100 }, { sendToFirstMs: 1500, threads: 1 }),
    /^120 prompt tokens \(100 from a reused prefix\) · first token 1\.5 s after Send .* · 1 thread ·/);
  assert.doesNotMatch(statsText(envelope, { sendToFirstMs: null, threads: 1, stopped: true }), /tok\/s/);
});

test('capability checks name the first thing missing', () => {
  const wasm = { validate: () => true, Memory: WebAssembly.Memory };
  const ok = { WebAssembly: wasm, crossOriginIsolated: true, SharedArrayBuffer };
  assert.equal(missingCapability(ok), null);
  assert.equal(missingCapability({ ...ok, WebAssembly }), null,
    'this Node has SIMD and threads, so the real validate() passes both modules');
  assert.equal(missingCapability({ ...ok, WebAssembly: undefined }).id, 'wasm');
  assert.equal(missingCapability({ ...ok, crossOriginIsolated: false }).id, 'isolation');
  assert.match(missingCapability({ ...ok, crossOriginIsolated: false, location: { protocol: 'file:' } }).text, /opened as a file/);
  assert.match(missingCapability({ ...ok, crossOriginIsolated: false }, { isolationTried: true }).text, /service worker could not/);
  assert.match(missingCapability({ ...ok, crossOriginIsolated: false, isSecureContext: false, location: { protocol: 'http:' } }).text,
    /plain HTTP from another address.*only over HTTPS or from localhost/);
  assert.equal(missingCapability({ ...ok, SharedArrayBuffer: undefined }).id, 'sab');
  let calls = 0;
  assert.equal(missingCapability({ ...ok, WebAssembly: { validate: () => ++calls > 1 } }).id, 'simd');
  calls = 0;
  assert.equal(missingCapability({ ...ok, WebAssembly: { validate: () => ++calls === 1 } }).id, 'threads');
  assert.equal(memoryShortfall(64 << 20), null);
  const refused = { WebAssembly: { Memory: function Memory() { throw new RangeError('out of memory'); } } };
  assert.match(memoryShortfall(3 * 2 ** 30, refused).text, /could not give this tab 3072 MiB/);
});

const toolsets = JSON.parse(fs.readFileSync(path.join(root, 'site', 'toolsets.json'), 'utf8'));

test('the ready tool sets: valid for the call grammar, and each example\'s calls valid calls of its tools', { skip: !fs.existsSync(toolcallPath) && 'needs toolcall.mjs' }, async () => {
  assert.deepEqual(toolsets.map((t) => t.id), ['timers', 'messaging', 'navigation', 'weather', 'smart-home']);
  const checker = await loadToolcall(toolcallPath);
  const ajv = new Ajv({ strict: false });
  for (const set of toolsets) {
    assert.equal(checker.checkTools(JSON.stringify(set.tools)), '', set.id);
    assert.ok(set.tools.every((t) => t.description.split(' ').length <= 10), `${set.id}: short descriptions`);
    assert.ok(set.example.request && set.example.calls.length > 0, set.id);
    for (const call of set.example.calls) {
      const tool = set.tools.find((t) => t.name === call.name);
      assert.ok(tool, `${set.id}: the example calls ${call.name}, which the set lacks`);
      const validate = ajv.compile({ ...tool.parameters, additionalProperties: false });
      assert.ok(validate(call.arguments), `${set.id}: ${JSON.stringify(validate.errors)}`);
      assert.deepEqual(Object.keys(call.arguments), Object.keys(tool.parameters.properties).filter((k) => k in call.arguments),
        `${set.id}: arguments in the order of the properties (as the model writes them)`);
    }
  }
});
