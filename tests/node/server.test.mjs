// The dev server (site/server.mjs) as a visitor with curl would try it: run as its own process (as
// npm start runs it), on a folder of our own with a secret file beside it and a link leading out.
// Every hostile request (traversal, NUL, malformed escapes, long and odd paths, odd methods,
// malformed ranges, oversized headers) must get a 4xx, never the secret, and the process must keep
// serving. Then the HTTP it promises: isolation headers, HEAD, ETag and 304, byte ranges (206,
// suffix, 416), /models.json as written, the test archives only with --dev (size and sha256 read
// from the files). docs/page.md, "The dev server".
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SECRET = 'the-secret-outside-the-served-folders';

// A fixture: tmp/{secret.txt, site/{index.html, models.json, app.mjs, out -> ../secret.txt,
// .hidden}, models/shipped.cact, build/{engine.wasm, models/test.cact}}.
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'needle-server-'));
const site = path.join(tmp, 'site');
const models = path.join(tmp, 'models');
const build = path.join(tmp, 'build');
const index = Buffer.from('<!doctype html><title>fixture</title><p>0123456789abcdefghij</p>\n');
const shipped = crypto.randomBytes(5000);
const testArchive = crypto.randomBytes(3000);
const modelsList = [{ name: 'Shipped', url: 'models/shipped.cact', bytes: shipped.length,
  sha256: crypto.createHash('sha256').update(shipped).digest('hex'), description: 'd', tools: ['timers'] }];

function makeFixture() {
  fs.mkdirSync(site);
  fs.mkdirSync(models);
  fs.mkdirSync(path.join(build, 'models'), { recursive: true });
  fs.writeFileSync(path.join(tmp, 'secret.txt'), SECRET);
  fs.writeFileSync(path.join(site, 'index.html'), index);
  fs.writeFileSync(path.join(site, 'app.mjs'), 'export {};\n');
  fs.writeFileSync(path.join(site, '.hidden'), SECRET);
  fs.writeFileSync(path.join(site, 'models.json'), JSON.stringify(modelsList));
  fs.symlinkSync(path.join(tmp, 'secret.txt'), path.join(site, 'out'));
  fs.symlinkSync(tmp, path.join(site, 'up'));
  fs.writeFileSync(path.join(models, 'shipped.cact'), shipped);
  fs.writeFileSync(path.join(build, 'engine.wasm'), Buffer.from([0, 97, 115, 109]));
  fs.writeFileSync(path.join(build, 'models', 'test.cact'), testArchive);
}

// The server as its own process; resolves to {child, port, log: lines so far}.
function startChild(extra = []) {
  const child = spawn(process.execPath, [path.join(root, 'site', 'server.mjs'), '--port', '0', '--site', site,
    '--models', models, '--build', build, ...extra], { stdio: ['ignore', 'pipe', 'pipe'] });
  const log = [];
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const lines = out.split('\n');
      out = lines.pop();
      for (const line of lines) {
        log.push(line);
        const m = /serving http:\/\/127\.0\.0\.1:(\d+)\//.exec(line);
        if (m) resolve({ child, port: Number(m[1]), log });
      }
    });
    child.stderr.on('data', (d) => log.push(`stderr: ${d}`));
    child.on('exit', (code) => reject(new Error(`server exited with ${code}: ${log.join('\n')}`)));
  });
}

// One raw HTTP/1.1 exchange: the request bytes exactly as given (no client-side normalisation).
// Resolves to {status, headers, body (Buffer)}.
function raw(port, requestText) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks = [];
    socket.on('data', (d) => chunks.push(d));
    socket.on('error', reject);
    socket.on('end', () => {
      const all = Buffer.concat(chunks);
      const split = all.indexOf('\r\n\r\n');
      const head = all.subarray(0, split < 0 ? all.length : split).toString('latin1').split('\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head[0])?.[1]);
      const headers = {};
      for (const line of head.slice(1)) {
        const at = line.indexOf(':');
        headers[line.slice(0, at).toLowerCase()] = line.slice(at + 1).trim();
      }
      resolve({ status, headers, body: split < 0 ? Buffer.alloc(0) : all.subarray(split + 4) });
    });
    socket.write(Buffer.isBuffer(requestText) ? requestText : Buffer.from(requestText, 'latin1'));
  });
}

const get = (port, target, headers = {}, method = 'GET') => raw(port,
  `${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n` +
  Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('') + '\r\n');

let server;
before(async () => {
  makeFixture();
  server = await startChild();
});
after(() => {
  server?.child.kill();
  fs.rmSync(tmp, { recursive: true, force: true });
});

test('hostile paths, methods and headers get a 4xx, never a byte from outside, and the server keeps serving', async () => {
  const { port, child } = server;
  const cases = [
    ['/index.html%00', 400], ['/%00', 400], ['/models/shipped.cact%00.txt', 400], ['/app.mjs%00/x', 400],
    ['/../secret.txt', 400], ['/../../../../etc/passwd', 400], ['/%2e%2e/secret.txt', 400],
    ['/models/..%2f..%2fsecret.txt', 400], ['/models/%2E%2E/secret.txt', 400], ['/./index.html', 400],
    ['/..%5csecret.txt', 400], ['/models/..\\..\\secret.txt', 400],
    ['/%', 400], ['/%zz', 400], ['/%E0%A4%A', 400], ['/%C0%AF', 400], ['/index.html%', 400],
    [`/${'a'.repeat(3000)}`, 414], [`/${'a/'.repeat(1100)}`, 414], [`/${'b'.repeat(300)}`, 404],
    ['/out', 404], ['/up/secret.txt', 404], ['/.hidden', 404], ['/.git/config', 404], ['/models/.', 400],
    ['/app.mjs/x', 404], ['/nope', 404], ['/models/', 404], ['/models/nope.cact', 404], ['/dev-models/test.cact', 404],
    ['//etc/passwd', 404], ['///', 200], ['/index.html/', 404], ['/?%00', 200], ['/index.html?../../secret.txt', 200],
    ['*', 400], ['http://127.0.0.1/../secret.txt', 400], ['index.html', 400],
  ];
  for (const [target, status] of cases) {
    const r = await get(port, target);
    assert.equal(r.status, status, `GET ${target.slice(0, 60)}: ${r.status}`);
    assert.ok(!r.body.includes(SECRET), `GET ${target.slice(0, 60)} leaked the secret`);
  }
  for (const method of ['POST', 'PUT', 'DELETE', 'OPTIONS']) {
    const r = await get(port, '/index.html', {}, method);
    assert.equal(r.status, 405, method);
    assert.equal(r.headers.allow, 'GET, HEAD');
  }
  // Requests Node's parser refuses: a raw NUL or space in the path, a made-up method, a line of
  // garbage, headers over 16 KiB.
  const refused = [
    Buffer.from('GET /index.html\0 HTTP/1.1\r\nHost: x\r\n\r\n', 'latin1'),
    'GET /a b HTTP/1.1\r\nHost: x\r\n\r\n',
    'BREW /index.html HTTP/1.1\r\nHost: x\r\n\r\n',
    'garbage\r\n\r\n',
    `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'x'.repeat(20000)}\r\n\r\n`,
  ];
  for (const request of refused) {
    const r = await raw(port, request);
    assert.ok(r.status >= 400 && r.status < 500, `${String(request).slice(0, 30)}: ${r.status}`);
  }
  // Malformed, multiple and out-of-range byte ranges: 416 with the size.
  for (const range of ['bytes=abc', 'bytes=5-2', 'bytes=-', 'bytes=0-1,3-4', 'bytes=-0', 'bytes=--1',
    `bytes=${index.length}-`, `bytes=${index.length + 100}-${index.length + 200}`, 'bytes=99999999999999999999-']) {
    const r = await get(port, '/index.html', { Range: range });
    assert.equal(r.status, 416, range);
    assert.equal(r.headers['content-range'], `bytes */${index.length}`, range);
  }
  assert.equal(child.exitCode, null, 'the server process is still running');
  const r = await get(port, '/');
  assert.equal(r.status, 200);
  assert.deepEqual(r.body, index);
  // every request was logged, the last one too
  assert.match(server.log.at(-1), / GET \/ 200 \d+$/);
});

test('GET and HEAD with the isolation headers, ETag and 304, byte ranges', async () => {
  const { port } = server;
  const full = await get(port, '/index.html');
  assert.equal(full.status, 200);
  assert.deepEqual(full.body, index);
  assert.equal(full.headers['cross-origin-opener-policy'], 'same-origin');
  assert.equal(full.headers['cross-origin-embedder-policy'], 'require-corp');
  assert.equal(full.headers['content-type'], 'text/html; charset=utf-8');
  assert.equal(full.headers['content-length'], String(index.length));
  assert.equal(full.headers['accept-ranges'], 'bytes');
  const etag = full.headers.etag;
  assert.match(etag, /^"[0-9a-f]+-[0-9a-f]+"$/);

  const head = await get(port, '/index.html', {}, 'HEAD');
  assert.equal(head.status, 200);
  assert.equal(head.body.length, 0);
  assert.equal(head.headers['content-length'], String(index.length));
  assert.equal(head.headers.etag, etag);

  for (const inm of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
    const r = await get(port, '/index.html', { 'If-None-Match': inm });
    assert.equal(r.status, 304, inm);
    assert.equal(r.body.length, 0);
    assert.equal(r.headers.etag, etag);
  }
  assert.equal((await get(port, '/index.html', { 'If-None-Match': '"other"' })).status, 200);

  const n = index.length;
  const ranges = [['bytes=0-9', 0, 9], ['bytes=10-', 10, n - 1], ['bytes=-5', n - 5, n - 1],
    [`bytes=-${n + 50}`, 0, n - 1], [`bytes=3-${n + 1000}`, 3, n - 1], ['bytes=7-7', 7, 7], ['BYTES = 2 - 4', 2, 4]];
  for (const [range, start, end] of ranges) {
    const r = await get(port, '/index.html', { Range: range });
    assert.equal(r.status, 206, range);
    assert.equal(r.headers['content-range'], `bytes ${start}-${end}/${n}`, range);
    assert.equal(r.headers['content-length'], String(end - start + 1), range);
    assert.deepEqual(r.body, index.subarray(start, end + 1), range);
  }
  const headRange = await get(port, '/index.html', { Range: 'bytes=0-3' }, 'HEAD');
  assert.equal(headRange.status, 206);
  assert.equal(headRange.body.length, 0);
  // another unit is ignored; an If-Range that does not match the ETag gives the whole file
  assert.equal((await get(port, '/index.html', { Range: 'items=0-1' })).status, 200);
  const stale = await get(port, '/index.html', { Range: 'bytes=0-1', 'If-Range': '"old"' });
  assert.equal(stale.status, 200);
  assert.deepEqual(stale.body, index);
  assert.equal((await get(port, '/index.html', { Range: 'bytes=0-1', 'If-Range': etag })).status, 206);

  // an archive of the shipped folder, by range as a resuming download would ask for it
  const tail = await get(port, '/models/shipped.cact', { Range: 'bytes=4000-' });
  assert.equal(tail.status, 206);
  assert.deepEqual(tail.body, shipped.subarray(4000));
  assert.equal(tail.headers['content-type'], 'application/octet-stream');
  assert.equal((await get(port, '/engine.wasm')).headers['content-type'], 'application/wasm');
});

test('/models.json is the file as written; only --dev adds the test archives, with their size and sha256', async () => {
  const plain = await get(server.port, '/models.json');
  assert.equal(plain.status, 200);
  assert.deepEqual(JSON.parse(plain.body), modelsList);
  assert.equal((await get(server.port, '/models.json', { 'If-None-Match': plain.headers.etag })).status, 304);

  const dev = await startChild(['--dev', '--quiet']);
  try {
    const list = JSON.parse((await get(dev.port, '/models.json')).body);
    assert.deepEqual(list.slice(0, 1), modelsList);
    assert.equal(list.length, 2);
    assert.deepEqual({ ...list[1], description: undefined }, {
      name: 'test.cact', url: 'dev-models/test.cact', bytes: testArchive.length,
      sha256: crypto.createHash('sha256').update(testArchive).digest('hex'), description: undefined, tools: [], dev: true,
    });
    const r = await get(dev.port, '/dev-models/test.cact');
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, testArchive);
    assert.equal((await get(dev.port, '/dev-models/../secret.txt')).status, 400);
    assert.equal(dev.log.filter((l) => / GET /.test(l)).length, 0, '--quiet logs no requests');
  } finally {
    dev.child.kill();
  }
});
