// turns.mjs: how one exchange of the session is drawn (docs/page.md, "A session"): what the visitor
// sent (a request or tool results), the reply as it streams, then the calls as formatted JSON, the
// reasoning, the confidence, the stats, and, under the newest reply's calls, a box per call for what
// the tool returned. Only DOM here; the conversation itself is session.mjs.

const el = (tag, props = {}, ...children) => {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
};

// A new turn in `container`: `sent` is {kind: 'request', text} or {kind: 'results', results}.
// Returns the turn's handle: append(text) while streaming, then finish(...) or fail(message).
export function addTurn(container, sent) {
  const article = el('article', { className: 'turn' });
  article.dataset.state = 'streaming';
  const you = sent.kind === 'request'
    ? el('div', { className: 'sent' }, el('span', { className: 'who', textContent: 'You' }), el('p', { textContent: sent.text }))
    : el('div', { className: 'sent' }, el('span', { className: 'who', textContent: 'Tool result' }),
      ...sent.results.map((r) => el('pre', { textContent: `${r.name}: ${JSON.stringify(r.result)}` })));
  const reply = el('pre', { className: 'reply' });
  reply.dataset.tokens = '0';
  const waiting = el('p', { className: 'status waiting', textContent: 'Reading the prompt…' });
  const body = el('div', { className: 'answer' }, el('span', { className: 'who', textContent: 'Model' }), waiting, reply);
  article.append(you, body);
  container.append(article);
  article.scrollIntoView({ block: 'nearest' });
  let tokens = 0;
  return {
    article,
    append(text) {
      if (tokens === 0) waiting.remove();
      tokens += 1;
      reply.textContent += text;
      reply.dataset.tokens = String(tokens);
    },
    // The envelope's result: calls, reasoning, confidence, the stats line; `state` 'done' or
    // 'stopped' (a stopped reply is shown but not kept in the session).
    finish(envelope, { stats, state }) {
      waiting.remove();
      reply.textContent = envelope.text;
      article.dataset.state = state;
      body.append(...envelopeParts(envelope, state));
      body.append(el('p', { className: 'stats', textContent: stats }));
    },
    fail(message) {
      waiting.remove();
      article.dataset.state = 'error';
      body.append(el('p', { className: 'error', textContent: message }));
    },
  };
}

// The parts under a finished reply.
function envelopeParts(envelope, state) {
  const parts = [];
  if (envelope.tools_offered)
    parts.push(el('p', { className: 'status', textContent: `Tools offered (ranked by the model's contrastive head): ${envelope.tools_offered.join(', ')}.` }));
  if (envelope.reasoning) parts.push(el('p', { className: 'status', textContent: `Reasoning: ${envelope.reasoning}` }));
  envelope.function_calls.forEach((call, i) => {
    const title = envelope.function_calls.length > 1 ? `Call ${i + 1}: ${call.name}` : call.name;
    parts.push(el('div', { className: 'call' }, el('h3', { textContent: title }),
      el('pre', { className: 'call-json', textContent: JSON.stringify(call, null, 2) })));
  });
  const withdrawn = envelope.withdrawn_calls ?? [];
  if (envelope.success && envelope.function_calls.length === 0 && withdrawn.length > 0) {
    // The model wrote these calls but doubted them too much to make them, the more so where the request
    // does not name their tools (docs/toolcall.md §8.4).
    const names = withdrawn.map((call) => call.name).join(', ');
    const several = withdrawn.length > 1;
    const unnamed = envelope.calls_named === false ? `, and the request does not name ${several ? 'all their tools' : 'its tool'}` : '';
    parts.push(el('p', { className: 'status', textContent: `No call made: the model wrote ${names}, but doubted `
      + `${several ? 'them' : 'it'} (doubt ${envelope.call_doubt.toFixed(2)})${unnamed}, so the list counts as empty.` }));
  } else if (envelope.success && envelope.function_calls.length === 0) {
    parts.push(el('p', { className: 'status', textContent: envelope.type === 'respond' && envelope.text.trim() && !envelope.text.includes('<tool_call>')
      ? 'A reply in words (allowed after a tool result).' : 'No tool fits this request (an empty call list).' }));
  }
  if (state === 'stopped') {
    parts.push(el('p', { className: 'status', textContent: envelope.generated_tokens === 0
      ? 'Stopped before the first reply token. Not kept in the session.'
      : `Stopped after ${envelope.generated_tokens} tokens. Not kept in the session.` }));
  } else if (!envelope.success) {
    parts.push(el('p', { className: 'error', textContent: `The reply is not a valid call: ${envelope.error}.` }));
  }
  if (envelope.confidence !== null && state !== 'stopped')
    parts.push(el('p', { className: 'confidence', textContent: `Confidence: ${envelope.confidence.toFixed(3)}` }));
  return parts;
}

// The boxes for what each call's tool returned, under `turn`; onSubmit(texts) with one text per
// call. Returns a function that removes them (when the session moves on).
export function addResultForm(turn, calls, onSubmit) {
  const form = el('form', { className: 'results' });
  const boxes = calls.map((call, i) => {
    const box = el('textarea', { rows: 2, spellcheck: false, placeholder: '{"ok": true}' });
    box.name = `result-${i}`;
    form.append(el('label', { textContent: `What ${call.name} returned (JSON, or plain text)` }, box));
    return box;
  });
  const note = el('p', { className: 'status' });
  const button = el('button', { type: 'submit', textContent: calls.length > 1 ? 'Send results' : 'Send result' });
  form.append(el('div', { className: 'row' }, button), note);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const texts = boxes.map((b) => b.value);
    const message = onSubmit(texts);
    note.textContent = message ?? '';
    note.classList.toggle('error', !!message);
  });
  turn.article.querySelector('.answer').append(form);
  return () => form.remove();
}
