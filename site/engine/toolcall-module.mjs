// toolcall-module.mjs: the tool-call library (host/toolcall/, built by scripts/build-toolcall-wasm.sh
// into toolcall.mjs + toolcall.wasm) as JavaScript functions, for the driver Worker (which runs whole
// requests with engine.wasm as the backend) and for the page's main thread (which checks the tools
// JSON as the visitor types). Strings cross as UTF-8 in the module's own memory; every string the C API
// returns is read and freed here. docs/engine.md, "Tool calls".
//
//   const tc = await loadToolcallModule(compiledModule, scriptUrl);
//   tc.checkTools('[{"name": "t"}]')   // '' or the message

export class ToolcallModule {
  constructor(instance) {
    this.m = instance;
    instance._needle_tcw_constants();
    // capi.h's values (the module sets them): result codes OK, REFUSED, FAILED; head bits
    // HEAD_CONTRASTIVE, HEAD_CONFIDENCE; head codes CODE_CONTRASTIVE, CODE_CONFIDENCE.
    this.constants = instance.constants;
  }

  // A NUL-terminated copy of a string (or of UTF-8 bytes) in the module's memory; free it with free().
  string(text) {
    const bytes = typeof text === 'string' ? new TextEncoder().encode(text) : text;
    const p = this.m._needle_tc_alloc(bytes.length + 1);
    if (!p) throw new Error(`tool-call module: out of memory for ${bytes.length} bytes`);
    this.m.HEAPU8.set(bytes, p);
    this.m.HEAPU8[p + bytes.length] = 0;
    return p;
  }
  // `bytes` bytes copied into the module's memory (not terminated).
  bytes(view) {
    const p = this.m._needle_tc_alloc(Math.max(1, view.length));
    if (!p) throw new Error(`tool-call module: out of memory for ${view.length} bytes`);
    this.m.HEAPU8.set(view, p);
    return p;
  }
  free(p) { this.m._needle_tc_free(p); }
  // The string at p (UTF-8, NUL-terminated), which is then freed.
  take(p) {
    if (!p) throw new Error('tool-call module: out of memory');
    const text = this.m.UTF8ToString(p);
    this.free(p);
    return text;
  }
  // Text of `n` UTF-8 bytes at p (not terminated, not freed).
  text(p, n) { return new TextDecoder().decode(this.m.HEAPU8.subarray(p, p + n)); }

  // '' when the tools JSON text is a valid tool list, else the message (with line and column for bad
  // JSON: 'tools JSON at line 3, column 7: ...').
  checkTools(json) {
    const p = this.string(json);
    try {
      return this.take(this.m._needle_tc_check_tools(p));
    } finally {
      this.free(p);
    }
  }

  // A model handle (a number) from the archive's tokenizer blob (bytes), or throws with the message.
  newModel(blob, { vocab, maxSeqLen, heads }) {
    const b = this.bytes(blob);
    const errorAt = this.m._needle_tc_alloc(4);
    try {
      this.m.HEAPU32[errorAt >> 2] = 0;
      const model = this.m._needle_tc_model_new(b, blob.length, vocab, maxSeqLen, heads, errorAt);
      if (!model) {
        const e = this.m.HEAPU32[errorAt >> 2];
        throw new Error(e ? this.take(e) : 'tool-call model: out of memory');
      }
      return model;
    } finally {
      this.free(errorAt);
      this.free(b);
    }
  }
  freeModel(model) { if (model) this.m._needle_tc_model_free(model); }

  // Runs one request (JSON text) with the backend installed as `backend` (the functions that
  // host/wasm/toolcall_module.cpp calls); `heads`: whether the head callbacks are offered.
  // Returns {status: constants.OK | REFUSED | FAILED, envelope: the envelope JSON text}.
  complete(model, requestJson, backend, heads) {
    const req = this.string(requestJson);
    const out = this.m._needle_tc_alloc(4);
    this.m.backend = backend;
    try {
      this.m.HEAPU32[out >> 2] = 0;
      const status = this.m._needle_tcw_complete(model, req, heads ? 1 : 0, out);
      const p = this.m.HEAPU32[out >> 2];
      return { status, envelope: this.take(p) };
    } finally {
      this.m.backend = null;
      this.free(out);
      this.free(req);
    }
  }

  // Bytes of the module's memory (it only grows).
  memoryBytes() { return this.m.HEAPU8.buffer.byteLength; }
}

// An instance of the module from its compiled WebAssembly.Module and the URL of toolcall.mjs (the
// Emscripten loader; it is handed the compiled module, so it fetches and reads nothing itself).
export async function loadToolcallModule(compiled, scriptUrl) {
  const { default: create } = await import(String(scriptUrl));
  const instance = await create({
    instantiateWasm: (imports, receive) => {
      WebAssembly.instantiate(compiled, imports).then((inst) => receive(inst, compiled));
      return {};
    },
    print: (text) => console.log(`toolcall: ${text}`),
    printErr: (text) => console.warn(`toolcall: ${text}`),
  });
  return new ToolcallModule(instance);
}
