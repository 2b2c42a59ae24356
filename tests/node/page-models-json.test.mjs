// site/models.json against the archives it lists (scripts/models-json.mjs): each entry's size and
// sha256 are its file's, the shipped model comes first, every tool set it names exists; and the
// check itself fails on each kind of disagreement. docs/page.md, "models.json".
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import { problems } from '../../scripts/models-json.mjs';
import { root } from './helpers/engine.mjs';
import { modelsDir, shippedPath } from './helpers/page.mjs';

const sha = (data) => crypto.createHash('sha256').update(data).digest('hex');
const toolsets = JSON.parse(fs.readFileSync(path.join(root, 'site', 'toolsets.json'), 'utf8'));

const list = JSON.parse(fs.readFileSync(path.join(root, 'site', 'models.json'), 'utf8'));
const noModel = !fs.existsSync(shippedPath) && `${shippedPath} is not there yet (npm run train -- --install makes it)`;

test('models.json lists the shipped model first; every tool set it names exists', () => {
  assert.equal(list[0].url, 'models/needlework-tools.cact');
  for (const entry of list) for (const id of entry.tools) assert.ok(toolsets.some((t) => t.id === id), `${entry.name}: tool set ${id}`);
});

test('models.json has the true size and sha256 of each archive it lists', { skip: noModel }, () => {
  assert.deepEqual(problems(list, modelsDir), []);
});

test('the check fails on each kind of disagreement', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'needle-models-'));
  try {
    fs.mkdirSync(path.join(tmp, 'models'));
    const data = crypto.randomBytes(100);
    fs.writeFileSync(path.join(tmp, 'models', 'a.cact'), data);
    const good = { name: 'a', url: 'models/a.cact', bytes: 100, sha256: sha(data), description: '', tools: [] };
    const dir = path.join(tmp, 'models');
    assert.deepEqual(problems([good], dir), []);
    assert.match(problems([{ ...good, bytes: 99 }], dir)[0], /bytes 99, but models\/a.cact has 100/);
    assert.match(problems([{ ...good, sha256: sha('x') }], dir)[0], /sha256 .* but models\/a.cact has/);
    assert.match(problems([{ ...good, url: 'models/b.cact' }], dir)[0], /models\/b.cact does not exist/);
    assert.match(problems([{ ...good, url: '../a.cact' }], dir)[0], /is not models\/NAME.cact/);
    assert.match(problems([{ ...good, dev: true }], dir)[0], /a dev entry/);
    assert.match(problems([{ ...good, tools: undefined, description: undefined }].map((e) => JSON.parse(JSON.stringify(e))), dir)[0], /no "description"/);
    assert.deepEqual(problems([{ ...good, no_call_bias: 1.5 }], dir), []);
    assert.match(problems([{ ...good, no_call_bias: '1.5' }], dir)[0], /no_call_bias "1.5" is not a number$/);
    assert.deepEqual(problems([{ ...good, no_call_doubt: 1 }], dir), []);
    assert.match(problems([{ ...good, no_call_doubt: true }], dir)[0], /no_call_doubt true is not a number$/);
    assert.deepEqual(problems([{ ...good, no_call_named: 6 }], dir), []);
    assert.match(problems([{ ...good, no_call_named: '6' }], dir)[0], /no_call_named "6" is not a number$/);
    assert.deepEqual(problems([{ ...good, steer_named: true }], dir), []);
    assert.match(problems([{ ...good, steer_named: 'yes' }], dir)[0], /steer_named "yes" is not true or false$/);
    assert.deepEqual(problems([{ ...good, span_strings: true }], dir), []);
    assert.deepEqual(problems([{ ...good, span_strings: false }], dir), []);
    assert.match(problems([{ ...good, span_strings: 'yes' }], dir)[0], /span_strings "yes" is not true or false$/);
    assert.deepEqual(problems([], dir), ['models.json: not a non-empty array']);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
