// prompt.mjs: the Needle 2 chat template and the tool-call envelope, shared by the page and Node.
//
// The template is finetune.render_example's (design page section 4):
//   [<|im_start|>system\n{system}<|im_end|>\n]<|im_start|>user\n<tools>{tools}</tools>\n{query}<|im_end|>\n<|im_start|>assistant\n
// with the tools as compact JSON, ASCII-escaped the way Python's json.dumps does by default, and each
// tool's keys in the order name, description, parameters {type, properties, required}.

// JSON.stringify, then every non-ASCII UTF-16 unit as \uXXXX (Python's ensure_ascii=True).
export function asciiJson(value) {
  return JSON.stringify(value).replace(/[\u0080-\uffff]/g,
    (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

// One tool with its keys in training order; unknown keys follow in their own order.
function orderTool(tool) {
  if (!tool || typeof tool !== 'object' || Array.isArray(tool)) throw new Error('each tool must be a JSON object');
  if (typeof tool.name !== 'string' || tool.name === '') throw new Error('each tool needs a "name" string');
  const out = { name: tool.name };
  if (tool.description !== undefined) out.description = tool.description;
  if (tool.parameters !== undefined) {
    const p = tool.parameters;
    const params = {};
    for (const key of ['type', 'properties', 'required']) if (p[key] !== undefined) params[key] = p[key];
    for (const key of Object.keys(p)) if (!(key in params)) params[key] = p[key];
    out.parameters = params;
  }
  for (const key of Object.keys(tool)) if (!(key in out)) out[key] = tool[key];
  return out;
}

// The prompt text for one user turn. `tools` is an array of tool schemas.
export function renderPrompt({ system = '', tools = [], query }) {
  if (!Array.isArray(tools)) throw new Error('tools must be a JSON array');
  const toolsJson = asciiJson(tools.map(orderTool));
  const head = system ? `<|im_start|>system\n${system}<|im_end|>\n` : '';
  return `${head}<|im_start|>user\n<tools>${toolsJson}</tools>\n${query}<|im_end|>\n<|im_start|>assistant\n`;
}

// Splits a reply into its reasoning and tool calls. Returns {reasoning, calls, complete, error}:
// calls is an array of {name, arguments} when the <tool_call> JSON parses, else null with `error`.
export function parseReply(text) {
  const think = /<think>([\s\S]*?)<\/think>/.exec(text);
  const reasoning = think ? think[1].trim() : '';
  const open = text.indexOf('<tool_call>');
  if (open < 0) return { reasoning, calls: null, complete: false, error: 'the reply has no <tool_call>' };
  const close = text.indexOf('</tool_call>', open);
  const body = text.slice(open + '<tool_call>'.length, close < 0 ? undefined : close);
  if (close < 0) return { reasoning, calls: null, complete: false, error: 'the tool call is not finished' };
  try {
    const calls = JSON.parse(body);
    if (!Array.isArray(calls)) throw new Error('the tool call is not a JSON array');
    for (const c of calls) {
      if (!c || typeof c.name !== 'string') throw new Error('a call has no "name"');
    }
    return { reasoning, calls: calls.map((c) => ({ name: c.name, arguments: c.arguments ?? {} })), complete: true, error: null };
  } catch (e) {
    return { reasoning, calls: null, complete: true, error: `the tool call is not valid JSON: ${e.message}` };
  }
}
