// Cost vs pass@1: the leaderboard's entrants as points and their Pareto
// frontier, plus the axis scale of the plot. DOM-free, so node tests it
// (console/test/units.test.mjs).

/**
 * costPoints maps leaderboard rows to plot points {label, x, y, lo, hi,
 * estimated, runId}: x is cost per task (USD), y pass@1, lo/hi pass@1's 95%
 * interval (null without one). Rows without a cost or a pass@1 have no
 * place on the plot and are left out.
 */
export function costPoints(rows) {
  const out = [];
  for (const r of rows || []) {
    const c = r.cost_per_task;
    const p = r.pass1;
    if (!c || !p || !Number.isFinite(c.value) || !Number.isFinite(p.value)) continue;
    const banded = Number.isFinite(p.ci_low) && Number.isFinite(p.ci_high);
    out.push({
      label: r.label || (r.model ? `${r.model} (${r.harness})` : r.harness),
      x: c.value, y: p.value,
      lo: banded ? p.ci_low : null, hi: banded ? p.ci_high : null,
      estimated: !!r.cost_estimated, runId: r.run_id || '',
    });
  }
  return out;
}

/** dominates reports whether a is at least as cheap and as good as b, and strictly better in one. */
export function dominates(a, b) {
  return a.x <= b.x && a.y >= b.y && (a.x < b.x || a.y > b.y);
}

/**
 * paretoFrontier returns the points no other point dominates (lower cost
 * and higher pass@1 are better), cheapest first. Equal points are all kept:
 * neither dominates the other.
 */
export function paretoFrontier(points) {
  const sorted = [...points].sort((a, b) => a.x - b.x || b.y - a.y);
  const out = [];
  let best = -Infinity;
  for (const p of sorted) {
    const last = out[out.length - 1];
    if (p.y > best) {
      out.push(p);
      best = p.y;
    } else if (last && p.x === last.x && p.y === last.y) {
      out.push(p); // the same place as a frontier point: not dominated
    }
  }
  return out;
}

// NICE are the mantissas of the linear scale's tick steps.
const NICE = [1, 2, 2.5, 5, 10];

/**
 * costScale picks the cost axis for values: linear from $0 with "nice"
 * ticks, or — when every cost is positive and they span more than
 * LOG_SPAN× — logarithmic over whole decades, so cheap entrants are not
 * squeezed against the axis. Returns {log, min, max, ticks, at(v) → 0..1}.
 */
export const LOG_SPAN = 30;
export function costScale(values) {
  const xs = values.filter((v) => Number.isFinite(v) && v >= 0);
  const hi = Math.max(0, ...xs);
  const lo = Math.min(...xs);
  if (xs.length && lo > 0 && hi / lo > LOG_SPAN) {
    const min = 10 ** Math.floor(Math.log10(lo));
    const max = 10 ** Math.ceil(Math.log10(hi));
    const ticks = [];
    for (let e = Math.log10(min); e <= Math.log10(max) + 1e-9; e += 1) ticks.push(Number((10 ** e).toPrecision(1)));
    const span = Math.log10(max) - Math.log10(min);
    return { log: true, min, max, ticks, at: (v) => (Math.log10(Math.max(v, min)) - Math.log10(min)) / span };
  }
  if (hi === 0) return { log: false, min: 0, max: 1, ticks: [0], at: () => 0 };
  // About four intervals, the step a nice number.
  const raw = hi / 4;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = NICE.map((n) => n * mag).find((s) => s >= raw);
  const max = Number((Math.ceil(hi / step - 1e-9) * step).toPrecision(12));
  const ticks = [];
  for (let i = 0; i * step <= max + step / 1e6; i += 1) ticks.push(Number((i * step).toPrecision(12)));
  return { log: false, min: 0, max, ticks, at: (v) => v / max };
}
