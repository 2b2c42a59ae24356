// The tokenizer in wasm against the C++ tokenizer (needle-tok): encode, encodeRaw and decode give the
// same ids and text on corpus lines, chat markers, Unicode, byte fallback, whitespace runs, a full
// tool-calling prompt, and strings that spell control or byte pieces literally.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { model, modelsDir, rng, runTool, tool, withEngine } from './helpers/engine.mjs';

const archive = model('tiny.cact');
const skip = !archive || !tool('needle-tok') ? 'needs build/models and needle-tok' : false;

function cppIds(command, text) {
  const r = runTool('needle-tok', ['--archive', archive, command], text);
  if (r.status !== 0) return { error: r.stderr.trim() };
  const line = r.stdout.trim();
  return { ids: line === '' ? [] : line.split(/\s+/).map(Number) };
}

const special = [
  '', ' ', '  ', 'a', 'hello world', '  leading and trailing  ', 'tabs\tand\nnewlines\r\n',
  '<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n',
  '<think>reason</think>\n<tool_call>[{"name":"get_weather","arguments":{"city":"Paris"}}]</tool_call><|im_end|>',
  '<tools>[{"name":"set_timer","description":"Set a timer","parameters":{"type":"object","properties":{"minutes":{"type":"integer"}},"required":["minutes"]}}]</tools>',
  '<tool_result>{"ok":true}</tool_result>', '<|im_start|><|im_end|><|im_start|>', '<|im_start', 'im_end|>',
  'literal <s> and </s> and <pad> and <unk>', 'bytes spelled <0x0A> <0xFF>', 'café naïve façade', '日本語のテキスト',
  'emoji 😀👍🏽 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢', 'Ünïcödé ünd ßpäße', '\u0000nul', 'mixed\u00a0nbsp', '▁already▁meta▁space',
  '1234567890 3.14159 -42 1e-9', 'a'.repeat(300), ' '.repeat(17) + 'x', 'x' + ' '.repeat(17),
];

test('encode and encodeRaw ids equal needle-tok on many strings', { skip }, async () => {
  const corpus = fs.readFileSync(path.join(modelsDir, 'corpus.txt'), 'utf8').split('\n').filter(Boolean);
  const next = rng(99);
  const lines = [];
  for (let i = 0; i < 120; i++) lines.push(corpus[Math.floor(next() * corpus.length)]);
  // random recombinations: markers inside text, odd spacing
  for (let i = 0; i < 40; i++) {
    const a = corpus[Math.floor(next() * corpus.length)];
    const b = corpus[Math.floor(next() * corpus.length)];
    lines.push(`${a.slice(0, 30)}<tool_call>${b.slice(0, 25)}  ${a.slice(30, 50)}</tool_call>`);
  }
  await withEngine({}, 600000, async (engine) => {  // (hundreds of needle-tok runs: slow on a loaded machine)
    await engine.load(archive);
    let checked = 0;
    for (const text of [...special, ...lines]) {
      for (const raw of [false, true]) {
        const ref = cppIds(raw ? 'encode-raw' : 'encode', text);
        assert.ok(ref.ids, `needle-tok refused ${JSON.stringify(text)}: ${ref.error}`);
        const got = await engine.encode(text, { raw });
        assert.deepEqual(got, ref.ids, `${raw ? 'encodeRaw' : 'encode'} ${JSON.stringify(text)}`);
        checked++;
      }
    }
    assert.ok(checked > 300);
  });
});

test('decode equals needle-tok decode, bytes joined before UTF-8', { skip }, async () => {
  await withEngine({}, 60000, async (engine) => {
    await engine.load(archive);
    const next = rng(5);
    const cases = [
      [2, 4, 100, 5, 1], [14 + 0xE6, 14 + 0x97, 14 + 0xA5], [14 + 0xE6, 14 + 0x97], [300, 301, 302, 1000, 8191],
    ];
    for (let i = 0; i < 30; i++) cases.push(Array.from({ length: 12 }, () => Math.floor(next() * 8192)));
    cases.push(await engine.encode('round trip: café 日本 😀 <|im_end|> tabs\t'));
    for (const ids of cases) {
      const r = runTool('needle-tok', ['--archive', archive, 'decode', ids.join(' ')]);
      assert.equal(r.status, 0, r.stderr);
      assert.equal(await engine.decode(ids), r.stdout, `decode ${ids.join(' ')}`);
    }
  });
});

test('invalid UTF-8 is refused with ERR_UTF8, as needle-tok refuses it', { skip }, async () => {
  await withEngine({}, 60000, async (engine) => {
    await engine.load(archive);
    for (const bytes of [[0xff], [0xc3], [0xe2, 0x96], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0x61, 0x80]]) {
      const buf = Uint8Array.from(bytes);
      const r = runTool('needle-tok', ['--archive', archive, 'encode'], Buffer.from(buf));
      assert.equal(r.status, 1, `needle-tok accepted ${bytes}`);
      await assert.rejects(engine.call('encode', { bytes: buf, raw: false }),
        (e) => e.code === engine.constant('ERR_UTF8'));
    }
  });
});

test('an archive without a tokenizer answers ERR_NO_TOKENIZER', async (t) => {
  const notok = model('tiny-notok.cact');
  if (!notok) { t.skip('needs build/models'); return; }
  await withEngine({}, 60000, async (engine) => {
    await engine.load(notok);
    assert.equal(engine.tokenizer, null);
    await assert.rejects(engine.encode('hi'), (e) => e.code === engine.constant('ERR_NO_TOKENIZER'));
  });
});

test('a 16,000-character text: the same ids as needle-tok (the BPE merges from a heap, n log n)', { skip }, async (t) => {
  const corpus = fs.readFileSync(path.join(modelsDir, 'corpus.txt'), 'utf8').split('\n').filter(Boolean);
  const next = rng(7);
  let text = '';
  while (text.length < 16000) {
    text += corpus[Math.floor(next() * corpus.length)];
    text += next() < 0.1 ? '<tool_call>' : next() < 0.2 ? '  ' : ' ';
  }
  text = text.slice(0, 16000);
  await withEngine({}, 120000, async (engine) => {
    await engine.load(archive);
    for (const raw of [false, true]) {
      const ref = cppIds(raw ? 'encode-raw' : 'encode', text);
      assert.ok(ref.ids, ref.error);
      const t0 = performance.now();
      const got = await engine.encode(text, { raw });
      const ms = performance.now() - t0;
      assert.deepEqual(got, ref.ids, raw ? 'encodeRaw' : 'encode');
      t.diagnostic(`${raw ? 'encodeRaw' : 'encode'} of 16,000 characters: ${ref.ids.length} ids in ${ms.toFixed(1)} ms`);
    }
  });
});
