// server.mjs: the development server for the page. It serves site/, the engine (build/engine.wasm),
// the tool-call module (build/toolcall.mjs + toolcall.wasm) and the models (build/models/*.cact) from
// 127.0.0.1 with the two headers that make the page cross-origin isolated (shared memory needs them):
// COOP same-origin and COEP require-corp.
//
//   node site/server.mjs [--port 8080] [--build build]

import { execFileSync } from 'node:child_process';
import http from 'node:http';
import fs from 'node:fs';
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
};

function option(name, fallback) {
  const at = process.argv.indexOf(name);
  return at > 0 && at + 1 < process.argv.length ? process.argv[at + 1] : fallback;
}

// Maps a URL path to a file: /engine.wasm, the tool-call module (/toolcall.mjs, /toolcall.wasm) and
// /models/* come from the build, the rest from site/. Returns null for anything outside those folders.
export function resolveFile(urlPath, buildDir) {
  let rel;
  try {
    rel = decodeURIComponent(urlPath.split('?')[0]);
  } catch {
    return null;
  }
  if (rel.endsWith('/')) rel += 'index.html';
  const fromBuild = ['/engine.wasm', '/toolcall.mjs', '/toolcall.wasm'];
  const [base, sub] = fromBuild.includes(rel) ? [buildDir, rel.slice(1)]
    : rel.startsWith('/models/') ? [path.join(buildDir, 'models'), rel.slice('/models/'.length)]
    : [siteDir, rel.slice(1)];
  const file = path.resolve(base, sub);
  return file.startsWith(path.resolve(base) + path.sep) ? file : null;
}

// Whether the page can open an archive: needle-info (the C++ reader, so one definition of the format)
// must accept it and find a tokenizer, which the page needs to read requests. Without the tool
// (not built yet) every archive is offered and the engine itself judges it on Open.
function openable(file, buildDir) {
  const tool = path.join(buildDir, 'bin', 'needle-info');
  if (!fs.existsSync(tool)) return true;
  try {
    const info = JSON.parse(execFileSync(tool, ['--json', file], { stdio: ['ignore', 'pipe', 'ignore'] }));
    return info.tokenizer != null;
  } catch {
    return false;
  }
}

// The archives the page can open: [{name, url, bytes}], largest (the real geometry) first.
export function listModels(buildDir) {
  const modelsDir = path.join(buildDir, 'models');
  let names = [];
  try {
    names = fs.readdirSync(modelsDir).filter((n) => n.endsWith('.cact') && openable(path.join(modelsDir, n), buildDir));
  } catch {
    return [];
  }
  return names
    .map((name) => ({ name, url: `/models/${encodeURIComponent(name)}`, bytes: fs.statSync(path.join(modelsDir, name)).size }))
    .sort((a, b) => b.bytes - a.bytes);
}

export function startServer({ port = 8080, host = '127.0.0.1', buildDir = path.join(rootDir, 'build') } = {}) {
  const server = http.createServer((req, res) => {
    const headers = {
      'Cross-Origin-Opener-Policy': 'same-origin',
      'Cross-Origin-Embedder-Policy': 'require-corp',
      'Cross-Origin-Resource-Policy': 'same-origin',
      'Cache-Control': 'no-cache',
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, headers).end('method not allowed\n');
      return;
    }
    if (req.url.split('?')[0] === '/models/index.json') {
      const body = JSON.stringify(listModels(buildDir));
      res.writeHead(200, { ...headers, 'Content-Type': TYPES['.json'] }).end(body);
      return;
    }
    const file = resolveFile(req.url, buildDir);
    fs.stat(file ?? '', (err, stat) => {
      if (!file || err || !stat.isFile()) {
        res.writeHead(404, { ...headers, 'Content-Type': 'text/plain' }).end('not found\n');
        return;
      }
      res.writeHead(200, {
        ...headers,
        'Content-Type': TYPES[path.extname(file)] ?? 'application/octet-stream',
        'Content-Length': stat.size,
      });
      if (req.method === 'HEAD') res.end();
      else fs.createReadStream(file).pipe(res);
    });
  });
  return new Promise((resolve) => server.listen(port, host, () => resolve(server)));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const port = Number(option('--port', process.env.PORT ?? 8080));
  const buildDir = path.resolve(option('--build', path.join(rootDir, 'build')));
  const server = await startServer({ port, buildDir });
  const { port: bound } = server.address();
  console.log(`needlework: serving http://127.0.0.1:${bound}/ (cross-origin isolated); Ctrl+C stops`);
}
