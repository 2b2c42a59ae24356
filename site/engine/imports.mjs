// The imports of engine.wasm (the header of engine.wat): the shared memory, and `now`, the job log's
// clock in milliseconds. Every thread must read one clock: a worker's performance.now() counts from
// that worker's own start, so the origin (performance.timeOrigin) is added back.
export function engineImports(memory) {
  return { env: { memory, now: () => performance.timeOrigin + performance.now() } };
}
