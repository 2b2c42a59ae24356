// The tool-call session in both engines: needle-run (the C++ Reference) and needle-wasm --tools /
// --batch (engine.wasm with toolcall.wasm) give the same envelope (calls, reply ids, text, counts,
// confidence, the ranked tools) for the same request and seed; both refuse bad tools and over-long
// prompts with the same message and exit 1; tools longer than the KV window are pinned and seen;
// more than 5 tools are ranked by the contrastive head; a tool result fed back with --history.
// docs/toolcall.md ("The session", "The request", "The envelope"), docs/engine.md ("Tool calls").
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { ensureWasm, model, root, tempPath, tool, toolcallPath, wasmPath } from './helpers/engine.mjs';

const micro = model('micro.cact');
const small = model('small.cact');
const needleRun = tool('needle-run');
const skip = !micro || !small ? 'needs build/models' : !needleRun ? 'needs build/bin/needle-run'
  : !fs.existsSync(toolcallPath) ? 'needs the tool-call module (scripts/build-toolcall-wasm.sh)' : false;

// Everything the session decides; the timings and memory differ between the engines by nature.
const SAME = ['type', 'success', 'error', 'function_calls', 'reasoning', 'text', 'confidence', 'no_call_margin',
  'call_doubt', 'calls_named', 'withdrawn_calls', 'prompt_tokens',
  'pinned_tokens', 'reused_prompt_tokens', 'generated_tokens', 'forced_tokens', 'reply_ids', 'tools_offered'];
const decided = (envelope) => Object.fromEntries(SAME.map((k) => [k, envelope[k]]));

function run(program, args) {
  const r = program === 'needle-run'
    ? spawnSync(needleRun, args, { encoding: 'utf8', maxBuffer: 1 << 26 })
    : spawnSync(process.execPath, [path.join(root, 'tools', 'needle-wasm.mjs'), ...args, '--wasm', wasmPath,
      '--toolcall', toolcallPath], { encoding: 'utf8', maxBuffer: 1 << 26 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

// Runs both CLIs with the same arguments (--prompt for needle-wasm is needle-run's positional);
// returns [native, wasm] results.
function both(args, request) {
  const native = run('needle-run', request === undefined ? args : [...args, request]);
  const wasm = run('needle-wasm', request === undefined ? args : [...args, '--prompt', request]);
  return [native, wasm];
}

function file(name, value) {
  const p = tempPath(name);
  fs.writeFileSync(p, typeof value === 'string' ? value : JSON.stringify(value));
  return p;
}

const WEATHER = {
  name: 'get_weather', description: 'Current weather and forecast for a city',
  parameters: {
    type: 'object',
    properties: {
      location: { type: 'string', description: 'City name', maxLength: 24 },
      unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
      days: { type: 'integer', minimum: 1, maximum: 14 },
    },
    required: ['location'],
  },
};
const TIMER = {
  name: 'set_timer', description: 'Start a countdown timer',
  parameters: { type: 'object', properties: { minutes: { type: 'number', exclusiveMinimum: 0, maximum: 600 }, label: { type: 'string' } }, required: ['minutes'] },
};
const MESSAGE = {
  name: 'send_message', description: 'Send a text message to a contact',
  parameters: {
    type: 'object',
    properties: { to: { type: 'array', items: { type: 'string', minLength: 1 }, minItems: 1, maxItems: 3 }, body: { type: 'string' }, urgent: { type: 'boolean' } },
    required: ['to', 'body'],
  },
};

test('the same request and seed give the same envelope in needle-run and needle-wasm (micro and small)',
  { skip, timeout: 600000 }, () => {
    ensureWasm();
    const lines = [];
    const toolSets = [[WEATHER, TIMER], [MESSAGE, WEATHER, TIMER], []];
    const requests = ["What's the weather in Lisbon for the next 3 days?", 'Remind me in 10 minutes. Tell Ana "on my way".'];
    const options = [{ temperature: 0 }, { temperature: 1 }, { temperature: 0.7, top_k: 40, top_p: 0.9 },
      { temperature: 1.3, min_p: 0.05, repeat_penalty: 1.2, repeat_window: 16 }];
    let k = 0;
    for (const tools of toolSets)
      for (const request of requests)
        for (const o of options) {
          const seed = k % 3 === 0 ? String(k) : (18446744073709551615n - BigInt(k)).toString();  // up to 2^64 - 1
          lines.push({ tools, request, seed, system: k % 2 ? 'date: 2026-11-30' : '', max_tokens: 160, ...o });
          k++;
        }
    // a string of tools (the way needle-wasm --tools passes them), and one unconstrained request
    lines.push({ tools: JSON.stringify([WEATHER]), request: 'Weather in Oslo?', temperature: 1, seed: 7, max_tokens: 64 });
    lines.push({ tools: [WEATHER, TIMER], request: 'Weather in Oslo?', temperature: 1, seed: 8, max_tokens: 64, constrain: false });
    // the no-call bias decides the list from both engines' logprobs (docs/toolcall.md §8.4)
    for (const [bias, temperature] of [[0.7, 0], [-2, 1], [3, 0.7]])
      lines.push({ tools: [WEATHER, TIMER], request: 'Set a timer for 5 minutes', temperature, seed: 11, max_tokens: 96, no_call_bias: bias });
    // the no-call doubt weighs the call's own log-probs from both engines (§8.4): a low weight that
    // keeps the calls and a high one that withdraws them
    for (const [seed, doubt] of [[16, 100], [22, 100], [16, 0.5], [22, 0.5]])
      lines.push({ tools: [WEATHER, TIMER], request: 'Set a timer for 5 minutes', temperature: 1, seed, max_tokens: 96, no_call_bias: -100, no_call_doubt: doubt });
    // the named credit (§8.4): a bias that would close the list, a credit that opens it where the
    // request names a tool, and the calls kept where the request names their tools and withdrawn where
    // it does not ("Five minutes of weather" names get_weather, not set_timer)
    for (const [request, seed] of [['Set a timer for 5 minutes', 4], ['Five minutes of weather', 4], ['Set a timer for 5 minutes', 22], ['Five minutes of weather', 22]])
      lines.push({ tools: [WEATHER, TIMER], request, temperature: 1, seed, max_tokens: 96, no_call_bias: 50, no_call_named: 60 });
    // the named steer (§8.4): "weather" names get_weather alone, so every first call is get_weather
    for (const seed of [3, 9, 15])
      lines.push({ tools: [WEATHER, TIMER], request: 'Check the weather in Oslo', temperature: 1, seed, max_tokens: 96, no_call_bias: -100, steer_named: true });
    // span strings: both engines build the same span trie and take the same draws from it (§8.5)
    for (const seed of [12, 13, 14])
      lines.push({ tools: [WEATHER, TIMER], request: 'Weather in Évora, “Alto Alentejo” please', temperature: 1, seed, max_tokens: 96, no_call_bias: -100, span_strings: true });
    const batch = file('parity.jsonl', lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
    for (const archive of [micro, small]) {
      const [native, wasm] = both(['--archive', archive, '--batch', batch]);
      assert.equal(native.status, 0, native.stderr);
      assert.equal(wasm.status, 0, wasm.stderr);
      const a = native.stdout.trim().split('\n').map((l) => JSON.parse(l));
      const b = wasm.stdout.trim().split('\n').map((l) => JSON.parse(l));
      // the calls as both CLIs print them, byte for byte (a number keeps the form the model wrote:
      // needle-wasm prints the module's envelope text, not a JSON.parse round trip)
      const callsText = (line) => line.slice(line.indexOf('"function_calls":'), line.indexOf(',"reasoning":'));
      assert.deepEqual(wasm.stdout.trim().split('\n').map(callsText), native.stdout.trim().split('\n').map(callsText));
      assert.equal(a.length, lines.length);
      assert.equal(b.length, lines.length);
      let calls = 0;
      for (let i = 0; i < lines.length; i++) {
        assert.deepEqual(decided(b[i]), decided(a[i]), `${path.basename(archive)} line ${i + 1}: ${JSON.stringify(lines[i])}`);
        if (lines[i].constrain !== false) assert.equal(a[i].success, true, `line ${i + 1}: ${a[i].error}`);
        calls += a[i].function_calls.length;
      }
      assert.ok(calls > 0, `${path.basename(archive)}: no reply holds a call`);
      // every reply whose list was decided gives its margin, and the weighed ones their doubt
      const weighed = a.filter((e, i) => lines[i].no_call_doubt !== undefined);
      assert.ok(weighed.every((e) => typeof e.no_call_margin === 'number' && typeof e.call_doubt === 'number'));
      assert.ok(weighed.some((e) => e.withdrawn_calls.length > 0 && e.function_calls.length === 0),
        `${path.basename(archive)}: no call withdrawn`);
      assert.ok(weighed.some((e) => e.withdrawn_calls.length === 0 && e.function_calls.length > 0),
        `${path.basename(archive)}: every call withdrawn`);
      const credited = a.filter((e, i) => lines[i].no_call_named !== undefined);
      assert.ok(credited.every((e) => e.function_calls.length + e.withdrawn_calls.length === 0 || typeof e.calls_named === 'boolean'));
      assert.ok(credited.some((e) => e.calls_named === true && e.function_calls.length > 0),
        `${path.basename(archive)}: no named call kept`);
      assert.ok(credited.some((e) => e.calls_named === false && e.withdrawn_calls.length > 0),
        `${path.basename(archive)}: no unnamed call withdrawn`);
      const steered = a.filter((e, i) => lines[i].steer_named);
      assert.ok(steered.every((e) => e.function_calls.length === 0 || e.function_calls[0].name === 'get_weather'));
      assert.ok(steered.some((e) => e.function_calls.length > 0), `${path.basename(archive)}: no steered call`);
      // micro has probe heads (a confidence), small has none
      assert.equal(a.every((e) => e.confidence === null), archive === small);
    }
  });

test('malformed tools JSON and an unsupported keyword: exit 1 and the same message from both CLIs',
  { skip, timeout: 120000 }, () => {
    const cases = [
      ['malformed.json', '[{"name": "t",\n  "parameters": {"type": "object" "properties": {}}}]',
        `tools JSON at line 2, column 35: expected ',' or '}' after an object member`],
      ['keyword.json', [{ name: 'set_alarm', parameters: { type: 'object', properties: { at: { type: 'string', format: 'date-time' } } } }],
        'tool "set_alarm" parameter "at": "format" is not supported'],
      ['nested.json', [{ name: 'q', parameters: { type: 'object', properties: { xs: { type: 'array', items: { type: 'string', pattern: '^a' } } } } }],
        'tool "q" parameter "xs[]": "pattern" is not supported'],
      ['oneof.json', [{ name: 'q', parameters: { type: 'object', oneOf: [] } }], 'tool "q" parameters: "oneOf" is not supported'],
    ];
    for (const [name, tools, message] of cases) {
      const p = file(name, tools);
      const [native, wasm] = both(['--archive', micro, '--tools', p], 'hello');
      for (const [program, r] of [['needle-run', native], ['needle-wasm', wasm]]) {
        assert.equal(r.status, 1, `${program} ${name}: ${r.stderr}`);
        assert.equal(r.stdout, '', `${program} ${name} printed an envelope`);
        assert.equal(r.stderr.trim(), `${program}: ${p}: ${message}`);
      }
    }
    // In a batch the refused line prints its error envelope, the others run, and the exit status is 1.
    const batch = file('refusals.jsonl', [
      JSON.stringify({ tools: [WEATHER], request: 'Weather in Rome?', seed: 1, max_tokens: 32 }),
      JSON.stringify({ tools: [{ name: 'x', parameters: { type: 'object', properties: { p: { type: 'string', pattern: 'a' } } } }], request: 'x' }),
      JSON.stringify({ tools: [WEATHER], request: 'Weather in Rome?', temprature: 1 }),
      JSON.stringify({ tools: [WEATHER], request: 'Weather in Rome?', seed: 2, max_tokens: 32 }),
    ].join('\n'));
    const [native, wasm] = both(['--archive', micro, '--batch', batch]);
    for (const [program, r] of [['needle-run', native], ['needle-wasm', wasm]]) {
      assert.equal(r.status, 1, program);
      const envelopes = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
      assert.deepEqual(envelopes.map((e) => e.success), [true, false, false, true], program);
      assert.equal(envelopes[1].error, 'tool "x" parameter "p": "pattern" is not supported');
      assert.equal(envelopes[2].error, 'request: unknown key "temprature"');
      assert.match(r.stderr, new RegExp(`${program}: ${batch.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} line 2: tool "x"`));
    }
    assert.deepEqual(wasm.stdout.trim().split('\n').map((l) => decided(JSON.parse(l))),
      native.stdout.trim().split('\n').map((l) => decided(JSON.parse(l))));
  });

test('a prompt longer than max_seq_len is refused by both CLIs with both lengths', { skip, timeout: 120000 }, () => {
  const tools = file('weather.json', [WEATHER]);
  const long = Array.from({ length: 1500 }, (_, i) => `word${i}`).join(' ');
  const [native, wasm] = both(['--archive', micro, '--tools', tools], long);
  for (const [program, r] of [['needle-run', native], ['needle-wasm', wasm]]) {
    assert.equal(r.status, 1, program);
    assert.match(r.stderr.trim(), new RegExp(`^${program}: the prompt is \\d+ tokens; this model's context holds 2048$`));
  }
  assert.equal(wasm.stderr.replace('needle-wasm', ''), native.stderr.replace('needle-run', ''));
});

test('tools longer than the 64-position window are pinned and the request runs the same in both', { skip, timeout: 300000 }, () => {
  // micro.cact: window 64, context 2048. These tools alone take far more than 64 positions.
  const tools = [WEATHER, TIMER, MESSAGE].map((t) => ({ ...t, description: `${t.description}. ${'Use it only when the request asks for it. '.repeat(3)}` }));
  const p = file('long-tools.json', tools);
  for (const seed of ['1', '2', '3']) {
    const [native, wasm] = both(['--archive', micro, '--tools', p, '--temperature', '1', '--seed', seed, '--max-tokens', '200'],
      `Send "running late" to Ana and Bo, then tell me the weather in Porto. ${'I will be on the road for a while, so please be quick. '.repeat(5)}`);
    assert.equal(native.status, 0, native.stderr);
    assert.equal(wasm.status, 0, wasm.stderr);
    const a = JSON.parse(native.stdout);
    const b = JSON.parse(wasm.stdout);
    assert.ok(a.pinned_tokens > 64, `pinned ${a.pinned_tokens}`);
    assert.ok(a.prompt_tokens + a.generated_tokens > 64 + a.pinned_tokens, 'the window slid');
    assert.equal(a.success, true, a.error);
    assert.deepEqual(decided(b), decided(a));
  }
});

test('more than 5 tools: the contrastive head ranks them, and both engines offer the same 5', { skip, timeout: 300000 }, () => {
  const tools = [WEATHER, TIMER, MESSAGE,
    { name: 'play_music', description: 'Play a song or an artist', parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] } },
    { name: 'get_time', description: 'The time in a city' },
    { name: 'add_event', description: 'Add an event to the calendar', parameters: { type: 'object', properties: { title: { type: 'string' }, day: { type: 'integer', minimum: 1, maximum: 31 } }, required: ['title'] } },
    { name: 'translate', description: 'Translate text', parameters: { type: 'object', properties: { text: { type: 'string' }, to: { type: 'string', enum: ['en', 'pt', 'de'] } }, required: ['text', 'to'] } },
    { name: 'convert_units', description: 'Convert a quantity', parameters: { type: 'object', properties: { value: { type: 'number' }, from: { type: 'string' }, to: { type: 'string' } } } },
  ];
  const p = file('eight-tools.json', tools);
  const offered = [];
  for (const request of ['Play some jazz', 'How do you say thanks in German?', 'Weather in Faro']) {
    const [native, wasm] = both(['--archive', micro, '--tools', p, '--temperature', '1', '--seed', '11'], request);
    assert.equal(native.status, 0, native.stderr);
    assert.equal(wasm.status, 0, wasm.stderr);
    const a = JSON.parse(native.stdout);
    const b = JSON.parse(wasm.stdout);
    assert.deepEqual(decided(b), decided(a), request);
    assert.equal(a.tools_offered.length, 5);
    // the 5 keep their original order, and the calls use only them
    const order = a.tools_offered.map((name) => tools.findIndex((t) => t.name === name));
    assert.deepEqual(order, [...order].sort((x, y) => x - y));
    for (const call of a.function_calls) assert.ok(a.tools_offered.includes(call.name));
    offered.push(a.tools_offered.join(','));
    // without the heads, every tool is offered
    const [plain] = [run('needle-wasm', ['--archive', micro, '--tools', p, '--no-heads', '--prompt', request, '--max-tokens', '8'])];
    assert.equal(plain.status, 0, plain.stderr);
    const c = JSON.parse(plain.stdout);
    assert.equal(c.tools_offered, null);
    assert.equal(c.confidence, null);
    assert.ok(c.prompt_tokens > a.prompt_tokens);
  }
  // random weights rank arbitrarily, but the ranking depends on the request
  assert.ok(new Set(offered).size > 1, `the same 5 tools for every request: ${offered[0]}`);
});

test('--history: a tool result fed back as a following turn, the same in both engines', { skip, timeout: 300000 }, () => {
  const tools = file('history-tools.json', [WEATHER, TIMER]);
  const history = file('history.json', [
    { role: 'user', content: "What's the weather in Lisbon?" },
    { role: 'assistant', content: '<tool_call>[{"name":"get_weather","arguments":{"location":"Lisbon"}}]</tool_call>' },
    { role: 'tool', content: [{ name: 'get_weather', result: { temperature_c: 21, sky: 'clear' } }] },
  ]);
  const seen = new Set();
  for (const seed of ['1', '2', '3', '4']) {
    const args = ['--archive', micro, '--tools', tools, '--history', history, '--temperature', '1', '--seed', seed, '--max-tokens', '48'];
    const native = run('needle-run', args);
    const wasm = run('needle-wasm', args);
    assert.equal(native.status, 0, native.stderr);
    assert.equal(wasm.status, 0, wasm.stderr);
    const a = JSON.parse(native.stdout);
    assert.deepEqual(decided(JSON.parse(wasm.stdout)), decided(a), `seed ${seed}`);
    assert.equal(a.success, true, a.error);
    seen.add(a.type);
    // a follow-up request after the tool result
    const [n2, w2] = both([...args, '--system', 'date: 2026-11-30'], 'And tomorrow?');
    assert.equal(n2.status, 0, n2.stderr);
    assert.deepEqual(decided(JSON.parse(w2.stdout)), decided(JSON.parse(n2.stdout)));
  }
  // the history's turns are checked: a conversation ending with the assistant is refused by both
  const bad = file('bad-history.json', [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }]);
  const [n3, w3] = both(['--archive', micro, '--tools', tools, '--history', bad]);
  assert.equal(n3.status, 1);
  assert.equal(w3.status, 1);
  assert.equal(w3.stderr.replace('needle-wasm', ''), n3.stderr.replace('needle-run', ''));
});
