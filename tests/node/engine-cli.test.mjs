// tools/needle-wasm.mjs against needle-ref: the same prompt ids, greedy ids and text, and
// --logits-out files equal byte for byte to the reference's A8 mode (with --sink too); the same ids
// with sampling options and a seed (host/sampler.cpp against the engine's sampler); usage and archive
// errors give exit codes 2 and 1; a prompt longer than max_seq_len is refused before any step.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { ensureWasm, model, root, runTool, tempPath, tool, wasmPath, withEngine } from './helpers/engine.mjs';

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

test('needle-wasm --prefill steps and batched (the default) sample the same ids; a bad mode is a usage error', { skip }, () => {
  const args = ['--archive', archive, '--ids', '2 4 100 200 300 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36',
    '--generate', '12', '--temperature', '0.7', '--seed', '5', '--threads', '2'];
  const steps = JSON.parse(wasmCli([...args, '--prefill', 'steps']).stdout);
  const batched = JSON.parse(wasmCli(args).stdout);
  assert.equal(steps.prompt_ids.length, 37);   // two chunks of the batched prefill
  assert.deepEqual(batched.generated_ids, steps.generated_ids);
  assert.equal(wasmCli([...args, '--prefill', 'fast']).status, 2);
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

test('needle-ref and needle-wasm sample the same ids for the same options and seed', { skip }, () => {
  const small = model('small.cact');
  const runs = [
    [archive, ['--temperature', '0.8', '--seed', '1']],
    [archive, ['--temperature', '1', '--top-k', '40', '--seed', '2']],
    [archive, ['--temperature', '0.7', '--top-p', '0.9', '--seed', '18446744073709551615']],
    [archive, ['--temperature', '1.3', '--top-k', '100', '--top-p', '0.95', '--min-p', '0.02', '--seed', '77']],
    [archive, ['--temperature', '0.9', '--repeat-penalty', '1.3', '--repeat-window', '8', '--seed', '5']],
    [archive, ['--temperature', '2', '--min-p', '0.1', '--repeat-penalty', '0.8', '--seed', '123456789012']],
  ];
  if (small) runs.push([small, ['--temperature', '0.9', '--top-k', '50', '--top-p', '0.9', '--seed', '9']]);
  for (const [file, sampling] of runs) {
    const args = ['--archive', file, '--prompt', 'Set a timer for ten minutes', '--generate', '20', ...sampling];
    const a = wasmCli(args);
    assert.equal(a.status, 0, a.stderr);
    const b = runTool('needle-ref', [...args, '--act', 'a8']);
    assert.equal(b.status, 0, b.stderr);
    const ja = JSON.parse(a.stdout);
    const jb = JSON.parse(b.stdout);
    assert.deepEqual(ja.generated_ids, jb.generated_ids, `${path.basename(file)} ${sampling.join(' ')}`);
    assert.ok(ja.generated_ids.length > 1);
  }
  // and sampling differs from greedy, and between seeds
  const greedy = JSON.parse(runTool('needle-ref', ['--archive', archive, '--ids', '2 4 100', '--generate', '16', '--act', 'a8']).stdout);
  const s1 = JSON.parse(runTool('needle-ref', ['--archive', archive, '--ids', '2 4 100', '--generate', '16', '--act', 'a8',
    '--temperature', '1', '--seed', '1']).stdout);
  const s2 = JSON.parse(runTool('needle-ref', ['--archive', archive, '--ids', '2 4 100', '--generate', '16', '--act', 'a8',
    '--temperature', '1', '--seed', '2']).stdout);
  assert.notDeepEqual(s1.generated_ids, greedy.generated_ids);
  assert.notDeepEqual(s1.generated_ids, s2.generated_ids);
  // bad sampling options are usage errors
  for (const bad of [['--temperature', 'warm'], ['--top-k', '-1'], ['--seed', '18446744073709551616'], ['--top-p', 'inf']])
    assert.equal(runTool('needle-ref', ['--archive', archive, '--ids', '2', ...bad]).status, 2, bad.join(' '));
});

test('a prompt longer than max_seq_len is refused before any step, the session left as it was', { skip }, async () => {
  const long = Array.from({ length: 300 }, (_, i) => 4 + i).join(' ');   // tiny: max_seq_len 256
  const ref = runTool('needle-ref', ['--archive', archive, '--ids', long, '--generate', '4']);
  assert.equal(ref.status, 1);
  assert.match(ref.stderr, /prompt of 300 tokens is longer than max_seq_len \(256\); nothing was run/);
  assert.equal(ref.stdout, '');
  const wasm = wasmCli(['--archive', archive, '--ids', long, '--generate', '4']);
  assert.equal(wasm.status, 1);
  assert.match(wasm.stderr, /prompt of 300 tokens is longer than the 256 positions left \(max_seq_len 256, 0 used\)/);
  await withEngine({}, 60000, async (engine) => {
    await engine.load(archive);
    const fresh = await engine.generate([2, 40, 41], { maxTokens: 5 });
    await engine.reset();
    const ids = Array.from({ length: 300 }, (_, i) => 4 + i);
    await assert.rejects(engine.generate(ids, { maxTokens: 4 }),
      (e) => e.errorName === 'ERR_FULL' && /prompt of 300 tokens .* 256 positions left/.test(e.message));
    assert.equal(await engine.call('position'), 0);
    const again = await engine.generate([2, 40, 41], { maxTokens: 5 });
    assert.deepEqual(again.generated, fresh.generated);
    // part-way through a session: what is left counts
    const used = await engine.call('position');
    await assert.rejects(engine.generate(ids.slice(0, 256 - used + 1)), /positions left \(max_seq_len 256, \d+ used\)/);
    assert.equal(await engine.call('position'), used);
    const fits = await engine.generate(ids.slice(0, 256 - used), { maxTokens: 1 });
    assert.equal(fits.generated.length, 1);
    assert.equal(await engine.call('position'), 256);
  });
});
