// support.mjs: whether this browser can run the engine, and if not, a plain message that says why
// and what to do (docs/page.md, "When the browser cannot run it"). The checks, in order:
// WebAssembly at all, cross-origin isolation (the page tries its service worker first: app.mjs),
// SharedArrayBuffer, wasm SIMD, wasm threads (shared memory and atomics), and enough memory for the
// model about to open.

// (module (func (result v128) i32.const 0 i32x4.splat)): valid only with fixed-width SIMD.
const SIMD_MODULE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b, 0x03,
  0x02, 0x01, 0x00, 0x0a, 0x08, 0x01, 0x06, 0x00, 0x41, 0x00, 0xfd, 0x11, 0x0b]);
// (module (memory 1 1 shared) (func (result i32) i32.const 0 i32.atomic.load)): valid only with threads.
const THREADS_MODULE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7f, 0x03,
  0x02, 0x01, 0x00, 0x05, 0x04, 0x01, 0x03, 0x01, 0x01, 0x0a, 0x0a, 0x01, 0x08, 0x00, 0x41, 0x00,
  0xfe, 0x10, 0x02, 0x00, 0x0b]);

// {id, title, text} of the first missing capability, or null when the engine can run. `g`: the
// global object (a parameter for the tests); `isolationTried`: the service worker already had its
// one reload.
export function missingCapability(g = globalThis, { isolationTried = false } = {}) {
  if (typeof g.WebAssembly !== 'object') {
    return { id: 'wasm', title: 'This browser cannot run WebAssembly.',
      text: 'The model runs as WebAssembly in this tab. Use a current Chrome, Edge, Firefox or Safari ' +
            '(WebAssembly may also be switched off by a policy or a security setting).' };
  }
  if (!g.crossOriginIsolated) {
    const file = g.location?.protocol === 'file:';
    // Browsers isolate a page, and run service workers, only in a secure context (HTTPS or localhost).
    const insecure = !file && g.isSecureContext === false;
    return { id: 'isolation', title: 'This page is not cross-origin isolated, so it cannot share memory between threads.',
      text: file
        ? 'It was opened as a file. Serve the folder over HTTP instead: npm start, or any static file server ' +
          '(python3 -m http.server in build/site/), then open http://127.0.0.1:PORT/.'
        : insecure
          ? 'It was opened over plain HTTP from another address. Browsers isolate a page (and run the service ' +
            'worker that does it here) only over HTTPS or from localhost: open it with https://, or publish it ' +
            'on a server that has HTTPS.'
        : isolationTried
          ? 'Its service worker could not add the isolation headers (private windows and some settings block ' +
            'service workers). Ask the site to send Cross-Origin-Opener-Policy: same-origin and ' +
            'Cross-Origin-Embedder-Policy: require-corp, or try a normal window.'
          : 'The server does not send the Cross-Origin-Opener-Policy and Cross-Origin-Embedder-Policy headers, ' +
            'and this browser has no service worker to add them.' };
  }
  if (typeof g.SharedArrayBuffer !== 'function') {
    return { id: 'sab', title: 'This browser does not offer SharedArrayBuffer.',
      text: 'The engine\'s threads share one memory, which needs SharedArrayBuffer. Update the browser, or ' +
            'check that it is not switched off (some privacy settings and enterprise policies do that).' };
  }
  if (!g.WebAssembly.validate(SIMD_MODULE)) {
    return { id: 'simd', title: 'This browser\'s WebAssembly has no SIMD.',
      text: 'The engine\'s kernels use 128-bit WebAssembly SIMD (Chrome 91, Firefox 89, Safari 16.4 and later). ' +
            'Update the browser.' };
  }
  if (!g.WebAssembly.validate(THREADS_MODULE)) {
    return { id: 'threads', title: 'This browser\'s WebAssembly has no threads.',
      text: 'The engine needs shared WebAssembly memory and atomics. Update the browser.' };
  }
  return null;
}

// A message when a shared memory of up to `bytes` cannot be had (null when it can): reserved for
// real, as the engine will, then dropped (a shared memory reserves its maximum at once; its pages
// are only committed as they are used). Browsers cap a tab's memory well below the machine's.
export function memoryShortfall(bytes, g = globalThis) {
  const pages = Math.min(65536, Math.ceil(bytes / 65536));
  try {
    new g.WebAssembly.Memory({ initial: 1, maximum: pages, shared: true });
    return null;
  } catch {
    return { id: 'memory', title: 'Not enough memory for this model.',
      text: `The browser could not give this tab ${Math.round(bytes / 2 ** 20)} MiB of memory. Close other tabs ` +
            'or programs and try again, or open a smaller model.' };
  }
}
