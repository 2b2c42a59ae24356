// app.mjs: the page's glue. It lists the archives the server offers, downloads one with progress
// into the Cache API (so the next visit works offline), streams it into the engine's memory, and
// runs a tool-calling request, showing the reply as it streams and the parsed calls at the end.
// All the work happens in the engine's workers; this thread only posts messages and draws.

import { createEngine } from './engine/needle.mjs';
import { renderPrompt, parseReply } from './prompt.mjs';

const CACHE = 'needlework-models';
const $ = (id) => document.getElementById(id);

const DEFAULT_TOOLS = [
  {
    name: 'get_weather',
    description: 'Weather forecast for a city on a given day',
    parameters: {
      type: 'object',
      properties: {
        city: { type: 'string', description: 'City name' },
        day: { type: 'string', enum: ['today', 'tomorrow'] },
      },
      required: ['city'],
    },
  },
  {
    name: 'set_timer',
    description: 'Start a countdown timer',
    parameters: { type: 'object', properties: { minutes: { type: 'integer' } }, required: ['minutes'] },
  },
];

let engine = null;
let models = [];
let pieces = null;     // bytes of every piece, for decoding on this thread while the driver generates
let busy = false;

function setStatus(text, isError = false) {
  const el = $('model-status');
  el.textContent = text;
  el.classList.toggle('error', isError);
}

function formatBytes(n) {
  return n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(1)} MiB` : `${(n / 1024).toFixed(0)} KiB`;
}

// Threads by default: three quarters of the cores, at most 16 (a descheduled helper stalls a job).
function defaultThreads() {
  const cores = navigator.hardwareConcurrency || 2;
  return Math.max(1, Math.min(16, Math.floor(cores * 0.75)));
}

async function cachedCopy(model) {
  const cache = await caches.open(CACHE);
  const hit = await cache.match(model.url);
  if (!hit) return null;
  if (Number(hit.headers.get('content-length')) !== model.bytes) {
    await cache.delete(model.url);  // a stale or partial copy: fetch it again
    return null;
  }
  return hit;
}

// The archive as a Response whose body reports progress; downloads and caches it on a miss.
async function openArchive(model) {
  const progress = $('progress');
  progress.hidden = false;
  progress.value = 0;
  let response = await cachedCopy(model);
  const fromCache = !!response;
  if (!response) {
    response = await fetch(model.url);
    if (!response.ok) throw new Error(`${model.name}: HTTP ${response.status}`);
    const [forCache, forEngine] = response.body.tee();
    const headers = { 'Content-Type': 'application/octet-stream', 'Content-Length': String(model.bytes) };
    caches.open(CACHE).then((cache) => cache.put(model.url, new Response(forCache, { headers })))
      .catch((e) => console.warn('could not cache the model:', e));
    response = new Response(forEngine, { headers });
  }
  let received = 0;
  const counted = response.body.pipeThrough(new TransformStream({
    transform(chunk, controller) {
      received += chunk.length;
      progress.value = received / model.bytes;
      setStatus(`${fromCache ? 'Reading the downloaded copy' : 'Downloading'}: ${formatBytes(received)} of ${formatBytes(model.bytes)}`);
      controller.enqueue(chunk);
    },
  }));
  return new Response(counted, { headers: { 'Content-Length': String(model.bytes) } });
}

async function openModel() {
  const model = models[$('model-select').selectedIndex];
  if (!model) return;
  await unloadModel();
  $('open').disabled = true;
  try {
    const threads = Math.max(1, Math.min(16, Number($('threads').value) || 1));
    const wasm = new URL('/engine.wasm', location.href);
    engine = await createEngine({ threads, wasm, maxMemoryBytes: model.bytes * 1.3 + 256 * (1 << 20) });
    const t0 = performance.now();
    await engine.load(await openArchive(model));
    if (!engine.tokenizer) throw new Error(`${model.name} has no tokenizer: the page needs one to read requests`);
    const vocab = engine.geometry.vocab;
    pieces = await engine.call('pieceBytes', { ids: Array.from({ length: vocab }, (_, i) => i) });
    const seconds = ((performance.now() - t0) / 1000).toFixed(1);
    setStatus(`${model.name} is open (${formatBytes(model.bytes)}, ${engine.geometry.num_layers} layers, ` +
      `${threads} thread${threads > 1 ? 's' : ''}; ready in ${seconds} s). It is kept for offline use.`);
    $('send').disabled = false;
    $('unload').disabled = false;
    $('forget').disabled = false;
  } catch (e) {
    setStatus(`Could not open ${model.name}: ${e.message}`, true);
    await unloadModel();
  } finally {
    $('progress').hidden = true;
    $('open').disabled = false;
  }
}

// Terminates the driver and helpers, which drops the last references to the shared memory.
async function unloadModel() {
  if (!engine) return;
  const old = engine;
  engine = null;
  pieces = null;
  $('send').disabled = true;
  $('unload').disabled = true;
  try { await old.close(); } catch (e) { console.warn(e); }
  setStatus('No model open.');
}

async function forgetModel() {
  const model = models[$('model-select').selectedIndex];
  if (!model) return;
  await (await caches.open(CACHE)).delete(model.url);
  setStatus(`Deleted the downloaded copy of ${model.name}.`);
}

// The text of ids: all piece bytes first, then one UTF-8 decode, one leading space dropped.
function decodeIds(ids) {
  const parts = ids.map((id) => pieces[id] ?? new Uint8Array());
  const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) { all.set(p, at); at += p.length; }
  const text = new TextDecoder().decode(all);
  return text.startsWith(' ') ? text.slice(1) : text;
}

function showCalls(text) {
  const box = $('calls');
  box.replaceChildren();
  const reply = parseReply(text);
  if (reply.reasoning) {
    const p = document.createElement('p');
    p.className = 'status';
    p.textContent = `Reasoning: ${reply.reasoning}`;
    box.append(p);
  }
  if (!reply.calls) {
    const p = document.createElement('p');
    p.className = 'error';
    p.textContent = `No tool call: ${reply.error}.`;
    box.append(p);
    return;
  }
  if (reply.calls.length === 0) {
    box.append(Object.assign(document.createElement('p'), { textContent: 'No tool fits this request ([]).' }));
  }
  for (const call of reply.calls) {
    const div = document.createElement('div');
    div.className = 'call';
    const h = document.createElement('h3');
    h.textContent = call.name;
    const pre = document.createElement('pre');
    pre.textContent = JSON.stringify(call.arguments, null, 2);
    div.append(h, pre);
    box.append(div);
  }
}

async function send() {
  if (!engine || busy) return;
  busy = true;
  $('send').disabled = true;
  $('stop').disabled = false;
  $('reply').textContent = '';
  $('calls').replaceChildren();
  $('timing').textContent = '';
  try {
    let tools;
    try {
      tools = JSON.parse($('tools').value);
    } catch (e) {
      throw new Error(`the tools are not valid JSON: ${e.message}`);
    }
    const prompt = renderPrompt({ system: $('system').value.trim(), tools, query: $('query').value });
    const ids = [engine.tokenizer.bos_id, ...await engine.encode(prompt)];
    const maxSeq = engine.geometry.max_seq_len;
    if (ids.length >= maxSeq) throw new Error(`the prompt is ${ids.length} tokens; this model's context holds ${maxSeq}`);
    const maxTokens = Math.min(Number($('max-tokens').value) || 1, maxSeq - ids.length);
    const imEnd = (await engine.encode('<|im_end|>', { raw: true }))[0];
    const out = [];
    await engine.reset();
    const result = await engine.generate(ids, {
      maxTokens,
      seed: Number($('seed').value) >>> 0,
      stopIds: [engine.tokenizer.eos_id, imEnd],
      sampler: {
        temperature: Number($('temperature').value),
        topK: Number($('top-k').value),
        topP: Number($('top-p').value),
        minP: Number($('min-p').value),
        repetitionPenalty: Number($('rep').value),
      },
      onToken: (id) => {
        out.push(id);
        $('reply').textContent = decodeIds(out);
      },
    });
    const text = decodeIds(result.generated);
    $('reply').textContent = text;
    showCalls(text);
    const prefill = result.prefillTokens / (result.prefillMs / 1000);
    const decode = result.decodeTokens > 0 ? result.decodeTokens / (result.decodeMs / 1000) : 0;
    $('timing').textContent = `${ids.length} prompt tokens at ${prefill.toFixed(0)} tokens/s; ` +
      `${result.generated.length} generated at ${decode.toFixed(0)} tokens/s.`;
  } catch (e) {
    $('calls').replaceChildren(Object.assign(document.createElement('p'), { className: 'error', textContent: e.message }));
  } finally {
    busy = false;
    $('send').disabled = !engine;
    $('stop').disabled = true;
  }
}

async function init() {
  $('tools').value = JSON.stringify(DEFAULT_TOOLS, null, 2);
  $('threads').value = defaultThreads();
  if (!globalThis.crossOriginIsolated) {
    $('isolation').hidden = false;
    $('open').disabled = true;
    setStatus('Shared memory is not available on this page.', true);
    return;
  }
  $('open').addEventListener('click', openModel);
  $('unload').addEventListener('click', unloadModel);
  $('forget').addEventListener('click', forgetModel);
  $('send').addEventListener('click', send);
  $('stop').addEventListener('click', () => engine?.stop());
  addEventListener('pagehide', () => { engine?.close(); });
  try {
    const response = await fetch('/models/index.json');
    models = response.ok ? await response.json() : [];
  } catch {
    models = [];
  }
  const cached = await Promise.all(models.map((m) => cachedCopy(m).catch(() => null)));
  $('model-select').append(...models.map((m, i) =>
    new Option(`${m.name} (${formatBytes(m.bytes)})${cached[i] ? ', downloaded' : ''}`)));
  if (models.length === 0) {
    setStatus('The server offers no model: run npm start, which makes build/models/.', true);
    $('open').disabled = true;
  }
}

init();
