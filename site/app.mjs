// app.mjs: the page's glue. It lists the archives the server offers, downloads one with progress
// into the Cache API (so the next visit works offline), streams it into the engine's memory, and
// sends a tool-calling request as one message (engine.complete: the tool-call session of
// host/toolcall/, built to toolcall.wasm, runs in the engine's driver Worker), showing the reply as it
// streams and then the call as formatted JSON, with the confidence when the model has probe heads.
// The tools JSON is checked as the visitor types, by the same library on this thread.
// All the model's work happens in the engine's workers; this thread only posts messages and draws.

import { createEngine, loadToolcall } from './engine/needle.mjs';

const CACHE = 'needlework-models';
const TOOLCALL = new URL('/toolcall.mjs', location.href);  // the tool-call module (the server maps it to the build)
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
let checker = null;    // the tool-call module on this thread: checks the tools JSON as it is typed
let toolsValid = false;
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
    engine = await createEngine({ threads, wasm, toolcall: TOOLCALL, maxMemoryBytes: model.bytes * 1.3 + 256 * (1 << 20) });
    const t0 = performance.now();
    await engine.load(await openArchive(model));
    if (!engine.tokenizer) throw new Error(`${model.name} has no tokenizer: the page needs one to read requests`);
    await engine.toolcallReady();
    const seconds = ((performance.now() - t0) / 1000).toFixed(1);
    setStatus(`${model.name} is open (${formatBytes(model.bytes)}, ${engine.geometry.num_layers} layers, ` +
      `${threads} thread${threads > 1 ? 's' : ''}; ready in ${seconds} s). It is kept for offline use.`);
    updateSend();
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
  updateSend();
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

// Send is possible with a model open, valid tools and no request running.
function updateSend() {
  $('send').disabled = !engine || !toolsValid || busy;
}

// Checks the tools JSON as it stands (the tool-call library's own check: the message gives the line
// and column of a JSON error, or the tool, parameter and keyword the call grammar cannot take).
function checkTools() {
  const text = $('tools').value;
  const problem = checker ? checker.checkTools(text) : '';
  toolsValid = checker !== null && problem === '';
  const status = $('tools-status');
  if (!checker) status.textContent = 'Checking the tools needs the tool-call module (loading).';
  else if (problem) status.textContent = problem;
  else {
    const n = JSON.parse(text).length;
    status.textContent = `${n} tool${n === 1 ? '' : 's'}, valid for the call grammar.`;
  }
  status.classList.toggle('error', !!problem);
  $('tools').setAttribute('aria-invalid', problem ? 'true' : 'false');
  updateSend();
}

function paragraph(text, className = 'status') {
  return Object.assign(document.createElement('p'), { className, textContent: text });
}

// The envelope (docs/toolcall.md, "The envelope"): the calls as formatted JSON, the reasoning, the
// confidence and which tools the model was offered, or why there is no valid call.
function showEnvelope(envelope) {
  const box = $('calls');
  box.replaceChildren();
  if (envelope.tools_offered) {
    box.append(paragraph(`Tools offered to the model (the 5 the contrastive head ranks first): ` +
      `${envelope.tools_offered.join(', ')}.`));
  }
  if (envelope.reasoning) box.append(paragraph(`Reasoning: ${envelope.reasoning}`));
  envelope.function_calls.forEach((call, i) => {
    const div = document.createElement('div');
    div.className = 'call';
    const h = document.createElement('h3');
    h.textContent = envelope.function_calls.length > 1 ? `Call ${i + 1}: ${call.name}` : call.name;
    const pre = document.createElement('pre');
    pre.textContent = JSON.stringify(call, null, 2);
    div.append(h, pre);
    box.append(div);
  });
  if (envelope.success && envelope.function_calls.length === 0) box.append(paragraph('No tool fits this request ([]).', ''));
  if (!envelope.success) box.append(paragraph(`The reply is not a valid call: ${envelope.error}.`, 'error'));
  if (envelope.confidence !== null)
    box.append(Object.assign(paragraph(`Confidence: ${envelope.confidence.toFixed(3)}`, 'confidence'), { id: 'confidence' }));
}

async function send() {
  if (!engine || busy || !toolsValid) return;
  busy = true;
  updateSend();
  $('stop').disabled = false;
  $('reply').textContent = '';
  $('calls').replaceChildren();
  $('timing').textContent = '';
  try {
    const seed = $('seed').value.trim();
    const request = {
      tools: $('tools').value,
      request: $('query').value,
      max_tokens: Math.max(1, Math.min(1048576, Number($('max-tokens').value) || 1)),
      temperature: Number($('temperature').value),
      top_k: Number($('top-k').value),
      top_p: Number($('top-p').value),
      min_p: Number($('min-p').value),
      repeat_penalty: Number($('rep').value),
      seed: /^\d+$/.test(seed) ? seed : '0',
    };
    const system = $('system').value.trim();
    if (system) request.system = system;
    let text = '';
    const envelope = await engine.complete(request, {
      onText: ({ text: delta }) => {
        text += delta;
        $('reply').textContent = text;
      },
    });
    $('reply').textContent = envelope.text;
    showEnvelope(envelope);
    $('timing').textContent = `${envelope.prompt_tokens} prompt tokens (${envelope.pinned_tokens} pinned) at ` +
      `${envelope.prefill_tps.toFixed(0)} tokens/s; ${envelope.generated_tokens} generated ` +
      `(${envelope.forced_tokens} forced) at ${envelope.decode_tps.toFixed(0)} tokens/s; first token after ` +
      `${envelope.time_to_first_token_ms.toFixed(0)} ms.`;
  } catch (e) {
    $('calls').replaceChildren(paragraph(e.message, 'error'));
  } finally {
    busy = false;
    updateSend();
    $('stop').disabled = true;
  }
}

async function init() {
  $('tools').value = JSON.stringify(DEFAULT_TOOLS, null, 2);
  $('tools').addEventListener('input', checkTools);
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
  checkTools();
  loadToolcall(TOOLCALL).then((module) => { checker = module; checkTools(); }, (e) => {
    $('tools-status').textContent = `The tool-call module did not load: ${e.message}`;
    $('tools-status').classList.add('error');
  });
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
