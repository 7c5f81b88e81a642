// The gauntlet API client: one fetch wrapper that adds the bearer token,
// decodes the error shape {code, message, details}, and signs out on 401.

const TOKEN_KEY = 'gauntlet.token';

/** apiBase is the API origin: window.GAUNTLET_API_URL, or '' (same origin). */
export function apiBase() {
  const configured = typeof window.GAUNTLET_API_URL === 'string' ? window.GAUNTLET_API_URL.trim() : '';
  return configured.replace(/\/+$/, '');
}

/** auth keeps the API token in localStorage. */
export const auth = {
  token() {
    try { return localStorage.getItem(TOKEN_KEY) || ''; } catch { return ''; }
  },
  set(token) { localStorage.setItem(TOKEN_KEY, token); },
  clear() {
    try { localStorage.removeItem(TOKEN_KEY); } catch { /* storage disabled: nothing stored */ }
  },
};

/** ApiError is a non-2xx answer in the API's error shape. */
export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message || `HTTP ${status}`);
    this.name = 'ApiError';
    this.status = status;
    this.code = code || `HTTP_${status}`;
    this.details = details ?? null;
  }

  /** problems lists the {code, field, message} of details.problems. */
  get problems() {
    const p = this.details && this.details.problems;
    return Array.isArray(p) ? p : [];
  }
}

/** UNAUTHORIZED_EVENT fires on window when the API answers 401. */
export const UNAUTHORIZED_EVENT = 'gauntlet:unauthorized';

async function errorFrom(res) {
  let body = null;
  const text = await res.text().catch(() => '');
  try { body = JSON.parse(text); } catch { /* not JSON: use the text */ }
  if (body && typeof body === 'object' && typeof body.message === 'string') {
    return new ApiError(res.status, body.code, body.message, body.details);
  }
  const fallback = text.trim().slice(0, 300) || res.statusText || 'request failed';
  return new ApiError(res.status, `HTTP_${res.status}`, `${res.status}: ${fallback}`, null);
}

/**
 * request calls the API. opts: query (object), body (object → JSON, string
 * → sent as-is with opts.contentType), headers, signal, raw (return the
 * Response).
 */
export async function request(method, path, opts = {}) {
  const url = new URL(apiBase() + path, window.location.origin);
  for (const [k, v] of Object.entries(opts.query || {})) {
    if (v !== '' && v !== null && v !== undefined) url.searchParams.set(k, String(v));
  }
  const headers = { Accept: 'application/json', ...(opts.headers || {}) };
  const token = auth.token();
  if (token) headers.Authorization = `Bearer ${token}`;
  let body;
  if (typeof opts.body === 'string') {
    body = opts.body;
    headers['Content-Type'] = opts.contentType || 'text/plain';
  } else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['Content-Type'] = 'application/json';
  }
  let res;
  try {
    res = await fetch(url, { method, headers, body, signal: opts.signal });
  } catch (err) {
    if (err.name === 'AbortError') throw err;
    throw new ApiError(0, 'NETWORK', `Cannot reach the gauntlet API at ${url.origin}: ${err.message}`, null);
  }
  if (res.status === 401) {
    const err = await errorFrom(res);
    window.dispatchEvent(new CustomEvent(UNAUTHORIZED_EVENT, { detail: err }));
    throw err;
  }
  if (!res.ok) throw await errorFrom(res);
  if (opts.raw) return res;
  if (res.status === 204) return null;
  const type = res.headers.get('Content-Type') || '';
  return type.includes('json') ? res.json() : res.text();
}

const enc = encodeURIComponent;

/** api names every route the console uses (see /v1/openapi.json). */
export const api = {
  workspace: (o) => request('GET', '/v1/workspace', o),

  benchmarks: (o) => request('GET', '/v1/benchmarks', o),
  benchmark: (key, o) => request('GET', `/v1/benchmarks/${enc(key)}`, o),
  // addBenchmark takes { source, repo, path, api_key_secret, registry_credentials }; empty fields are left out.
  addBenchmark: (req) => request('POST', '/v1/benchmarks', {
    body: Object.fromEntries(Object.entries(req).filter(([, v]) => (Array.isArray(v) ? v.length : v))),
  }),
  syncBenchmark: (key) => request('POST', `/v1/benchmarks/${enc(key)}/sync`),
  deleteBenchmark: (key) => request('DELETE', `/v1/benchmarks/${enc(key)}`),
  check: (key, o) => request('GET', `/v1/benchmarks/${enc(key)}/check`, o),
  startCheck: (key) => request('POST', `/v1/benchmarks/${enc(key)}/check`),
  // text fetches an API path the API returned (a build log) as text.
  text: (path, o) => request('GET', path, { ...o, headers: { Accept: 'text/plain' } }),
  leaderboard: (key, metric, o = {}) => request('GET', `/v1/benchmarks/${enc(key)}/leaderboard`, { ...o, query: { metric } }),

  runs: (query, o = {}) => request('GET', '/v1/runs', { ...o, query }),
  run: (id, o) => request('GET', `/v1/runs/${enc(id)}`, o),
  validateRun: (toml) => request('POST', '/v1/runs/validate', { body: toml, contentType: 'application/toml' }),
  submitRun: (toml, idempotencyKey) => request('POST', '/v1/runs', {
    body: toml, contentType: 'application/toml', headers: idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {},
  }),
  runConfig: (id, o) => request('GET', `/v1/runs/${enc(id)}/config`, o),
  runLogs: (id, query, o = {}) => request('GET', `/v1/runs/${enc(id)}/logs`, { ...o, query }),
  stopRun: (id) => request('POST', `/v1/runs/${enc(id)}/stop`),
  results: (id, query, o = {}) => request('GET', `/v1/runs/${enc(id)}/results`, { ...o, query }),
  result: (id, resultID, o) => request('GET', `/v1/runs/${enc(id)}/results/${enc(resultID)}`, o),
  downloadPath: (id, type) => `/v1/runs/${enc(id)}/download?type=${enc(type)}`,

  harnesses: (o) => request('GET', '/v1/harnesses', o),

  secrets: (o) => request('GET', '/v1/secrets', o),
  putSecret: (name, scope, value) => request('PUT', `/v1/secrets/${enc(name)}`, { query: { scope }, body: value, contentType: 'text/plain' }),
  deleteSecret: (name, scope) => request('DELETE', `/v1/secrets/${enc(name)}`, { query: { scope } }),
};

/**
 * download fetches an authenticated file (path relative to the API base, or
 * an API-relative URL the API returned) and saves it under the name the
 * server's Content-Disposition gives, else fallbackName. onProgress receives
 * the bytes read so far.
 */
export async function download(path, fallbackName, onProgress) {
  const res = await request('GET', path, { raw: true });
  const name = filenameFrom(res.headers.get('Content-Disposition')) || fallbackName;
  const reader = res.body.getReader();
  const chunks = [];
  let received = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    received += value.length;
    if (onProgress) onProgress(received);
  }
  const blob = new Blob(chunks, { type: res.headers.get('Content-Type') || 'application/octet-stream' });
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 30_000);
  return { name, size: received };
}

function filenameFrom(disposition) {
  if (!disposition) return '';
  const star = /filename\*=UTF-8''([^;]+)/i.exec(disposition);
  if (star) {
    try { return decodeURIComponent(star[1]); } catch { /* fall through */ }
  }
  const plain = /filename="((?:[^"\\]|\\.)*)"/i.exec(disposition) || /filename=([^;]+)/i.exec(disposition);
  return plain ? plain[1].replace(/\\(.)/g, '$1').trim() : '';
}
