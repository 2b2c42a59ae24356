// page.mjs (test helper): the page in headless Chromium as a visitor meets it. The dev server
// (site/server.mjs) on a free port with a request log, a fresh browser profile, the shipped model of
// site/models.json, screenshots under BUILD/screenshots/, and the few steps every page test takes
// (open a model, send a request and wait for its answer). docs/page.md, "Tests".
import fs from 'node:fs';
import path from 'node:path';

import { startServer } from '../../../site/server.mjs';
import { browserMissing, withBrowser } from './browser.mjs';
import { buildDir, ensureWasm, root, toolcallPath } from './engine.mjs';

// The shipped archives (NEEDLE_MODELS_DIR names another folder, for a stand-in while developing).
export const modelsDir = path.resolve(process.env.NEEDLE_MODELS_DIR ?? path.join(root, 'models'));
export const modelsList = JSON.parse(fs.readFileSync(path.join(root, 'site', 'models.json'), 'utf8'));
export const shipped = modelsList[0];
export const shippedPath = path.join(modelsDir, path.basename(shipped.url));
export const toolsets = JSON.parse(fs.readFileSync(path.join(root, 'site', 'toolsets.json'), 'utf8'));
export const screenshotsDir = path.join(buildDir, 'screenshots');

// Why the page tests cannot run here (false when they can): no browser, no tool-call module, or the
// shipped model not installed yet (models/ is filled when training ends, `npm run train -- --install`;
// the same rule as shipped-model.test.mjs).
// `pageSkipNoModel`: the same for a test that opens no model.
export const pageSkipNoModel = browserMissing || (!fs.existsSync(toolcallPath) ? `needs ${toolcallPath}` : false);
export const pageSkip = pageSkipNoModel ||
  (!fs.existsSync(shippedPath) ? `${shippedPath} is not there yet (the shipped model; npm run train -- --install makes it)` : false);

// performance.measureUserAgentSpecificMemory() answers at once, not at the next natural garbage
// collection (up to 20 s later): the page shows the memory before and after Unload with it.
const MEASURE_NOW = ['--enable-blink-features=ForceEagerMeasureMemory'];

// The longest a single browser step (a click, a navigation, a wait) may take.
export const STEP_TIMEOUT = 180000;

// Runs body({page, context, url, log, errors, server}) against a fresh dev server and browser.
// `log`: the server's answers [{method, path, status, bytes}]; `errors`: uncaught page errors.
// options: dev (offer BUILD/models too), browser (withBrowser's options).
export async function withPage({ dev = false, browser = {} } = {}, body) {
  ensureWasm();
  const log = [];
  const server = await startServer({ port: 0, buildDir, modelsDir, dev, log: (e) => log.push(e) });
  const url = `http://127.0.0.1:${server.address().port}/`;
  try {
    return await withBrowser(async (context) => {
      // Playwright's 30 s default for each step is too short on a loaded 2-core machine (CI builds
      // everything beside the tests); a wait that never ends still fails, at its own timeout.
      context.setDefaultTimeout(STEP_TIMEOUT);
      const page = await context.newPage();
      const errors = [];
      page.on('pageerror', (e) => errors.push(String(e)));
      return body({ page, context, url, log, errors, server });
    }, { ...browser, args: [...MEASURE_NOW, ...(browser.args ?? [])] });
  } finally {
    server.close();
  }
}

// Saves a full-page screenshot as BUILD/screenshots/NAME; returns its path.
export async function screenshot(page, name) {
  fs.mkdirSync(screenshotsDir, { recursive: true });
  const file = path.join(screenshotsDir, name);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

// How many times the server sent (a part of) the file whose URL path ends with `name`.
export const downloads = (log, name) =>
  log.filter((e) => e.method === 'GET' && e.path.endsWith(`/${name}`) && (e.status === 200 || e.status === 206)).length;

// How many Opens have ended on this page (the page counts them in body[data-opens]).
export const opensEnded = (page) => page.evaluate(() => Number(document.body.dataset.opens ?? 0));

// Waits until more than `since` Opens have ended (0: the first, e.g. the one a reload starts);
// returns the status line.
export async function waitOpened(page, since = 0, timeout = 240000) {
  await page.waitForFunction((n) => Number(document.body.dataset.opens ?? 0) > n, since, { timeout });
  return page.textContent('#model-status');
}

// Runs `action` (which starts an Open) and waits for that Open to end; returns the status line.
export async function opening(page, action) {
  const since = await opensEnded(page);
  await action();
  return waitOpened(page, since);
}

// Chooses the listed model whose URL ends with `name` and presses Open; returns the status line.
export async function openListed(page, name) {
  await page.waitForSelector(`label.model[data-url$="/${name}"]`);
  await page.click(`label.model[data-url$="/${name}"]`);
  return opening(page, () => page.click('#open'));
}

// The newest turn once its reply ended: {state, sent, reply, calls (parsed), stats, error, tokens}.
export async function lastTurn(page, timeout = 240000) {
  await page.waitForFunction(() => {
    const turns = document.querySelectorAll('#turns .turn');
    return turns.length > 0 && turns[turns.length - 1].dataset.state !== 'streaming';
  }, null, { timeout });
  return page.evaluate(() => {
    const t = [...document.querySelectorAll('#turns .turn')].at(-1);
    return {
      state: t.dataset.state,
      sent: t.querySelector('.sent').textContent,
      reply: t.querySelector('.reply').textContent,
      tokens: Number(t.querySelector('.reply').dataset.tokens),
      calls: [...t.querySelectorAll('.call-json')].map((p) => JSON.parse(p.textContent)),
      stats: t.querySelector('.stats')?.textContent ?? '',
      status: [...t.querySelectorAll('.answer > p.status')].map((p) => p.textContent),
      error: t.querySelector('.error')?.textContent ?? '',
      sendToFirstMs: t.dataset.sendToFirstMs === '' || t.dataset.sendToFirstMs === undefined ? null : Number(t.dataset.sendToFirstMs),
    };
  });
}

// Types `text` into the request box and sends it with Enter; returns lastTurn().
export async function send(page, text) {
  const before = await page.$$eval('#turns .turn', (ts) => ts.length);
  await page.fill('#query', text);
  await page.press('#query', 'Enter');
  await page.waitForFunction((n) => document.querySelectorAll('#turns .turn').length > n, before);
  return lastTurn(page);
}
