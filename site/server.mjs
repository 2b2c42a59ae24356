// server.mjs: the development server for the page (docs/page.md, "The dev server"). It serves, from
// 127.0.0.1, with the two headers that make the page cross-origin isolated (shared memory needs
// them: COOP same-origin, COEP require-corp):
//
//   /engine.wasm, /toolcall.mjs, /toolcall.wasm   from the build directory
//   /models/NAME                                  the shipped archives (models/ of the repository)
//   /models.json                                  site/models.json, the list of models offered
//   /dev-models/NAME                              only with --dev: the test archives of BUILD/models,
//                                                 added to /models.json as entries marked "dev"
//   anything else                                 site/
//
// It answers GET and HEAD, single byte ranges (206; suffix ranges; 416 past the end or malformed),
// and ETag / If-None-Match with 304. A path it cannot map (a malformed escape, a NUL, a climb out
// of its folders, a dot file, a link that leads outside) is a 4xx, never a crash: every file is
// opened only after its real path is checked to lie inside the folder it was asked from.
//
//   node site/server.mjs [--port 8080] [--build build] [--models models] [--site site] [--dev] [--quiet]

import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const siteDir = path.dirname(fileURLToPath(import.meta.url));
const rootDir = path.dirname(siteDir);

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.cact': 'application/octet-stream',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

// Longest URL path answered (a longer one is 414): far above any file of ours.
const MAX_PATH = 2048;

// The isolation headers and the rest every answer carries.
const BASE_HEADERS = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'X-Content-Type-Options': 'nosniff',
  'Cache-Control': 'no-cache',
};

// An answer that is not a file: status and a one-line reason (also the body).
class HttpError extends Error {
  constructor(status, reason) {
    super(reason);
    this.status = status;
  }
}

// The folders URL paths map to, first match wins: [url prefix, folder]. Exact files map one path.
function mounts({ buildDir, modelsDir, dev, siteDir }) {
  const list = [
    { exact: '/engine.wasm', file: path.join(buildDir, 'engine.wasm') },
    { exact: '/toolcall.mjs', file: path.join(buildDir, 'toolcall.mjs') },
    { exact: '/toolcall.wasm', file: path.join(buildDir, 'toolcall.wasm') },
    { prefix: '/models/', dir: modelsDir },
  ];
  if (dev) list.push({ prefix: '/dev-models/', dir: path.join(buildDir, 'models') });
  list.push({ prefix: '/', dir: siteDir });
  return list;
}

// The decoded path of a request URL ('/a/b.html'), or throws HttpError: 400 for a malformed escape,
// a NUL or backslash, a path that is not absolute; 414 for one longer than MAX_PATH.
export function decodePath(url) {
  const raw = String(url).split('?')[0].split('#')[0];
  if (raw.length > MAX_PATH) throw new HttpError(414, `path longer than ${MAX_PATH} characters`);
  if (!raw.startsWith('/')) throw new HttpError(400, 'path does not start with /');
  let decoded;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    throw new HttpError(400, 'malformed percent-escape in the path');
  }
  if (decoded.includes('\0')) throw new HttpError(400, 'NUL in the path');
  if (decoded.includes('\\')) throw new HttpError(400, 'backslash in the path');
  return decoded;
}

// The file a decoded path names, by the mounts; throws HttpError 400 for '..' segments and 404 for
// dot files (.git, .env) or a path no mount takes. Checks the name only; serveFile checks the real
// path.
export function mapPath(decoded, options) {
  let rel = decoded.endsWith('/') ? `${decoded}index.html` : decoded;
  const segments = rel.split('/').slice(1);
  if (segments.some((s) => s === '..' || s === '.')) throw new HttpError(400, 'path climbs with . or ..');
  if (segments.some((s) => s.startsWith('.'))) throw new HttpError(404, 'not found');
  for (const m of mounts(options)) {
    if (m.exact === rel) return { file: m.file, dir: path.dirname(m.file) };
    if (m.prefix && rel.startsWith(m.prefix)) {
      const sub = rel.slice(m.prefix.length);
      if (!sub) throw new HttpError(404, 'not found');
      return { file: path.join(m.dir, ...sub.split('/')), dir: m.dir };
    }
  }
  throw new HttpError(404, 'not found');
}

// A strong validator of a file's version: its size and modification time.
function etagOf(stat) {
  return `"${stat.size.toString(16)}-${Math.floor(stat.mtimeMs).toString(16)}"`;
}

// Whether an If-None-Match header matches `etag` (weak comparison, as RFC 9110 asks for it).
function noneMatch(header, etag) {
  if (header === undefined) return false;
  if (header.trim() === '*') return true;
  return header.split(',').map((t) => t.trim().replace(/^W\//, '')).includes(etag);
}

// The byte range a Range header asks of a file of `size` bytes: null (no Range, or a unit other
// than bytes: the whole file), {start, end} (inclusive), or 'unsatisfiable' (past the end, an empty
// suffix, a malformed or multiple range: 416).
export function parseRange(header, size) {
  if (header === undefined || !/^\s*bytes\s*=/i.test(header)) return null;
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!m || (m[1] === '' && m[2] === '')) return 'unsatisfiable';
  const first = m[1] === '' ? null : Number(m[1]);
  const last = m[2] === '' ? null : Number(m[2]);
  if (first === null) {  // a suffix: the last `last` bytes
    if (last === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - last), end: size - 1 };
  }
  if (first >= size || (last !== null && last < first)) return 'unsatisfiable';
  return { start: first, end: last === null ? size - 1 : Math.min(last, size - 1) };
}

// The test archives of BUILD/models as model entries (docs/page.md, "models.json"), for --dev only:
// size and sha256 read from the files, remembered per (name, size, mtime) so a listing reads an
// archive again only when it changed.
const devDigests = new Map();
async function devModels(buildDir) {
  const dir = path.join(buildDir, 'models');
  let names;
  try {
    names = (await fs.promises.readdir(dir)).filter((n) => n.endsWith('.cact')).sort();
  } catch {
    return [];
  }
  const out = [];
  for (const name of names) {
    const file = path.join(dir, name);
    const stat = await fs.promises.stat(file);
    const key = `${file}\0${stat.size}\0${stat.mtimeMs}`;
    if (!devDigests.has(key)) {
      const hash = crypto.createHash('sha256').update(await fs.promises.readFile(file)).digest('hex');
      devDigests.set(key, hash);
    }
    out.push({
      name, url: `dev-models/${encodeURIComponent(name)}`, bytes: stat.size, sha256: devDigests.get(key),
      description: 'Test archive of BUILD/models (random weights): the whole pipeline runs, replies are noise.',
      tools: [], dev: true,
    });
  }
  return out;
}

// /models.json: site/models.json, plus the test archives with --dev.
async function modelsJson(options) {
  const list = JSON.parse(await fs.promises.readFile(path.join(options.siteDir, 'models.json'), 'utf8'));
  if (options.dev) list.push(...await devModels(options.buildDir));
  return Buffer.from(JSON.stringify(list, null, 2));
}

// Sends `body` (a Buffer) or a file with the conditional and range rules; returns the status.
async function answer(req, res, options) {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { ...BASE_HEADERS, Allow: 'GET, HEAD', 'Content-Type': 'text/plain' });
    res.end('method not allowed\n');
    return { status: 405, bytes: 0 };
  }
  const decoded = decodePath(req.url);
  if (decoded === '/models.json') {
    const body = await modelsJson(options);
    const etag = `"${crypto.createHash('sha256').update(body).digest('hex').slice(0, 32)}"`;
    return sendBody(req, res, { body, size: body.length, etag, type: TYPES['.json'] });
  }
  const { file, dir } = mapPath(decoded, options);
  // The real path must lie in the real folder: a link inside site/ must not lead out of it.
  let real;
  let realDir;
  try {
    [real, realDir] = await Promise.all([fs.promises.realpath(file), fs.promises.realpath(dir)]);
  } catch {
    throw new HttpError(404, 'not found');
  }
  if (!real.startsWith(realDir + path.sep))
    throw new HttpError(404, 'not found');
  let handle;
  try {
    handle = await fs.promises.open(real, 'r');
  } catch {
    throw new HttpError(404, 'not found');
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw new HttpError(404, 'not found');
    const type = TYPES[path.extname(real)] ?? 'application/octet-stream';
    return await sendBody(req, res, { handle, size: stat.size, etag: etagOf(stat), type });
  } finally {
    // sendBody's stream owns the handle once it starts; otherwise close it here
    if (!handle.owned) await handle.close().catch(() => {});
  }
}

// The status line and body of a file (an open handle) or of a Buffer, after the ETag and Range rules.
function sendBody(req, res, { body = null, handle = null, size, etag, type }) {
  const headers = { ...BASE_HEADERS, ETag: etag, 'Accept-Ranges': 'bytes', 'Content-Type': type };
  if (noneMatch(req.headers['if-none-match'], etag)) {
    res.writeHead(304, headers).end();
    return { status: 304, bytes: 0 };
  }
  const ifRange = req.headers['if-range'];
  const range = ifRange !== undefined && ifRange.trim() !== etag ? null : parseRange(req.headers.range, size);
  if (range === 'unsatisfiable') {
    res.writeHead(416, { ...headers, 'Content-Range': `bytes */${size}`, 'Content-Type': 'text/plain' });
    res.end('range not satisfiable\n');
    return { status: 416, bytes: 0 };
  }
  const start = range ? range.start : 0;
  const end = range ? range.end : size - 1;
  const length = Math.max(0, end - start + 1);
  const status = range ? 206 : 200;
  res.writeHead(status, {
    ...headers, 'Content-Length': length, ...(range ? { 'Content-Range': `bytes ${start}-${end}/${size}` } : {}),
  });
  if (req.method === 'HEAD' || length === 0) {
    res.end();
    return { status, bytes: 0 };
  }
  if (body) {
    res.end(body.subarray(start, end + 1));
    return { status, bytes: length };
  }
  handle.owned = true;
  const stream = handle.createReadStream({ start, end, autoClose: true });
  stream.on('error', () => res.destroy());
  res.on('close', () => stream.destroy());
  stream.pipe(res);
  return { status, bytes: length };
}

// options: port, host, buildDir (engine.wasm, toolcall.*, models/ for --dev), modelsDir (the shipped
// archives, default models/ of the repository), siteDir (the page, default this folder), dev (offer
// the test archives), log (a function given {method, path, status, bytes} for every answer; null:
// silent).
export function startServer({ port = 8080, host = '127.0.0.1', buildDir = path.join(rootDir, 'build'),
                              modelsDir = path.join(rootDir, 'models'), siteDir: site = siteDir, dev = false,
                              log = null } = {}) {
  const options = { buildDir: path.resolve(buildDir), modelsDir: path.resolve(modelsDir), siteDir: path.resolve(site), dev };
  const server = http.createServer(async (req, res) => {
    let outcome;
    try {
      outcome = await answer(req, res, options);
    } catch (e) {
      const status = e instanceof HttpError ? e.status : 500;
      const reason = e instanceof HttpError ? e.message : 'internal error';
      if (!(e instanceof HttpError)) console.error(`server: ${req.method} ${req.url}:`, e);
      if (!res.headersSent) res.writeHead(status, { ...BASE_HEADERS, 'Content-Type': 'text/plain' }).end(`${reason}\n`);
      else res.destroy();
      outcome = { status, bytes: 0 };
    }
    if (log) log({ method: req.method, path: String(req.url).slice(0, 200), status: outcome.status, bytes: outcome.bytes });
  });
  // A request Node's parser refuses (bad request line, headers too large): a plain 400, never a throw.
  server.on('clientError', (err, socket) => {
    if (socket.writable) socket.end(`HTTP/1.1 ${err.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400} Bad Request\r\nConnection: close\r\n\r\n`);
    else socket.destroy();
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}

function option(name, fallback) {
  const at = process.argv.indexOf(name);
  return at > 0 && at + 1 < process.argv.length ? process.argv[at + 1] : fallback;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const port = Number(option('--port', process.env.PORT ?? 8080));
  const buildDir = path.resolve(option('--build', path.join(rootDir, 'build')));
  const modelsDir = path.resolve(option('--models', path.join(rootDir, 'models')));
  const site = path.resolve(option('--site', siteDir));
  const dev = process.argv.includes('--dev');
  const quiet = process.argv.includes('--quiet');
  const log = quiet ? null : ({ method, path: p, status, bytes }) =>
    console.log(`${new Date().toISOString()} ${method} ${p} ${status} ${bytes}`);
  const server = await startServer({ port, buildDir, modelsDir, siteDir: site, dev, log });
  const { port: bound } = server.address();
  console.log(`needlework: serving http://127.0.0.1:${bound}/ (cross-origin isolated${dev ? '; test models offered' : ''}); Ctrl+C stops`);
}
