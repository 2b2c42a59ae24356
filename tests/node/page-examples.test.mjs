// The ready tool sets' example requests (site/toolsets.json) on the shipped model, in Node with the
// page's own driver (site/engine/) and settings (temperature 0, constrained): each gives exactly the
// calls its `example.calls` lists. page.test.mjs checks the same in the browser; this one needs no
// browser and names every wrong example at once, for checking a newly installed model quickly:
//   NEEDLE_BUILD_DIR=build node --test tests/node/page-examples.test.mjs
// docs/page.md, "Tools".
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';

import { toolcallPath, withEngine } from './helpers/engine.mjs';
import { modelFields } from '../../site/ui/settings.mjs';
import { shipped, shippedPath, toolsets } from './helpers/page.mjs';

// The fields the page sends with its default settings (site/ui/settings.mjs samplingFields; and
// modelFields, the shipped model's no-call bias and span strings).
const DEFAULTS = { max_tokens: 256, temperature: 0, top_p: 1, seed: '0', constrain: true };

const skip = !fs.existsSync(toolcallPath) ? `needs ${toolcallPath}`
  : !fs.existsSync(shippedPath) ? `${shippedPath} is not there yet (npm run train -- --install makes it)` : false;

test('every ready tool set\'s example request gives the calls toolsets.json lists, on the shipped model', { skip, timeout: 400000 }, async () => {
  const wrong = await withEngine({ threads: 1 }, 360000, async (engine) => {
    await engine.load(shippedPath);
    const out = [];
    for (const set of toolsets) {
      // the tools as the page's editor sends them: the JSON text of the set
      const envelope = await engine.complete({ tools: JSON.stringify(set.tools, null, 2), request: set.example.request, history: [],
        ...DEFAULTS, ...modelFields(shipped) });
      // calls in order; each one's arguments member by member, in any order
      if (!envelope.success || !isDeepStrictEqual(envelope.function_calls, set.example.calls))
        out.push(`${set.id}: "${set.example.request}" -> ${envelope.text}`);
    }
    return out;
  });
  assert.deepEqual(wrong, []);
});
