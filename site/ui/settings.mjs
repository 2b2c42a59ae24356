// settings.mjs: the visitor's settings, kept in localStorage between visits (docs/page.md,
// "Settings"). Every value read back is checked and clamped, so a hand-edited or old entry can
// never reach the engine out of range: a value that is not usable falls back to its default.

export const SETTINGS_KEY = 'needlework.settings';

// Threads by default: three quarters of the logical cores, at least 1, at most 16 (a helper that
// the system deschedules stalls every job, so a few cores are left to the rest of the machine).
export function defaultThreads(cores) {
  const n = Number.isFinite(cores) && cores > 0 ? cores : 2;
  return Math.max(1, Math.min(16, Math.floor(n * 0.75)));
}

// name -> {default(cores), read(value) -> the value or undefined when unusable}.
const number = (min, max, { integer = false } = {}) => (v) => {
  const x = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  if (typeof x !== 'number' || !Number.isFinite(x)) return undefined;
  if (integer && !Number.isInteger(x)) return undefined;
  return Math.min(max, Math.max(min, x));
};

export const FIELDS = {
  threads: { default: (cores) => defaultThreads(cores), read: number(1, 16, { integer: true }) },
  temperature: { default: () => 0, read: number(0, 2) },
  topP: { default: () => 1, read: number(0.01, 1) },
  maxTokens: { default: () => 256, read: number(1, 4096, { integer: true }) },
  // a decimal string of an unsigned 64-bit integer (the request's seed)
  seed: {
    default: () => '0',
    read: (v) => {
      const s = String(v ?? '').trim();
      return /^\d{1,20}$/.test(s) && BigInt(s) < 2n ** 64n ? String(BigInt(s)) : undefined;
    },
  },
  constrained: { default: () => true, read: (v) => (typeof v === 'boolean' ? v : undefined) },
};

export function defaults(cores) {
  return Object.fromEntries(Object.entries(FIELDS).map(([k, f]) => [k, f.default(cores)]));
}

// The settings from `raw` (an object, e.g. parsed storage or form values), each field checked;
// unusable or missing fields take their default.
export function sanitize(raw, cores) {
  const out = defaults(cores);
  if (raw && typeof raw === 'object') {
    for (const [k, f] of Object.entries(FIELDS)) {
      const v = f.read(raw[k]);
      if (v !== undefined) out[k] = v;
    }
  }
  return out;
}

// The stored settings (defaults when none, or when the entry is not JSON). `storage`: localStorage.
export function loadSettings(storage, cores) {
  let raw = null;
  try {
    raw = JSON.parse(storage.getItem(SETTINGS_KEY) ?? 'null');
  } catch {
    raw = null;
  }
  return sanitize(raw, cores);
}

export function saveSettings(storage, settings) {
  try {
    storage.setItem(SETTINGS_KEY, JSON.stringify(settings));
    return true;
  } catch {
    return false;  // storage full or disabled (private mode): the settings last for this visit
  }
}

// The request fields of docs/toolcall.md §9 for these settings.
export function samplingFields(s) {
  return { max_tokens: s.maxTokens, temperature: s.temperature, top_p: s.topP, seed: s.seed, constrain: s.constrained };
}

// The request fields the open model sets: a listed model's calibrated no-call bias, doubt and named
// credit (its models.json `no_call_bias`, `no_call_doubt` and `no_call_named`, docs/toolcall.md §8.4)
// when it has them, the named steer (`steer_named`, §8.4) and span
// strings (`span_strings`, §8.5) when it asks for them; an archive opened from a file or an address
// has none of them.
export function modelFields(model) {
  const out = {};
  const bias = model?.no_call_bias;
  if (typeof bias === 'number' && Number.isFinite(bias) && bias !== 0) out.no_call_bias = bias;
  const doubt = model?.no_call_doubt;
  if (typeof doubt === 'number' && Number.isFinite(doubt) && doubt > 0) out.no_call_doubt = doubt;
  const named = model?.no_call_named;
  if (typeof named === 'number' && Number.isFinite(named) && named > 0) out.no_call_named = named;
  if (model?.steer_named === true) out.steer_named = true;
  if (model?.span_strings === true) out.span_strings = true;
  return out;
}
