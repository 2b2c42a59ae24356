// download.mjs: an archive's bytes on their way into wasm memory (docs/page.md, "Opening a model").
// Whatever the source (the network, the Cache API copy, a file from disk), the body passes through
// one checking stream that counts and hashes it (SHA-256, as it streams: no second copy), reports
// progress, honours Cancel, and errors at its end when the size or the sha256 differs from what was
// expected. Because the error comes before the end of the stream, a Cache API put fed from the same
// stream never stores a short, cancelled or corrupted copy.

import { Sha256 } from './sha256.mjs';

export const CACHE_NAME = 'needlework-models';
// Headers of the Cache API copy: what models.json said when it was stored.
export const SHA_HEADER = 'X-Needlework-SHA256';

// The error of an archive's bytes: `kind` is 'cancelled', 'size', 'sha256' or 'read'.
export class ArchiveError extends Error {
  constructor(kind, message) {
    super(message);
    this.kind = kind;
  }
}

// "1.4 MB": bytes in decimal megabytes (what download speeds are quoted in), or kB below one.
export function formatBytes(n) {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)} GB`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)} MB`;
  return `${Math.max(0, Math.round(n / 1e3))} kB`;
}

// Progress of a transfer: {received, total (null when unknown), fraction (null), bytesPerSecond,
// secondsLeft (null when unknown or not yet measurable)} from the bytes so far and the milliseconds
// since the first byte was asked for.
export function progressOf(received, total, elapsedMs) {
  const seconds = elapsedMs / 1000;
  const bytesPerSecond = seconds > 0 ? received / seconds : 0;
  const known = total !== null && total > 0;
  return {
    received, total: known ? total : null, fraction: known ? Math.min(1, received / total) : null,
    bytesPerSecond,
    secondsLeft: known && bytesPerSecond > 0 ? Math.max(0, (total - received) / bytesPerSecond) : null,
  };
}

// "1.2 MB of 3.0 MB, 4.5 MB/s, 0.4 s left" for a progressOf() result.
export function progressText(p) {
  const parts = [p.total !== null ? `${formatBytes(p.received)} of ${formatBytes(p.total)}` : formatBytes(p.received)];
  if (p.bytesPerSecond > 0) parts.push(`${(p.bytesPerSecond / 1e6).toFixed(1)} MB/s`);
  if (p.secondsLeft !== null) parts.push(p.secondsLeft < 10 ? `${p.secondsLeft.toFixed(1)} s left` : `${Math.round(p.secondsLeft)} s left`);
  return parts.join(', ');
}

// The body `stream` (a ReadableStream of Uint8Array) passed through unchanged while it is counted
// and hashed. expected: {bytes (null: unknown), sha256 (null: not checked)}; onProgress(progressOf
// result) after each chunk; signal: an AbortSignal for Cancel. Returns {stream, result}: `result`
// resolves to {bytes, sha256} once the last byte passed and matched, and rejects with ArchiveError
// (the stream errors with the same error, before it ends).
export function checkedStream(stream, { bytes = null, sha256 = null, onProgress = null, signal = null, now = () => performance.now() } = {}) {
  const hash = new Sha256();
  const start = now();
  let received = 0;
  let settle;
  const result = new Promise((resolve, reject) => { settle = { resolve, reject }; });
  result.catch(() => {});  // the caller may only watch the stream
  const fail = (controller, error) => {
    settle.reject(error);
    controller.error(error);
  };
  const cancelled = () => new ArchiveError('cancelled', 'cancelled: nothing was kept');
  const checker = new TransformStream({
    start(controller) {
      signal?.addEventListener('abort', () => fail(controller, cancelled()), { once: true });
    },
    transform(chunk, controller) {
      if (signal?.aborted) return fail(controller, cancelled());
      received += chunk.length;
      if (bytes !== null && received > bytes)
        return fail(controller, new ArchiveError('size', `the archive is longer than the ${bytes} bytes expected`));
      hash.update(chunk);
      controller.enqueue(chunk);
      onProgress?.(progressOf(received, bytes, now() - start));
    },
    flush(controller) {
      if (signal?.aborted) return fail(controller, cancelled());
      if (bytes !== null && received !== bytes)
        return fail(controller, new ArchiveError('size', `the archive ended after ${received} of the ${bytes} bytes expected`));
      const digest = hash.hex();
      if (sha256 !== null && digest !== sha256.toLowerCase())
        return fail(controller, new ArchiveError('sha256', `the archive's sha256 is ${digest}, not the ${sha256} expected`));
      settle.resolve({ bytes: received, sha256: digest });
    },
  });
  const piped = stream.pipeThrough(checker, { signal: signal ?? undefined });
  return { stream: piped, result };
}

// A Response for engine.load: the stream with the Content-Length the engine reserves memory for.
export function archiveResponse(stream, bytes) {
  return new Response(stream, { headers: { 'Content-Type': 'application/octet-stream', 'Content-Length': String(bytes) } });
}

// The Cache API copy of a listed model (an absolute URL key), or null. A copy whose recorded size
// or sha256 differs from the model's entry is deleted here (it is stale: the next Open downloads
// the archive again). `caches`: the CacheStorage (a parameter for the tests).
export async function cachedCopy(cacheStorage, model) {
  const cache = await cacheStorage.open(CACHE_NAME);
  const hit = await cache.match(model.url);
  if (!hit) return null;
  const size = Number(hit.headers.get('Content-Length'));
  const sha = hit.headers.get(SHA_HEADER);
  if (size !== model.bytes || (model.sha256 && sha !== model.sha256)) {
    await cache.delete(model.url);
    return null;
  }
  return hit;
}

// Stores a model's archive from `stream` (which errors when the bytes do not check out, so that
// nothing is stored then). Resolves when stored; rejects when the stream errored.
export async function storeCopy(cacheStorage, model, stream) {
  const cache = await cacheStorage.open(CACHE_NAME);
  const headers = { 'Content-Type': 'application/octet-stream', 'Content-Length': String(model.bytes) };
  if (model.sha256) headers[SHA_HEADER] = model.sha256;
  await cache.put(model.url, new Response(stream, { headers }));
}

export async function deleteCopy(cacheStorage, model) {
  return (await cacheStorage.open(CACHE_NAME)).delete(model.url);
}
