// models-json.mjs: keeps site/models.json true to the archives it lists (docs/page.md, "models.json").
// Each entry that is not a dev entry and whose url is models/NAME names the file models/NAME of the
// repository; its `bytes` and `sha256` are that file's. The page checks a download and the Cache API
// copy against them, so they must never go stale.
//
//   node scripts/models-json.mjs           rewrites bytes and sha256 from the files (other keys kept)
//   node scripts/models-json.mjs --check   exits 1 with one line per entry that disagrees
//   --models DIR                           the archives are in DIR, not models/ (a stand-in)
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const listPath = path.join(root, 'site', 'models.json');
const KEYS = ['name', 'url', 'bytes', 'sha256', 'description', 'tools'];

// The file of an entry (models/NAME: NAME in `modelsDir`), or throws with the entry's name.
export function fileOf(entry, modelsDir = path.join(root, 'models')) {
  const m = /^models\/([A-Za-z0-9._-]+\.cact)$/.exec(entry.url ?? '');
  if (!m) throw new Error(`models.json: entry "${entry.name}": url "${entry.url}" is not models/NAME.cact`);
  return path.join(modelsDir, m[1]);
}

// {bytes, sha256} of a file.
export function measure(file) {
  const data = fs.readFileSync(file);
  return { bytes: data.length, sha256: crypto.createHash('sha256').update(data).digest('hex') };
}

// Every way `list` (the parsed models.json) is not what the page needs: one message per problem.
export function problems(list, modelsDir = path.join(root, 'models')) {
  if (!Array.isArray(list) || list.length === 0) return ['models.json: not a non-empty array'];
  const out = [];
  list.forEach((entry, i) => {
    const where = `models.json: entry ${i} ("${entry?.name}")`;
    for (const k of KEYS) if (!(k in (entry ?? {}))) out.push(`${where}: no "${k}"`);
    // optional: the calibrated no-call bias the page sends with each request (docs/toolcall.md §8.4;
    // its range is the session's to check)
    const bias = entry?.no_call_bias;
    if (bias !== undefined && typeof bias !== 'number')
      out.push(`${where}: no_call_bias ${JSON.stringify(bias)} is not a number`);
    // optional: the calibrated weight of a drawn call's doubt in the same decision (§8.4)
    const doubt = entry?.no_call_doubt;
    if (doubt !== undefined && typeof doubt !== 'number')
      out.push(`${where}: no_call_doubt ${JSON.stringify(doubt)} is not a number`);
    // optional: the calibrated credit of calls whose tools the request names (§8.4)
    const named = entry?.no_call_named;
    if (named !== undefined && typeof named !== 'number')
      out.push(`${where}: no_call_named ${JSON.stringify(named)} is not a number`);
    // optional: the calibrated named steer (§8.4)
    const steer = entry?.steer_named;
    if (steer !== undefined && typeof steer !== 'boolean')
      out.push(`${where}: steer_named ${JSON.stringify(steer)} is not true or false`);
    // optional: span strings for a model that only copies strings from the request (§8.5)
    const spans = entry?.span_strings;
    if (spans !== undefined && typeof spans !== 'boolean')
      out.push(`${where}: span_strings ${JSON.stringify(spans)} is not true or false`);
    if (entry?.dev) { out.push(`${where}: a dev entry in the list visitors see`); return; }
    let file;
    try { file = fileOf(entry, modelsDir); } catch (e) { out.push(e.message); return; }
    if (!fs.existsSync(file)) { out.push(`${where}: ${`models/${path.basename(file)}`} does not exist`); return; }
    const { bytes, sha256 } = measure(file);
    if (entry.bytes !== bytes) out.push(`${where}: bytes ${entry.bytes}, but ${`models/${path.basename(file)}`} has ${bytes}`);
    if (entry.sha256 !== sha256) out.push(`${where}: sha256 ${entry.sha256}, but ${`models/${path.basename(file)}`} has ${sha256}`);
  });
  return out;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const list = JSON.parse(fs.readFileSync(listPath, 'utf8'));
  const at = process.argv.indexOf('--models');
  const modelsDir = at > 0 ? path.resolve(process.argv[at + 1]) : path.join(root, 'models');
  if (process.argv.includes('--check')) {
    const found = problems(list, modelsDir);
    for (const p of found) console.error(p);
    process.exit(found.length ? 1 : 0);
  }
  for (const entry of list) Object.assign(entry, measure(fileOf(entry, modelsDir)));
  fs.writeFileSync(listPath, `${JSON.stringify(list, null, 2)}\n`);
  console.log(`models-json: ${path.relative(root, listPath)} updated (${list.length} entr${list.length === 1 ? 'y' : 'ies'})`);
}
