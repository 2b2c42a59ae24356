// sw.js: the page's service worker (docs/page.md, "Offline and static hosting"). Two jobs:
//
//  * Isolation on hosts that cannot set headers. Shared memory needs a cross-origin isolated page,
//    which needs two response headers; this worker adds them to every answer it passes on, so the
//    page, its workers and its modules all carry them. (The page reloads once after registering it.)
//  * Offline use. The page's own files (this folder: the page, its modules, engine.wasm, the
//    tool-call module, the two lists) are fetched network-first and a copy of each is kept; when the
//    network fails, the copy answers. The archives (.cact) are not touched here: the page streams
//    them itself, with progress and Cancel, and keeps its own checked copy in the Cache API.

const PAGE_CACHE = 'needlework-page';
const SCOPE = new URL(self.registration.scope);

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

// The response with COOP same-origin and COEP require-corp added (and CORP, which a cross-origin
// CORS answer may lack). An opaque response (status 0) cannot be changed and is passed on as it is.
function isolated(response) {
  if (response.status === 0) return response;
  const headers = new Headers(response.headers);
  headers.set('Cross-Origin-Opener-Policy', 'same-origin');
  headers.set('Cross-Origin-Embedder-Policy', 'require-corp');
  if (!headers.has('Cross-Origin-Resource-Policy')) headers.set('Cross-Origin-Resource-Policy', 'cross-origin');
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}

// One of the page's own files: the network's answer (a copy kept when it is a whole 200), or the
// copy kept last time when the network fails.
async function networkFirst(event) {
  const request = event.request;
  try {
    const response = await fetch(request);
    if (response.status === 200) {
      const copy = response.clone();
      event.waitUntil(caches.open(PAGE_CACHE).then((cache) => cache.put(request, copy)).catch(() => {}));
    }
    return isolated(response);
  } catch (error) {
    const kept = await (await caches.open(PAGE_CACHE)).match(request, { ignoreSearch: true });
    if (kept) return isolated(kept);
    throw error;
  }
}

self.addEventListener('fetch', (event) => {
  const request = event.request;
  // A request the browser may only answer from its HTTP cache, across origins, cannot be re-fetched.
  if (request.cache === 'only-if-cached' && request.mode !== 'same-origin') return;
  const url = new URL(request.url);
  if (url.pathname.endsWith('.cact') || request.headers.has('Range')) return;  // the browser's own path
  const own = url.origin === SCOPE.origin && url.pathname.startsWith(SCOPE.pathname) && request.method === 'GET';
  event.respondWith(own ? networkFirst(event) : fetch(request).then(isolated));
});
