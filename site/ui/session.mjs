// session.mjs: the conversation the page keeps (docs/page.md, "A session"), as plain data: the turns
// sent back with every request (docs/toolcall.md §9, "history"), and the small rules of the composer.
// No DOM here, so the Node tests check it directly.

// The conversation so far: a list of {role: 'user' | 'assistant' | 'tool', content}.
export class Conversation {
  constructor() { this.turns = []; }

  clear() { this.turns = []; }

  // The request for a new user message, or (message null) for the model to continue after a tool
  // result. `fields`: tools and the sampling fields.
  request(message, fields) {
    const r = { ...fields, history: this.turns.map((t) => ({ ...t })) };
    if (message !== null) r.request = message;
    return r;
  }

  // Keeps a finished exchange: the user's message (null after a tool result) and the reply as
  // generated (the envelope's text, passed back as it is).
  keep(message, replyText) {
    if (message !== null) this.turns.push({ role: 'user', content: message });
    this.turns.push({ role: 'assistant', content: replyText });
  }

  // Adds what the tools returned for the last reply's calls: [{name, result}], one per call.
  addToolResults(results) { this.turns.push({ role: 'tool', content: results }); }

  // Whether the last turn is the model's reply (a tool result may follow it).
  get awaitsResult() { return this.turns.length > 0 && this.turns.at(-1).role === 'assistant'; }
}

// The reply text a finished envelope is kept as: its text as generated, except that a reply whose
// calls the no-call decision withdrew after they were written (docs/toolcall.md §8.4) is kept as the
// empty call list it counts as, so that the model is not told later that it made those calls.
export function keptReply(envelope) {
  return envelope.withdrawn_calls?.length > 0 ? '<tool_call>[]</tool_call>' : envelope.text;
}

// The value of a tool result as the visitor typed it: JSON when it parses, else the text itself (a
// string). Empty input is refused (null).
export function readToolResult(text) {
  const t = text.trim();
  if (t === '') return null;
  try {
    return { value: JSON.parse(t), asJson: true };
  } catch {
    return { value: t, asJson: false };
  }
}

// Whether a keydown in the request box sends: Enter without Shift, and never while an input method
// is composing (the Enter that commits a composition must not send; keyCode 229 is what Chromium and
// Safari report for keys the IME consumes).
export function sendsOnKey(event) {
  return event.key === 'Enter' && !event.shiftKey && !event.altKey && !event.ctrlKey && !event.metaKey &&
    !event.isComposing && event.keyCode !== 229;
}

// "12 ms", "1.4 s".
export function formatMs(ms) { return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`; }

// The stats line under an answer (docs/page.md): prompt tokens and how many came from a reused
// prefix (the envelope's reused_prompt_tokens when the session reports it, else 0), time from Send
// to the first token, prefill and decode speed (left out for a stopped reply: Stop cuts the prefill
// short, so its speed means nothing), threads, memory.
export function statsText(envelope, { sendToFirstMs, threads, stopped = false }) {
  const reused = Number.isInteger(envelope.reused_prompt_tokens) ? envelope.reused_prompt_tokens : 0;
  const parts = [
    `${envelope.prompt_tokens} prompt tokens (${reused} from a reused prefix)`,
    sendToFirstMs !== null ? `first token ${formatMs(sendToFirstMs)} after Send` : 'no reply token',
    ...(stopped ? [`${envelope.generated_tokens} tokens (${envelope.forced_tokens} forced)`] : [
      `prefill ${Math.round(envelope.prefill_tps)} tok/s`,
      `decode ${Math.round(envelope.decode_tps)} tok/s (${envelope.generated_tokens} tokens, ${envelope.forced_tokens} forced)`]),
    `${threads} thread${threads === 1 ? '' : 's'}`,
    `memory ${(envelope.peak_memory_bytes / 2 ** 20).toFixed(0)} MiB`,
  ];
  return parts.join(' · ');
}
