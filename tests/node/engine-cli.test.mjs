// tools/needle-wasm.mjs against needle-ref: the same prompt ids, greedy ids and text, and
// --logits-out files equal byte for byte to the reference's A8 mode (with --sink too); usage and
// archive errors give exit codes 2 and 1.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { ensureWasm, model, root, runTool, tempPath, tool, wasmPath } from './helpers/engine.mjs';

const archive = model('tiny.cact');
const skip = !archive || !tool('needle-ref') ? 'needs build/models and needle-ref' : false;
const cli = path.join(root, 'tools', 'needle-wasm.mjs');

function wasmCli(args) {
  ensureWasm();
  const r = spawnSync(process.execPath, [cli, ...args, '--wasm', wasmPath], { encoding: 'utf8', timeout: 120000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('needle-wasm matches needle-ref: ids, text and every logits row', { skip }, () => {
  for (const [threads, sink] of [[1, 0], [2, 3]]) {
    const mine = tempPath(`cli-${threads}.f32`);
    const ref = tempPath(`ref-${threads}.f32`);
    const prompt = 'The weather in Paris <tool_call>';
    const a = wasmCli(['--archive', archive, '--prompt', prompt, '--generate', '12', '--threads', String(threads),
      '--sink', String(sink), '--logits-out', mine]);
    assert.equal(a.status, 0, a.stderr);
    const b = runTool('needle-ref', ['--archive', archive, '--prompt', prompt, '--generate', '12', '--act', 'a8',
      '--sink', String(sink), '--logits-out', ref]);
    assert.equal(b.status, 0, b.stderr);
    const ja = JSON.parse(a.stdout);
    const jb = JSON.parse(b.stdout);
    assert.deepEqual(ja.prompt_ids, jb.prompt_ids);
    assert.deepEqual(ja.generated_ids, jb.generated_ids);
    assert.equal(ja.text, jb.text);
    assert.equal(ja.decode_tokens, jb.decode_tokens);
    assert.equal(ja.threads, threads);
    for (const k of ['prefill_ms', 'decode_ms', 'ms_per_token', 'memory_bytes']) assert.equal(typeof ja[k], 'number');
    assert.ok(fs.readFileSync(mine).equals(fs.readFileSync(ref)), `--logits-out differs (threads ${threads}, sink ${sink})`);
  }
});

test('needle-wasm with --ids, sampling options and a seed is repeatable', { skip }, () => {
  const args = ['--archive', archive, '--ids', '2 4 100 200', '--generate', '10', '--temperature', '0.8',
    '--top-k', '50', '--top-p', '0.9', '--seed', '77'];
  const a = JSON.parse(wasmCli(args).stdout);
  const b = JSON.parse(wasmCli([...args, '--threads', '2']).stdout);
  assert.deepEqual(a.generated_ids, b.generated_ids);
  assert.equal(a.generated_ids.length > 0, true);
});

test('needle-wasm exit codes: 2 for usage, 1 for a bad archive', { skip }, () => {
  assert.equal(wasmCli(['--archive', archive]).status, 2);
  assert.equal(wasmCli(['--archive', archive, '--ids', '2', '--bogus', '1']).status, 2);
  const bad = tempPath('bad.cact');
  fs.writeFileSync(bad, fs.readFileSync(archive).subarray(0, 1000));
  const r = wasmCli(['--archive', bad, '--ids', '2']);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /ERR_/);
  const past = wasmCli(['--archive', archive, '--ids', '2 999999']);
  assert.equal(past.status, 1);
  assert.match(past.stderr, /ERR_TOKEN/);
});
