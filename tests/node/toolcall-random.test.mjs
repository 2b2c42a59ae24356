// 1,000 random (tool set, seed, temperature 1) triples through the driver on micro.cact, a random-
// weight model that writes anything when unconstrained: every envelope must be a successful reply
// (the call grammar and the budget rule finish every reply within max_tokens), and every call in it
// must satisfy its tool's parameters according to ajv, a JSON Schema validator that shares no code
// with ours. docs/toolcall.md ("The session"), docs/engine.md ("Tool calls").
import assert from 'node:assert/strict';
import { test } from 'node:test';

import Ajv from 'ajv';

import { model, rng, withEngine } from './helpers/engine.mjs';

const archive = model('micro.cact');
const TRIPLES = 1000;
const ENGINES = 2;        // two engines of one thread each, on the two cores
const MAX_TOKENS = 256;

// ---- random tool sets in the supported subset of JSON Schema (docs/toolcall.md, "Tools and schemas")

const pick = (r, list) => list[Math.floor(r() * list.length)];
const int = (r, lo, hi) => lo + Math.floor(r() * (hi - lo + 1));

// Property and enum spellings that share prefixes, need escapes or are not ASCII.
const NAMES = ['a', 'ab', 'abc', 'city', 'city_name', 'x1', 'q"uote', 'back\\slash', 'Zürich', 'naïve', 'emoji😀', 'sp ace', 'n'];
const WORDS = ['', 'a', 'ab', 'abc', 'Lisbon', 'Lisboa', 'Zürich', 'tab\there', 'new\nline', '"quoted"', '東京', '😀'];

function stringSchema(r) {
  const s = { type: 'string' };
  const kind = r();
  if (kind < 0.25) {
    s.enum = [...new Set(Array.from({ length: int(r, 1, 4) }, () => pick(r, WORDS)))];
  } else if (kind < 0.3) {
    s.const = pick(r, WORDS);
  } else {
    if (r() < 0.4) s.minLength = int(r, 0, 3);
    if (r() < 0.5) s.maxLength = (s.minLength ?? 0) + int(r, 0, 12);
  }
  return s;
}

function integerSchema(r) {
  const s = { type: 'integer' };
  if (r() < 0.2) {
    s.enum = [...new Set(Array.from({ length: int(r, 1, 4) }, () => int(r, -20, 120)))];
    return s;
  }
  const lo = int(r, -100, 100);
  const hi = lo + int(r, 2, 300);
  if (r() < 0.5) s[r() < 0.5 ? 'minimum' : 'exclusiveMinimum'] = lo;
  if (r() < 0.5) s[r() < 0.5 ? 'maximum' : 'exclusiveMaximum'] = hi;
  return s;
}

function numberSchema(r) {
  const s = { type: 'number' };
  const decimal = () => int(r, -4000, 4000) / pick(r, [1, 4, 8, 1000]);
  if (r() < 0.15) {
    s.enum = [...new Set(Array.from({ length: int(r, 1, 3) }, decimal))];
    return s;
  }
  const lo = decimal();
  const hi = lo + int(r, 1, 4000) / pick(r, [1, 8, 1000]);
  if (r() < 0.5) s[r() < 0.5 ? 'minimum' : 'exclusiveMinimum'] = lo;
  if (r() < 0.5) s[r() < 0.5 ? 'maximum' : 'exclusiveMaximum'] = hi;
  return s;
}

function objectSchema(r, depth) {
  const names = [...new Set(Array.from({ length: int(r, 0, depth === 1 ? 5 : 3) }, () => pick(r, NAMES)))];
  const s = { type: 'object', properties: {} };
  for (const name of names) s.properties[name] = valueSchema(r, depth + 1);
  const required = names.filter(() => r() < 0.5);
  if (required.length || r() < 0.3) s.required = required;
  if (r() < 0.2) s.additionalProperties = false;
  return s;
}

function valueSchema(r, depth) {
  const kinds = ['string', 'string', 'integer', 'number', 'boolean', 'null', 'enum-boolean'];
  if (depth < 4) kinds.push('array', 'object');
  const kind = pick(r, kinds);
  switch (kind) {
    case 'string': return stringSchema(r);
    case 'integer': return integerSchema(r);
    case 'number': return numberSchema(r);
    case 'boolean': return { type: 'boolean', description: 'a flag' };
    case 'enum-boolean': return r() < 0.5 ? { type: 'boolean', const: true } : { type: 'boolean', enum: [false] };
    case 'null': return { type: 'null' };
    case 'array': {
      const s = { type: 'array', items: valueSchema(r, depth + 1) };
      if (r() < 0.5) s.minItems = int(r, 0, 2);
      if (r() < 0.5) s.maxItems = (s.minItems ?? 0) + int(r, 0, 3);
      return s;
    }
    default: return objectSchema(r, depth);
  }
}

const TOOL_NAMES = ['get_weather', 'get_time', 'get_w', 'set_timer', 'send_message', 'tool_0', 'ä_tool'];
const REQUESTS = ["What's the weather in Lisbon tomorrow?", 'Set a timer for ten minutes', 'Send "hi" to Ana',
  'Wie spät ist es in Zürich?', 'Nothing to do here.', '東京の天気は?'];

function toolSet(r) {
  const names = [...new Set(Array.from({ length: int(r, 1, 3) }, () => pick(r, TOOL_NAMES)))];
  return names.map((name) => {
    const tool = { name, description: `The ${name} tool` };
    if (r() < 0.9) tool.parameters = objectSchema(r, 1);
    return tool;
  });
}

// ---- validation by ajv: our objects are closed (docs/toolcall.md), so every object schema given to
// ajv gets additionalProperties: false.
function closed(schema) {
  if (Array.isArray(schema) || schema === null || typeof schema !== 'object') return schema;
  const out = {};
  for (const [k, v] of Object.entries(schema)) out[k] = k === 'enum' || k === 'const' ? v : closed(v);
  if (schema.type === 'object') out.additionalProperties = false;
  if (schema.properties) {
    out.properties = {};
    for (const [k, v] of Object.entries(schema.properties)) out.properties[k] = closed(v);
  }
  return out;
}

test('1,000 random tool sets, seeds and temperature 1: every reply is a valid call, checked by ajv',
  { skip: archive ? false : 'needs build/models', timeout: 600000 }, async (tc) => {
    const r = rng(20261130);
    const triples = Array.from({ length: TRIPLES }, (_, i) => {
      const tools = toolSet(r);
      const seed = ((BigInt(Math.floor(r() * 2 ** 32)) << 32n) | BigInt(Math.floor(r() * 2 ** 32))).toString();
      return { i, tools, request: { tools, request: pick(r, REQUESTS), temperature: 1, seed, max_tokens: MAX_TOKENS } };
    });
    const ajv = new Ajv({ strict: true, allErrors: false });
    const validators = new Map();  // tool -> its compiled validator
    const t0 = performance.now();
    const lanes = Array.from({ length: ENGINES }, (_, lane) =>
      withEngine({ threads: 1 }, 540000, async (engine) => {
        await engine.load(archive);
        const out = [];
        for (let k = lane; k < triples.length; k += ENGINES) {
          const t = triples[k];
          assert.equal(await engine.checkTools(JSON.stringify(t.tools)), '', `triple ${t.i}: the generator made a refused tool set`);
          out.push({ t, envelope: await engine.complete(t.request) });
        }
        return out;
      }));
    const results = (await Promise.all(lanes)).flat();
    const seconds = (performance.now() - t0) / 1000;

    let calls = 0;
    let withCalls = 0;
    let generated = 0;
    let forced = 0;
    let budgetEnds = 0;
    for (const { t, envelope } of results) {
      const where = `triple ${t.i} (seed ${t.request.seed}, tools ${JSON.stringify(t.tools)}): ${envelope.text}`;
      assert.equal(envelope.success, true, `${where}: ${envelope.error}`);
      assert.equal(envelope.error, null, where);
      assert.ok(envelope.generated_tokens <= MAX_TOKENS, where);
      assert.equal(envelope.reply_ids.length, envelope.generated_tokens, where);
      assert.ok(envelope.text.endsWith('</tool_call><|im_end|>'), where);
      assert.equal(envelope.type, envelope.function_calls.length > 0 ? 'call' : 'respond', where);
      for (const call of envelope.function_calls) {
        const tool = t.tools.find((x) => x.name === call.name);
        assert.ok(tool, `${where}: a call of "${call.name}", which is not a tool`);
        if (!validators.has(tool)) validators.set(tool, ajv.compile(closed(tool.parameters ?? { type: 'object', properties: {} })));
        const validate = validators.get(tool);
        assert.ok(validate(call.arguments), `${where}: ajv: ${ajv.errorsText(validate.errors)}`);
        calls++;
      }
      if (envelope.function_calls.length) withCalls++;
      if (envelope.generated_tokens === MAX_TOKENS) budgetEnds++;
      generated += envelope.generated_tokens;
      forced += envelope.forced_tokens;
    }
    tc.diagnostic(`${results.length} replies in ${seconds.toFixed(1)} s: ${withCalls} with calls (${calls} calls), ` +
      `${budgetEnds} ended by the budget, ${generated} tokens, ${(100 * forced / generated).toFixed(1)}% forced`);
    assert.equal(results.length, TRIPLES);
    // not vacuous: many replies hold calls, whose arguments ajv checked (about 19% with these settings)
    assert.ok(withCalls >= TRIPLES / 10, `only ${withCalls} replies hold a call`);
  });
