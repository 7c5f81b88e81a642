// Cost vs pass@1: the leaderboard's entrants as points and their Pareto
// frontier, plus the axis scale of the plot. DOM-free, so node tests it
// (console/test/units.test.mjs).

/**
 * costPoints maps leaderboard rows to plot points {label, x, y, lo, hi,
 * estimated, selfReported, runId}: x is cost per task (USD), y pass@1, lo/hi
 * pass@1's 95% interval (null without one); selfReported marks a cost the
 * agent reported itself (usage.json), not metered by the model gateway.
 * Rows without a cost or a pass@1 have no place on the plot and are left
 * out.
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
      estimated: !!r.cost_estimated, selfReported: !!r.usage_self_reported, runId: r.run_id || '',
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
 * neither dominates the other. Only metered costs compete: a self-reported
 * cost (the agent's own word) is neither on the frontier nor dominates.
 */
export function paretoFrontier(points) {
  const sorted = points.filter((p) => !p.selfReported).sort((a, b) => a.x - b.x || b.y - a.y);
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
 * costScale picks the cost axis for values: linear with "nice" ticks, or —
 * when every cost is positive and they span more than LOG_SPAN× —
 * logarithmic over whole decades, so cheap entrants are not squeezed
 * against the axis. The linear axis starts at $0 when the cheapest cost is
 * within one spread of it, else just below the cheapest, so entrants of
 * close costs stay apart. Returns {log, min, max, ticks, at(v) → 0..1}.
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
  const spread = hi - lo;
  // A margin of 5% of the spread keeps points off the plot's edges.
  const from = lo <= spread || spread === 0 ? 0 : lo - spread * 0.05;
  const to = hi + (spread || hi) * 0.05;
  // About four intervals, the step a nice number.
  const raw = (to - from) / 4;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = NICE.map((n) => n * mag).find((v) => v >= raw);
  const round = (v) => Number(v.toPrecision(12));
  const min = round(Math.floor(from / step + 1e-9) * step);
  const max = round(Math.ceil(to / step - 1e-9) * step);
  const ticks = [];
  for (let i = 0; min + i * step <= max + step / 1e6; i += 1) ticks.push(round(min + i * step));
  return { log: false, min, max, ticks, at: (v) => (v - min) / (max - min) };
}

// LABEL_SPOTS are where a point's label may go, tried in order: above the
// point to its right, to its left, centred ([dx, dy, text-anchor]). Never
// below: there a label reads as naming the point under it.
const LABEL_SPOTS = [[8, -7, 'start'], [-8, -7, 'end'], [0, -10, 'middle']];

/**
 * placeLabels places text labels [{x, y, width}] (the point they name and
 * the text's width) in plot coordinates: each at the first spot that stays
 * inside bounds {left, right, top, bottom} and covers neither an earlier
 * label nor any of points [{x, y}]. A label with no such spot is null (its
 * point keeps its title and the plot's description). Returns [{x, y,
 * anchor} | null], index-aligned.
 */
export function placeLabels(labels, bounds, points = [], { height = 13, radius = 5 } = {}) {
  const boxes = [];
  const hits = (b) => boxes.some((o) => b.x0 < o.x1 && b.x1 > o.x0 && b.y0 < o.y1 && b.y1 > o.y0)
    || points.some((p) => b.x0 < p.x + radius && b.x1 > p.x - radius && b.y0 < p.y + radius && b.y1 > p.y - radius);
  return labels.map((l) => {
    for (const [dx, dy, anchor] of LABEL_SPOTS) {
      const tx = l.x + dx;
      const ty = l.y + dy;
      const x0 = { start: tx, end: tx - l.width, middle: tx - l.width / 2 }[anchor];
      const b = { x0, x1: x0 + l.width, y0: ty - height + 3, y1: ty + 3 };
      if (b.x0 < bounds.left || b.x1 > bounds.right || b.y0 < bounds.top || b.y1 > bounds.bottom || hits(b)) continue;
      boxes.push(b);
      return { x: tx, y: ty, anchor };
    }
    return null;
  });
}

/**
 * shortLabel fits an entrant's label "provider/model (harness)" in max
 * characters by dropping what tells entrants apart least first: the
 * harness, then the model's provider path, and only then the end of the
 * name (with "…").
 */
export function shortLabel(label, max) {
  if (label.length <= max) return label;
  const model = label.replace(/ \([^()]*\)$/, '');
  if (model.length <= max) return model;
  const name = model.slice(model.lastIndexOf('/') + 1);
  if (name.length <= max) return name;
  return `${name.slice(0, max - 1)}…`;
}
