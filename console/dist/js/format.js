// Number, time and score formatting shared by every page.

const DASH = '—';

/** pct formats a fraction 0..1 as a percentage with one decimal. */
export function pct(v, digits = 1) {
  if (v === null || v === undefined || Number.isNaN(v)) return DASH;
  return `${(v * 100).toFixed(digits)}%`;
}

/** pctRange formats a CI as "lo–hi" in percent (no % sign inside). */
export function pctRange(lo, hi, digits = 1) {
  if (lo === null || lo === undefined || hi === null || hi === undefined) return '';
  return `${(lo * 100).toFixed(digits)}–${(hi * 100).toFixed(digits)}`;
}

/**
 * estimateParts splits an estimate {value, ci_low, ci_high, n} with a value
 * formatter into {value, ci} strings; ci is '' without an interval.
 */
export function estimateParts(e, fmt = pct) {
  if (!e) return { value: DASH, ci: '' };
  const ci = e.ci_low === null || e.ci_low === undefined || e.ci_high === null || e.ci_high === undefined
    ? '' : `(${fmt === pct ? pctRange(e.ci_low, e.ci_high) : `${fmt(e.ci_low)}–${fmt(e.ci_high)}`})`;
  return { value: fmt(e.value), ci };
}

/** estimateText is "62.5% (41.2–83.8)" or "62.5%" or "—". */
export function estimateText(e, fmt = pct) {
  const p = estimateParts(e, fmt);
  return p.ci ? `${p.value} ${p.ci}` : p.value;
}

/** usd formats dollars: 4 decimals under a cent, 3 under a dollar, whole dollars from $100. */
// cost is usd(v), marked "est." when the platform computed it from its
// dated price table (list prices for the metered tokens) rather than a
// provider reporting it.
export function cost(v, estimated) {
  const s = usd(v);
  return estimated && s !== DASH ? `${s} est.` : s;
}

export function usd(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return DASH;
  if (v === 0) return '$0';
  const abs = Math.abs(v);
  if (abs < 0.01) return `$${v.toFixed(4)}`;
  if (abs < 1) return `$${v.toFixed(3)}`;
  if (abs < 100) return `$${v.toFixed(2)}`;
  return `$${Math.round(v).toLocaleString('en-US')}`;
}

/** count formats an integer with thousands separators. */
export function count(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return DASH;
  return Math.round(n).toLocaleString('en-US');
}

/** tokens formats a token count compactly: 950, 12.3k, 4.56M. */
export function tokens(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return DASH;
  const abs = Math.abs(n);
  if (abs < 1000) return String(Math.round(n));
  if (abs < 1e6) return `${(n / 1e3).toFixed(abs < 1e4 ? 2 : 1)}k`;
  if (abs < 1e9) return `${(n / 1e6).toFixed(abs < 1e7 ? 2 : 1)}M`;
  return `${(n / 1e9).toFixed(2)}B`;
}

/** seconds formats a duration: 850ms, 12.3s, 4m 05s, 2h 03m. */
export function seconds(s) {
  if (s === null || s === undefined || Number.isNaN(s)) return DASH;
  if (s < 1) return `${Math.round(s * 1000)}ms`;
  if (s < 60) return `${s.toFixed(s < 10 ? 2 : 1)}s`;
  const total = Math.round(s);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const sec = total % 60;
  if (h > 0) return `${h}h ${String(m).padStart(2, '0')}m`;
  return `${m}m ${String(sec).padStart(2, '0')}s`;
}

/** signedPP formats a difference of fractions in percentage points, with a sign (− is U+2212). */
export function signedPP(v, digits = 1) {
  if (v === null || v === undefined || Number.isNaN(v)) return DASH;
  const s = Math.abs(v * 100).toFixed(digits);
  if (Number(s) === 0) return `±${s} pp`;
  return `${v > 0 ? '+' : '−'}${s} pp`;
}

/** pValue formats a p-value: "< 0.001", "0.034", "1". */
export function pValue(p) {
  if (p === null || p === undefined || Number.isNaN(p)) return DASH;
  if (p < 0.001) return '< 0.001';
  if (p >= 0.9995) return '1';
  return p.toFixed(3);
}

/** pText is a p-value as a statement: "p < 0.001" or "p = 0.042". */
export function pText(p) {
  if (p === null || p === undefined || Number.isNaN(p)) return `p ${DASH}`;
  return p < 0.001 ? 'p < 0.001' : `p = ${pValue(p)}`;
}

/** dateTime formats an ISO time as local "2026-11-29 20:26". */
export function dateTime(iso) {
  if (!iso) return DASH;
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return DASH;
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
}

/** timeOfDay formats an ISO time as local "20:26:03.120". */
export function timeOfDay(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const p = (n, w = 2) => String(n).padStart(w, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

/** ago formats an ISO time relative to now: "just now", "5 min ago", "3 d ago". */
export function ago(iso, now = Date.now()) {
  if (!iso) return DASH;
  const t = new Date(iso).getTime();
  if (Number.isNaN(t)) return DASH;
  const s = Math.max(0, (now - t) / 1000);
  if (s < 45) return 'just now';
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  if (s < 86400 * 30) return `${Math.round(s / 86400)} d ago`;
  return dateTime(iso).slice(0, 10);
}

/** bytes formats a size: 512 B, 1.2 KB, 3.4 MB. */
export function bytes(n) {
  if (n === null || n === undefined) return DASH;
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  if (n < 1024 ** 3) return `${(n / 1024 / 1024).toFixed(1)} MB`;
  return `${(n / 1024 ** 3).toFixed(2)} GB`;
}

/** shortDigest shortens "sha256:abcdef…" to its first 12 hex digits. */
export function shortDigest(d) {
  if (!d) return DASH;
  const hex = d.includes(':') ? d.split(':').pop() : d;
  return hex.slice(0, 12);
}

/** plural is "1 task" / "3 tasks". */
export function plural(n, one, many = `${one}s`) {
  return `${count(n)} ${n === 1 ? one : many}`;
}

/**
 * taskCheckText says what an environment check's flag on a task (a
 * result's task_check: broken or trivial) means for a result read there:
 * the badge's label, its tone and its title. null for any other verdict
 * (ok, unavailable, none), which gets no badge.
 */
export function taskCheckText(verdict, detail = '') {
  const why = {
    broken: ['bad', 'The environment check found this task broken: the oracle (the task\'s own solution) does not pass in its environment, so a failure here may be the environment\'s fault, not the agent\'s.'],
    trivial: ['warn', 'The environment check found this task trivial: nop (doing nothing) passes, so a pass here says nothing of the agent.'],
  }[verdict];
  if (!why) return null;
  return { label: `env: ${verdict}`, tone: why[0], title: detail ? `${why[1]} (${detail})` : why[1] };
}

/** parseLogins reads "host=SECRET, host2=SECRET2" into registry_credentials. */
export function parseLogins(text) {
  const list = [];
  for (const part of text.split(',').map((p) => p.trim()).filter(Boolean)) {
    const i = part.indexOf('=');
    if (i <= 0 || i === part.length - 1) return { error: `Registry logins: "${part}" is not host=SECRET, e.g. ghcr.io=GHCR_PULL.` };
    list.push({ registry: part.slice(0, i).trim(), secret: part.slice(i + 1).trim() });
  }
  return { list };
}
