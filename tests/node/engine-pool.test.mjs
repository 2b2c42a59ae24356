// The thread pool: jobs split across the driver and helper Workers on one shared memory, thread
// counts changed between jobs, helpers that start late, never, or hold a slot without running,
// the watchdog, and the regression test for Node 20's Liftoff defect (locals lost across an inline
// memory.atomic.wait32): every wait must sit in its own function, and waits must not lose state.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { killEngine, makeEngine, root, withEngine } from './helpers/engine.mjs';

// Every item of every round was run exactly once.
async function poolCheck(engine, count, rounds, chunk) {
  const r = await engine.call('poolTest', { count, rounds, chunk });
  assert.equal(r.done, count * rounds);
  for (let i = 0; i < count; i++) assert.equal(r.values[i], (i + 1) * rounds, `item ${i}`);
}

test('jobs run every item once at 1, 2 and 3 threads', async () => {
  for (const threads of [1, 2, 3]) {
    await withEngine({ threads }, 30000, async (engine) => {
      await poolCheck(engine, 1000, 200, 7);
      await poolCheck(engine, 3, 500, 1);   // fewer items than threads
    });
  }
});

test('the thread count changes between jobs', async () => {
  await withEngine({ threads: 3 }, 30000, async (engine) => {
    for (const t of [3, 1, 2, 3, 2, 1, 3]) {
      await engine.setThreads(t);
      await poolCheck(engine, 257, 50, 3);
    }
  });
});

test('a helper that never starts cannot deadlock a job; one that starts late joins in', async () => {
  await withEngine({ threads: 3, startHelpers: false }, 30000, async (engine) => {
    await poolCheck(engine, 500, 100, 5);      // no helper yet: the driver does everything
    await engine.addHelper();                 // one helper starts late; the third never does
    await poolCheck(engine, 500, 100, 5);
    const ready = new Int32Array(engine.memory.buffer)[engine.constant('ADDR_READY') >> 2];
    assert.equal(ready, 1);
  });
});

test('Liftoff regression: waits on every job keep the pool consistent', async () => {
  // spin 0: every idle helper and the driver sleep in memory.atomic.wait32 at every job, the case
  // in which Node 20's Liftoff lost locals held across an inline wait.
  await withEngine({ threads: 3, spin: 0 }, 60000, async (engine) => {
    await poolCheck(engine, 64, 3000, 1);
  });
  // The module keeps its single wait in its own function, as the workaround requires.
  const wat = fs.readFileSync(path.join(root, 'engine.wat'), 'utf8').replace(/;;.*$/gm, '');
  const waits = wat.match(/memory\.atomic\.wait32/g) || [];
  assert.equal(waits.length, 1, 'exactly one wait instruction');
  const at = wat.indexOf('(func $wait32');
  const fn = wat.slice(at, wat.indexOf('(func', at + 1));
  const lines = fn.split('\n').filter((l) => l.trim() !== '');
  assert.ok(at >= 0 && fn.includes('memory.atomic.wait32') && lines.length <= 3,
    'the wait sits alone in $wait32');
});

test('a helper that holds a slot but never runs does not stall jobs', async () => {
  await withEngine({ threads: 3, startHelpers: false }, 30000, async (engine) => {
    await engine.addHelper();
    // Count a second helper that will never run: jobs end when their items are done, by whoever
    // claimed them, so nobody waits for it.
    Atomics.add(new Int32Array(engine.memory.buffer), engine.constant('ADDR_READY') >> 2, 1);
    await poolCheck(engine, 300, 200, 3);
  });
});

test('watchdog: a driver that never answers fails the test instead of hanging it', async () => {
  const engine = await makeEngine({ threads: 2 });
  let timer;
  const outcome = await Promise.race([
    engine.call('hang').then(() => 'finished'),
    new Promise((resolve) => { timer = setTimeout(() => resolve('watchdog'), 1000); }),
  ]);
  clearTimeout(timer);
  await killEngine(engine);   // ends the driver's wait
  assert.equal(outcome, 'watchdog');
  // withEngine does the same and rejects
  await assert.rejects(withEngine({ threads: 1 }, 500, (e) => e.call('hang')), /watchdog/);
});
