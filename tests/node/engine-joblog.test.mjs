// The engine's job log (docs/engine.md, "Job log"): at 2 threads every job of a step is recorded
// with the chunks that ran its items (every item once, by thread slots below the thread count, inside
// the job's span); a step of the small archive runs exactly the jobs the step's plan says (q/k/v/gate
// and each engram site's key/value as fused jobs, one attention job and one out product per layer,
// the logits); the log changes no token; a log too small for the run is an error and the engine
// goes on working; a new archive starts with the log off.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { summarizeJobLog } from '../../site/engine/joblog.mjs';
import { model, withEngine } from './helpers/engine.mjs';

const small = model('small.cact');
const skip = !small ? 'needs the models fixture' : false;
const PROMPT = [2, 100, 200, 300, 400, 500, 600];

test('job log at 2 threads: the jobs of each step, every item run once inside its job', { skip }, async () => {
  await withEngine({ threads: 2 }, 240000, async (engine) => {
    await engine.load(small);
    const g = engine.geometry;
    const plain = await engine.generate(PROMPT, { maxTokens: 12, stopIds: [] });
    await engine.reset();
    await engine.jobLogStart();
    const logged = await engine.generate(PROMPT, { maxTokens: 12, stopIds: [] });
    const records = await engine.jobLogStop();
    assert.deepEqual(logged.generated, plain.generated, 'the log changes no token');

    const steps = records.filter((r) => r.kind === 'step');
    const prefills = records.filter((r) => r.kind === 'prefill');
    assert.equal(prefills.length, 1);
    assert.equal(prefills[0].items, PROMPT.length);
    assert.equal(steps.length, 11, 'the 12th token is sampled, never fed');
    assert.deepEqual(steps.map((s) => s.pos), steps.map((_, i) => PROMPT.length + i + 1));
    for (const r of records) {
      assert.ok(r.end >= r.start, `${r.kind} ${r.job} ends before it starts`);
      if (r.kind === 'chunk') assert.ok(r.slot < 2, `slot ${r.slot} at 2 threads`);
    }
    // every job's items are run exactly once, by chunks inside its span
    const jobs = records.filter((r) => r.kind === 'job');
    const chunks = records.filter((r) => r.kind === 'chunk');
    let at = 0;
    for (const job of jobs.sort((a, b) => a.start - b.start)) {
      const mine = chunks.filter((c) => c.job === job.job && c.start >= job.start && c.end <= job.end);
      assert.equal(mine.reduce((n, c) => n + c.items, 0), job.items, `${job.job} job #${at}: items run`);
      at++;
    }
    assert.equal(chunks.reduce((n, c) => n + c.items, 0), jobs.reduce((n, j) => n + j.items, 0), 'no chunk outside a job');

    const s = summarizeJobLog(records, 'step');
    const per = Object.fromEntries(s.jobs.map((j) => [j.job, j.perSpan]));
    assert.deepEqual(per, {
      fused: g.num_layers + g.num_engram_sites,    // q, k, v, gate; each site's key and value
      attention: g.num_layers,
      matvec: g.num_layers + 1,                    // out, then the logits
    });
    assert.equal(s.threads, 2);
    assert.ok(s.spanMs > 0 && s.jobMs > 0 && s.jobMs <= s.spanMs);
  });
});

test('job log: too small for the run is an error; the engine goes on; a new load starts with it off', { skip }, async () => {
  await withEngine({ threads: 2 }, 240000, async (engine) => {
    await engine.load(small);
    const plain = await engine.generate(PROMPT, { maxTokens: 4, stopIds: [] });
    await engine.reset();
    await engine.jobLogStart({ capacity: 10 });
    const logged = await engine.generate(PROMPT, { maxTokens: 4, stopIds: [] });
    await assert.rejects(engine.jobLogStop(), /job log: full/);
    assert.deepEqual(logged.generated, plain.generated);
    await engine.jobLogStart({ capacity: 10 });
    await engine.load(small);
    await engine.reset();
    assert.deepEqual((await engine.generate(PROMPT, { maxTokens: 4, stopIds: [] })).generated, plain.generated);
    assert.deepEqual(await engine.jobLogStop(), [], 'the load turned the log off');
  });
});
