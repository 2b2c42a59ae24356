// app.mjs: the page (docs/page.md). It checks that the browser can run the engine (and, on a static
// host, has its service worker add the isolation headers), lists the models of models.json with
// "downloaded" badges, opens one (the listed archive from the Cache API copy or the network, a file
// from disk or dropped on the page, or a URL) by streaming it into wasm memory with progress, speed,
// time left and Cancel, keeps a session of turns with tool results, ready tool sets and an editor
// for your own, and settings kept between visits. All of the model's work happens in the engine's
// workers (site/engine/): one engine.complete per Send, whose text events this thread only shows.

import { createEngine, EngineError, loadToolcall, ToolcallError } from './engine/needle.mjs';
import { archiveResponse, ArchiveError, cachedCopy, checkedStream, deleteCopy, formatBytes, progressText, storeCopy } from './ui/download.mjs';
import { Conversation, keptReply, readToolResult, sendsOnKey, statsText } from './ui/session.mjs';
import { defaults, loadSettings, modelFields, samplingFields, sanitize, saveSettings } from './ui/settings.mjs';
import { memoryShortfall, missingCapability } from './ui/support.mjs';
import { addResultForm, addTurn } from './ui/turns.mjs';

const BASE = new URL('./', import.meta.url);         // the page's folder, wherever it is hosted
const ENGINE_WASM = new URL('engine.wasm', BASE);
const TOOLCALL = new URL('toolcall.mjs', BASE);
const RELOAD_KEY = 'needlework.isolation-reload';    // sessionStorage: the service worker's one reload
const MODEL_KEY = 'needlework.model';                // localStorage: the URL of the model last chosen
const TOOLS_KEY = 'needlework.tools';                // localStorage: {set, custom} of the tools editor
const CUSTOM = 'custom';
const $ = (id) => document.getElementById(id);

const state = {
  models: [],            // models.json entries, urls made absolute
  cached: new Set(),     // the urls of the models with a downloaded copy that checks out
  toolsets: [],          // toolsets.json
  settings: null,
  engine: null,
  open: null,            // the entry (or {name, bytes}) of the archive open now
  opening: null,         // the AbortController of an Open in progress
  busy: false,           // a request is running
  stopping: false,       // Stop was pressed during this request
  checker: null,         // the tool-call module on this thread: checks the tools as they are typed
  toolsValid: false,
  conversation: new Conversation(),
  dropResultForm: null,  // removes the tool-result boxes of the newest reply
};

// ---- status lines ------------------------------------------------------------------------------

function setStatus(text, isError = false) {
  $('model-status').textContent = text;
  $('model-status').classList.toggle('error', isError);
}

function showSupport(problem) {
  $('support-title').textContent = problem.title;
  $('support-text').textContent = problem.text;
  $('support').hidden = false;
  $('support').dataset.reason = problem.id;
}

// ---- capability and isolation --------------------------------------------------------------------

// Registers sw.js (which keeps the page's own files for offline use) on an isolated page; a failure
// only costs offline use.
function registerServiceWorker() {
  if (!('serviceWorker' in navigator) || !isSecureContext) return;
  navigator.serviceWorker.register(new URL('sw.js', BASE))
    .catch((e) => console.warn('no service worker: the page will need the network next time:', e));
}

// Registers sw.js and reloads once so that it serves the page with the isolation headers. Returns
// 'reloading', or 'tried' when it did not help (the reload already happened, or no service worker).
async function isolateWithServiceWorker() {
  if (!('serviceWorker' in navigator) || !isSecureContext || sessionStorage.getItem(RELOAD_KEY)) return 'tried';
  try {
    await navigator.serviceWorker.register(new URL('sw.js', BASE));
    // A worker that never activates (blocked by a policy or a setting) must not hang the page.
    const late = new Promise((_, reject) => setTimeout(() => reject(new Error('not active after 5 s')), 5000));
    await Promise.race([navigator.serviceWorker.ready, late]);
  } catch (e) {
    console.warn('the isolation service worker did not start:', e);
    return 'tried';
  }
  sessionStorage.setItem(RELOAD_KEY, '1');
  location.reload();
  return 'reloading';
}

// ---- models ------------------------------------------------------------------------------------------

async function readJson(name) {
  const response = await fetch(new URL(name, BASE));
  if (!response.ok) throw new Error(`${name}: HTTP ${response.status}`);
  return response.json();
}

// The label of a tool set id ("timers" -> "Timers and alarms").
const toolsetName = (id) => state.toolsets.find((t) => t.id === id)?.name ?? id;

function modelItem(model, index, cached) {
  const input = Object.assign(document.createElement('input'), { type: 'radio', name: 'model', value: String(index) });
  const label = document.createElement('label');
  label.className = 'model';
  label.dataset.url = model.url;
  const title = document.createElement('span');
  title.className = 'model-title';
  title.append(Object.assign(document.createElement('strong'), { textContent: model.name }),
    ` ${formatBytes(model.bytes)}`);
  const badge = Object.assign(document.createElement('span'), { className: 'badge', textContent: 'downloaded', hidden: !cached });
  title.append(' ', badge);
  const about = Object.assign(document.createElement('span'), { className: 'model-about', textContent: model.description ?? '' });
  const tools = Object.assign(document.createElement('span'), { className: 'model-tools',
    textContent: model.tools?.length ? `Trained for: ${model.tools.map(toolsetName).join(', ')}.` : '' });
  label.append(input, title, about, tools);
  return label;
}

async function renderModels() {
  const box = $('models');
  const cached = await Promise.all(state.models.map((m) => cachedCopy(caches, m).then(Boolean, () => false)));
  state.models.forEach((m, i) => { if (cached[i]) state.cached.add(m.url); });
  const items = state.models.map((m, i) => modelItem(m, i, cached[i]));
  const legend = box.querySelector('legend');
  box.replaceChildren(legend, ...items.filter((_, i) => !state.models[i].dev));
  if (state.models.some((m) => m.dev)) {
    box.append(Object.assign(document.createElement('p'), { className: 'status', textContent: 'Test archives (the server runs with --dev):' }),
      ...items.filter((_, i) => state.models[i].dev));
  }
  const remembered = state.models.findIndex((m) => m.url === localStorage.getItem(MODEL_KEY));
  const chosen = box.querySelector(`input[value="${remembered >= 0 ? remembered : 0}"]`);
  if (chosen) chosen.checked = true;
  box.addEventListener('change', () => {
    const m = selectedModel();
    if (m) localStorage.setItem(MODEL_KEY, m.url);
    updateButtons();
  });
  return cached;
}

function selectedModel() {
  const input = $('models').querySelector('input[name=model]:checked');
  return input ? state.models[Number(input.value)] : null;
}

async function refreshBadge(model) {
  const hit = await cachedCopy(caches, model).catch(() => null);
  const label = [...$('models').querySelectorAll('label.model')].find((l) => l.dataset.url === model.url);
  if (label) label.querySelector('.badge').hidden = !hit;
  if (hit) state.cached.add(model.url);
  else state.cached.delete(model.url);
  updateButtons();
  return !!hit;
}

// ---- opening an archive --------------------------------------------------------------------------

// What an archive needs besides itself: the engine's memory is the archive, its KV cache and buffers.
const memoryFor = (bytes) => Math.ceil(bytes * 1.3) + 256 * 2 ** 20;

function showProgress(p, verb) {
  $('progress-box').hidden = false;
  $('progress').value = p.fraction ?? 0;
  if (p.fraction === null) $('progress').removeAttribute('value');
  $('progress-text').textContent = `${verb}: ${progressText(p)}`;
}

// The visitor's words for an error while opening `name`.
function openError(name, e) {
  if (e instanceof EngineError && e.errorName === 'ERR_MEMORY') {
    const m = memoryShortfall(memoryFor(state.open?.bytes ?? 0)) ?? { text: 'The engine ran out of memory for this archive.' };
    return `Could not open ${name}: ${m.text}`;
  }
  if (e instanceof EngineError && e.record !== undefined && /^archive rejected/.test(e.message))
    return `Could not open ${name}: it is not a valid Needle 2 archive (${e.errorName}, record ${e.record}).`;
  return `Could not open ${name}: ${e.message}`;
}

// Streams `body` (checked against `expected`: {bytes, sha256}) into a fresh engine. Returns the
// checked {bytes, sha256, keepError}; `keep(stream)`, when given, receives a copy of the checked
// bytes to store, and keepError is why it could not be stored (the browser's storage is full or
// off: the model is open all the same), or null.
async function loadInto(body, expected, { verb, signal, keep = null }) {
  const short = memoryShortfall(memoryFor(expected.bytes));
  if (short) throw new Error(short.text);
  const engine = await createEngine({ threads: state.settings.threads, wasm: ENGINE_WASM, toolcall: TOOLCALL,
    maxMemoryBytes: memoryFor(expected.bytes) });
  state.engine = engine;
  if (signal.aborted) throw new ArchiveError('cancelled', 'cancelled');
  const checked = checkedStream(body, { ...expected, signal, onProgress: (p) => showProgress(p, verb) });
  let stream = checked.stream;
  let stored = null;
  if (keep) {
    const [forEngine, forCache] = stream.tee();
    stream = forEngine;
    stored = keep(forCache).then(() => null, (e) => e);
  }
  await engine.load(archiveResponse(stream, expected.bytes));
  const result = await checked.result;
  const keepError = stored ? await stored : null;
  if (!engine.tokenizer) throw new Error('the archive has no tokenizer, which the page needs to read requests');
  await engine.toolcallReady();
  return { ...result, keepError };
}

// Opens `source`: {kind: 'listed', model} | {kind: 'file', file} | {kind: 'url', url}.
async function openSource(source) {
  if (state.opening || state.busy) return;
  await unload({ quiet: true });
  const controller = new AbortController();
  state.opening = controller;
  const name = source.kind === 'listed' ? source.model.name : source.kind === 'file' ? source.file.name : source.url;
  updateButtons();
  setStatus(`Opening ${name}…`);
  const t0 = performance.now();
  try {
    const how = source.kind === 'listed' ? await openListed(source.model, controller.signal)
      : source.kind === 'file' ? await openFile(source.file, controller.signal)
        : await openUrl(source.url, controller.signal);
    const g = state.engine.geometry;
    const seconds = ((performance.now() - t0) / 1000).toFixed(1);
    setStatus(`${name} is open (${formatBytes(state.open.bytes)}, ${g.num_layers} layers, ${state.settings.threads} ` +
      `thread${state.settings.threads > 1 ? 's' : ''}; ${how}; ready in ${seconds} s).`);
    $('model-status').dataset.open = name;
    showEngineMemory();
  } catch (e) {
    await closeEngine();
    state.open = null;
    // Cancel aborts the fetch and the checking stream; whichever error arrives first, it was Cancel.
    const cancelled = controller.signal.aborted;
    if (!cancelled) console.warn(e);
    setStatus(cancelled ? 'Cancelled. Nothing was kept.' : openError(name, e), !cancelled);
  } finally {
    state.opening = null;
    $('progress-box').hidden = true;
    document.body.dataset.opens = String(Number(document.body.dataset.opens ?? 0) + 1);  // for the tests
    updateButtons();
  }
}

// A listed model: the Cache API copy when it checks out against models.json, else the network
// (and the copy stored as it streams). A copy that fails the check is deleted and downloaded again.
async function openListed(model, signal) {
  state.open = model;
  localStorage.setItem(MODEL_KEY, model.url);
  const expected = { bytes: model.bytes, sha256: model.sha256 ?? null };
  const copy = await cachedCopy(caches, model);
  if (copy) {
    try {
      await loadInto(copy.body, expected, { verb: 'Reading the downloaded copy', signal });
      return 'read from the downloaded copy';
    } catch (e) {
      if (!(e instanceof ArchiveError) || e.kind === 'cancelled') throw e;
      await deleteCopy(caches, model);
      await closeEngine();
      setStatus(`The downloaded copy of ${model.name} did not check out (${e.message}); downloading it again.`);
    }
  }
  // no-store: the checked Cache API copy is the only one kept (Delete must leave no second copy in
  // the HTTP cache), and Cancel and progress always see the network's bytes
  const response = await fetch(model.url, { signal, cache: 'no-store' });
  if (!response.ok) throw new Error(`the server answered HTTP ${response.status} for ${model.url}`);
  const r = await loadInto(response.body, expected, { verb: 'Downloading', signal, keep: (stream) => storeCopy(caches, model, stream) });
  await refreshBadge(model);
  return r.keepError ? `downloaded, but not kept for the next visit: ${r.keepError.message}` : 'downloaded and kept for offline use';
}

async function openFile(file, signal) {
  state.open = { name: file.name, bytes: file.size };
  if (file.size === 0) throw new Error('the file is empty');
  const r = await loadInto(file.stream(), { bytes: file.size, sha256: null }, { verb: 'Reading the file', signal });
  return `from this computer, sha256 ${r.sha256.slice(0, 16)}…`;
}

// A URL the visitor pasted: a cross-origin server must allow the read (CORS); the body is not kept.
async function openUrl(url, signal) {
  let response;
  try {
    response = await fetch(url, { mode: 'cors', signal });
  } catch (e) {
    if (signal.aborted) throw new ArchiveError('cancelled', 'cancelled');
    const host = new URL(url).host;
    throw new Error(`the browser could not read it. If ${host} answers at all, it does not allow other sites to ` +
      'read the file (it sends no Access-Control-Allow-Origin header). Download the file and open it from this computer instead.');
  }
  if (!response.ok) throw new Error(`the server answered HTTP ${response.status}`);
  const length = Number(response.headers.get('Content-Length'));
  const known = Number.isSafeInteger(length) && length > 0 && !response.headers.get('Content-Encoding');
  let body = response.body;
  let bytes = length;
  if (!known) {  // no usable length: read it all first (the engine reserves memory for a known size)
    const blob = await new Response(checkedStream(body, { signal, onProgress: (p) => showProgress(p, 'Downloading') }).stream).blob();
    body = blob.stream();
    bytes = blob.size;
  }
  state.open = { name: url, bytes };
  const r = await loadInto(body, { bytes, sha256: null }, { verb: 'Downloading', signal });
  return `from the URL, sha256 ${r.sha256.slice(0, 16)}…`;
}

async function closeEngine() {
  const engine = state.engine;
  state.engine = null;
  if (engine) {
    try { await engine.close(); } catch (e) { console.warn(e); }
  }
}

// ---- memory and unloading --------------------------------------------------------------------------

// The tab's memory as the browser measures it (cross-origin isolated pages only), or null.
async function tabMemory() {
  if (!performance.measureUserAgentSpecificMemory) return null;
  try {
    const timeout = new Promise((resolve) => setTimeout(() => resolve(null), 30000));
    const r = await Promise.race([performance.measureUserAgentSpecificMemory(), timeout]);
    return r ? r.bytes : null;
  } catch {
    return null;
  }
}

const mib = (n) => `${(n / 2 ** 20).toFixed(1)} MiB`;

function showEngineMemory() {
  const engine = state.engine;
  if (!engine) return;
  const workers = 1 + engine.helpers.length;
  $('memory').textContent = `Engine memory: ${mib(engine.memory.buffer.byteLength)} of shared wasm memory, ${workers} worker${workers > 1 ? 's' : ''}.`;
}

// Terminates the driver and helpers (dropping the last references to the shared memory, which the
// browser then frees), and shows the memory before and after.
async function unload({ quiet = false } = {}) {
  if (!state.engine || state.busy) return;
  const engineBytes = state.engine.memory.buffer.byteLength;
  const workers = 1 + state.engine.helpers.length;
  const name = state.open?.name ?? 'the model';
  const before = quiet ? null : tabMemory();
  if (before) $('memory').textContent = 'Measuring the memory before unloading…';
  const beforeBytes = await before;
  await closeEngine();
  state.open = null;
  delete $('model-status').dataset.open;
  updateButtons();
  if (quiet) return;
  setStatus(`${name} is unloaded: its ${workers} worker${workers > 1 ? 's are' : ' is'} stopped and its memory released.`);
  const line = `Memory: the engine held ${mib(engineBytes)}` + (beforeBytes !== null ? `; the tab used ${mib(beforeBytes)} before unloading` : '');
  $('memory').textContent = `${line}.`;
  // The browser frees the memory at its next garbage collection: measured a moment later.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const afterBytes = beforeBytes === null ? null : await tabMemory();
  if (afterBytes !== null && !state.engine) {
    $('memory').textContent = `${line} and ${mib(afterBytes)} after.`;
    $('memory').dataset.before = String(beforeBytes);
    $('memory').dataset.after = String(afterBytes);
  }
}

// ---- tools ----------------------------------------------------------------------------------------

function toolsText(set) { return JSON.stringify(set.tools, null, 2); }

function currentSet() { return state.toolsets.find((t) => t.id === $('toolset').value) ?? null; }

function saveTools() {
  try {
    localStorage.setItem(TOOLS_KEY, JSON.stringify({ set: $('toolset').value, custom: $('toolset').value === CUSTOM ? $('tools').value : null }));
  } catch { /* storage disabled: the tools last for this visit */ }
}

function chooseToolset() {
  const set = currentSet();
  if (set) $('tools').value = toolsText(set);
  saveTools();
  checkTools();
}

// The tools as typed: switching to "your own" on the first edit of a ready set.
function editTools() {
  if ($('toolset').value !== CUSTOM) $('toolset').value = CUSTOM;
  saveTools();
  checkTools();
}

// Checks the tools JSON as it stands (the tool-call library's own check: the line and column of a
// JSON error, or the tool, parameter and keyword the call grammar cannot take).
function checkTools() {
  const text = $('tools').value;
  const problem = state.checker ? state.checker.checkTools(text) : '';
  state.toolsValid = state.checker !== null && problem === '';
  const status = $('tools-status');
  if (!state.checker) status.textContent = 'Loading the tool-call module to check the tools…';
  else if (problem) status.textContent = problem;
  else {
    const n = JSON.parse(text).length;
    status.textContent = `${n} tool${n === 1 ? '' : 's'}, valid for the call grammar.`;
  }
  status.classList.toggle('error', !!problem);
  $('tools').setAttribute('aria-invalid', problem ? 'true' : 'false');
  updateButtons();
}

function initTools() {
  const select = $('toolset');
  select.append(...state.toolsets.map((t) => new Option(t.name, t.id)), new Option('Your own', CUSTOM));
  let saved = null;
  try { saved = JSON.parse(localStorage.getItem(TOOLS_KEY) ?? 'null'); } catch { saved = null; }
  if ((saved?.set === CUSTOM && typeof saved.custom === 'string') || state.toolsets.length === 0) {
    select.value = CUSTOM;
    $('tools').value = saved?.custom ?? '[]';
  } else {
    select.value = state.toolsets.some((t) => t.id === saved?.set) ? saved.set : state.toolsets[0].id;
    $('tools').value = toolsText(currentSet());
  }
  select.addEventListener('change', chooseToolset);
  $('tools').addEventListener('input', editTools);
  checkTools();
}

// ---- the session ------------------------------------------------------------------------------------

function updateButtons() {
  const idle = !state.opening && !state.busy;
  const model = selectedModel();
  $('open').disabled = !idle || !model;
  $('open-url').disabled = !idle;
  $('file').disabled = !idle;
  $('cancel').hidden = !state.opening;
  $('unload').disabled = !idle || !state.engine;
  $('delete').disabled = !idle || !model || !state.cached.has(model.url);
  $('send').disabled = !state.engine || !state.toolsValid || state.busy || !!state.opening;
  $('stop').disabled = !state.busy;
  $('example').disabled = !currentSet() || state.busy;
  $('clear').disabled = state.busy;
}

// One request: the message (null: the model continues after the tool results just added).
async function run(message, sent) {
  if (!state.engine || state.busy || !state.toolsValid) return false;
  state.dropResultForm?.();
  state.dropResultForm = null;
  state.busy = true;
  state.stopping = false;
  updateButtons();
  const turn = addTurn($('turns'), sent);
  const fields = { tools: $('tools').value, ...samplingFields(state.settings), ...modelFields(state.open) };
  const request = state.conversation.request(message, fields);
  const threads = state.settings.threads;
  const t0 = performance.now();
  let first = null;
  let kept = false;
  try {
    const envelope = await state.engine.complete(request, {
      onText: ({ text }) => {
        if (first === null) first = performance.now() - t0;
        turn.append(text);
      },
    });
    const stopped = state.stopping && /^stopped after/.test(envelope.error ?? '');
    turn.finish(envelope, { stats: statsText(envelope, { sendToFirstMs: first, threads, stopped }), state: stopped ? 'stopped' : 'done' });
    turn.article.dataset.sendToFirstMs = first === null ? '' : first.toFixed(1);
    if (!stopped) {
      state.conversation.keep(message, keptReply(envelope));
      kept = true;
      if (envelope.function_calls.length > 0) offerResults(turn, envelope.function_calls);
    }
  } catch (e) {
    turn.fail(e instanceof ToolcallError && e.status === 'refused' ? `Not sent: ${e.message}`
      : state.stopping ? 'Stopped before the first reply token. Not kept in the session.' : `Failed: ${e.message}`);
    if (state.stopping) turn.article.dataset.state = 'stopped';
  } finally {
    state.busy = false;
    updateButtons();
    showEngineMemory();
  }
  return kept;
}

// The boxes for what the tools returned, under the newest reply.
function offerResults(turn, calls) {
  state.dropResultForm = addResultForm(turn, calls, (texts) => {
    const values = texts.map(readToolResult);
    const missing = values.findIndex((v) => v === null);
    if (missing >= 0) return `Type what ${calls[missing].name} returned first.`;
    if (!state.engine) return 'Open a model first.';
    if (state.busy) return 'Wait for the current reply.';
    const results = calls.map((c, i) => ({ name: c.name, result: values[i].value }));
    state.conversation.addToolResults(results);
    run(null, { kind: 'results', results }).then((kept) => { if (!kept) state.conversation.turns.pop(); });
    return null;
  });
}

function sendRequest() {
  const text = $('query').value.trim();
  if (!text || $('send').disabled) return;
  $('query').value = '';
  run(text, { kind: 'request', text }).then((kept) => { if (!kept && !$('query').value) $('query').value = text; });
}

function clearSession() {
  if (state.busy) return;
  state.conversation.clear();
  state.dropResultForm = null;
  $('turns').replaceChildren();
}

// ---- settings ---------------------------------------------------------------------------------------

const SETTING_INPUTS = { threads: 'threads', temperature: 'temperature', topP: 'top-p', maxTokens: 'max-tokens', seed: 'seed' };

function showSettings() {
  for (const [k, id] of Object.entries(SETTING_INPUTS)) $(id).value = String(state.settings[k]);
  $('constrained').checked = state.settings.constrained;
}

function readSettings() {
  const raw = Object.fromEntries(Object.entries(SETTING_INPUTS).map(([k, id]) => [k, $(id).value]));
  raw.constrained = $('constrained').checked;
  const threadsBefore = state.settings.threads;
  state.settings = sanitize(raw, navigator.hardwareConcurrency);
  saveSettings(localStorage, state.settings);
  if (state.engine && !state.busy && !state.opening && state.settings.threads !== threadsBefore)
    state.engine.setThreads(state.settings.threads).then(showEngineMemory, (e) => console.warn(e));
}

function initSettings() {
  state.settings = loadSettings(localStorage, navigator.hardwareConcurrency);
  showSettings();
  for (const id of [...Object.values(SETTING_INPUTS), 'constrained']) $(id).addEventListener('change', readSettings);
  $('defaults').addEventListener('click', () => {
    state.settings = defaults(navigator.hardwareConcurrency);
    saveSettings(localStorage, state.settings);
    showSettings();
    readSettings();
  });
}

// ---- start --------------------------------------------------------------------------------------------

function bindEvents() {
  $('open').addEventListener('click', () => { const m = selectedModel(); if (m) openSource({ kind: 'listed', model: m }); });
  $('cancel').addEventListener('click', () => state.opening?.abort());
  $('unload').addEventListener('click', () => unload());
  $('delete').addEventListener('click', async () => {
    const m = selectedModel();
    if (!m) return;
    await deleteCopy(caches, m);
    await refreshBadge(m);
    setStatus(`Deleted the downloaded copy of ${m.name}${state.open === m ? ' (it stays open until you unload it)' : ''}.`);
  });
  $('file').addEventListener('change', () => {
    const file = $('file').files[0];
    $('file').value = '';
    if (file) openSource({ kind: 'file', file });
  });
  $('open-url').addEventListener('click', () => {
    let url;
    try { url = new URL($('url').value.trim(), location.href); } catch { url = null; }
    if (!url || !/^https?:$/.test(url.protocol)) { setStatus('Type the http:// or https:// address of a .cact archive.', true); return; }
    openSource({ kind: 'url', url: url.href });
  });
  $('send').addEventListener('click', sendRequest);
  $('query').addEventListener('keydown', (event) => {
    if (!sendsOnKey(event)) return;
    event.preventDefault();
    sendRequest();
  });
  $('stop').addEventListener('click', () => {
    if (!state.busy || !state.engine) return;
    state.stopping = true;
    state.engine.stop();
  });
  $('example').addEventListener('click', () => { const s = currentSet(); if (s) { $('query').value = s.example.request; $('query').focus(); } });
  $('clear').addEventListener('click', clearSession);
  bindDrop();
  addEventListener('pagehide', () => { state.engine?.close(); });
}

// A .cact dropped anywhere on the page opens like a chosen file.
function bindDrop() {
  let depth = 0;
  const overlay = $('drop-overlay');
  const hasFiles = (e) => [...(e.dataTransfer?.types ?? [])].includes('Files');
  addEventListener('dragenter', (e) => { if (hasFiles(e)) { depth++; overlay.hidden = false; } });
  addEventListener('dragleave', () => { depth = Math.max(0, depth - 1); if (!depth) overlay.hidden = true; });
  addEventListener('dragover', (e) => { if (hasFiles(e)) e.preventDefault(); });
  addEventListener('drop', (e) => {
    if (!hasFiles(e)) return;
    e.preventDefault();
    depth = 0;
    overlay.hidden = true;
    const file = e.dataTransfer.files[0];
    if (file) openSource({ kind: 'file', file });
  });
}

async function init() {
  let isolationTried = !!sessionStorage.getItem(RELOAD_KEY);
  if (!globalThis.crossOriginIsolated && typeof WebAssembly === 'object') {
    if (await isolateWithServiceWorker() === 'reloading') return;
    isolationTried = true;
  }
  if (globalThis.crossOriginIsolated) {
    sessionStorage.removeItem(RELOAD_KEY);
    registerServiceWorker();
  }
  const missing = missingCapability(globalThis, { isolationTried });
  if (missing) {
    showSupport(missing);
    $('app').hidden = true;
    return;
  }
  initSettings();
  bindEvents();
  // Either list may fail to load (a broken deployment): the page then works with what it has (your
  // own tools, your own archive) and says what is missing.
  const [toolsets, models] = await Promise.allSettled([readJson('toolsets.json'), readJson('models.json')]);
  state.toolsets = toolsets.status === 'fulfilled' ? toolsets.value : [];
  const listUrl = new URL('models.json', BASE);
  state.models = models.status === 'fulfilled' ? models.value.map((m) => ({ ...m, url: new URL(m.url, listUrl).href })) : [];
  initTools();
  loadToolcall(TOOLCALL).then((module) => { state.checker = module; checkTools(); }, (e) => {
    $('tools-status').textContent = `The tool-call module did not load: ${e.message}`;
    $('tools-status').classList.add('error');
  });
  const cached = await renderModels();
  if (state.models.length === 0) {
    setStatus(models.status === 'rejected' ? `The list of models did not load (${models.reason.message}): open an archive of your own.`
      : 'No model is listed in models.json: open an archive of your own.', true);
    updateButtons();
    return;
  }
  const shortfall = memoryShortfall(memoryFor(state.models[0].bytes));
  if (shortfall) showSupport(shortfall);
  updateButtons();
  // The chosen model opens by itself when its downloaded copy is here (nothing is downloaded unasked).
  const model = selectedModel();
  if (model && cached[state.models.indexOf(model)]) openSource({ kind: 'listed', model });
}

init();
