// The job log read as a table (docs/engine.md, "Job log"): where a step's time goes, per job and
// per thread. engine.jobLogStart() before a run and engine.jobLogStop() after it give the records;
// summarizeJobLog(records, 'step' | 'prefill') adds up the jobs inside those spans, and
// formatJobLog(summary) writes it for a terminal.
//
// For every kind of job (JOB_* of engine.wat): how many ran per span, the driver's wall time from
// publishing one to its last item, and each thread's busy time inside it (the items it ran). What a
// job's wall time has beyond its busiest thread is synchronisation and imbalance: the cost of one more
// job. What a span has beyond its jobs is the serial work the driver does alone.

const inside = (r, span) => r.start >= span.start && r.end <= span.end;

export function summarizeJobLog(records, spanKind = 'step') {
  const spans = records.filter((r) => r.kind === spanKind);
  const threads = 1 + records.reduce((m, r) => (r.kind === 'chunk' ? Math.max(m, r.slot) : m), 0);
  const jobs = new Map();
  let spanMs = 0, jobMs = 0;
  const get = (name) => {
    if (!jobs.has(name)) jobs.set(name, { job: name, count: 0, wallMs: 0, busyMs: new Array(threads).fill(0), items: 0 });
    return jobs.get(name);
  };
  for (const span of spans) {
    spanMs += span.end - span.start;
    for (const r of records) {
      if (r === span || !inside(r, span)) continue;
      if (r.kind === 'job') {
        const j = get(r.job);
        j.count++;
        j.wallMs += r.end - r.start;
        j.items += r.items;
        jobMs += r.end - r.start;
      } else if (r.kind === 'chunk') {
        get(r.job).busyMs[r.slot] += r.end - r.start;
      }
    }
  }
  // (at one thread the products run on the driver without a job: all of a span is outside jobs)
  return {
    span: spanKind, spans: spans.length, threads,
    spanMs: spans.length ? spanMs / spans.length : 0,
    jobMs: spans.length ? jobMs / spans.length : 0,
    items: spans.reduce((n, s) => n + s.items, 0),
    jobs: [...jobs.values()].map((j) => ({
      job: j.job, perSpan: j.count / Math.max(1, spans.length), items: j.items / Math.max(1, j.count),
      wallUs: (1000 * j.wallMs) / Math.max(1, j.count),
      busyUs: j.busyMs.map((ms) => (1000 * ms) / Math.max(1, j.count)),
    })),
  };
}

export function formatJobLog(s) {
  const f = (v, d = 1) => v.toFixed(d);
  const lines = [];
  const per = s.span === 'prefill' ? `${f(s.spanMs, 2)} ms per prefill of ${f(s.items / Math.max(1, s.spans), 0)} ids`
    : `${f(s.spanMs, 3)} ms per step`;
  lines.push(`job log: ${s.spans} ${s.span}s at ${s.threads} thread${s.threads > 1 ? 's' : ''}, ${per}`);
  const busy = Array.from({ length: s.threads }, (_, t) => (t ? `thread ${t} us` : 'driver us'));
  lines.push(['job', 'per ' + s.span, 'items', 'wall us', ...busy, 'sync+idle us'].map((c, i) => (i ? c.padStart(14) : c.padEnd(10))).join(''));
  for (const j of s.jobs) {
    const sync = j.wallUs - Math.max(...j.busyUs);
    lines.push([j.job.padEnd(10), f(j.perSpan).padStart(14), f(j.items, 0).padStart(14), f(j.wallUs).padStart(14),
      ...j.busyUs.map((b) => f(b).padStart(14)), f(sync).padStart(14)].join(''));
  }
  const serial = s.spanMs - s.jobMs;
  lines.push(`in jobs ${f(s.jobMs, 3)} ms per ${s.span}; outside jobs (the driver alone) ${f(serial, 3)} ms ` +
    `(${f((100 * serial) / Math.max(1e-9, s.spanMs))}%)`);
  return lines.join('\n');
}
