// Inline SVG charts (no library): a line chart with confidence bands, used
// for pass@k curves.

import { h, svg } from './dom.js';

/** seriesColor is the CSS colour of the i-th series. */
export function seriesColor(i) {
  return `var(--chart-${(i % 8) + 1})`;
}

/**
 * lineChart draws series [{label, points: [{x, y, lo, hi}]}] over integer x
 * ticks and y in [0, 1] shown as percent. Returns a figure with a legend
 * and a text description for assistive technology.
 */
export function lineChart({ series, xLabel, yLabel, title, description }) {
  const W = 560;
  const H = 260;
  const m = { top: 12, right: 16, bottom: 40, left: 48 };
  const xs = series.flatMap((s) => s.points.map((p) => p.x));
  const xMin = Math.min(1, ...xs);
  const xMax = Math.max(xMin + 1, ...xs);
  const x = (v) => m.left + ((v - xMin) / (xMax - xMin)) * (W - m.left - m.right);
  const y = (v) => H - m.bottom - v * (H - m.top - m.bottom);
  const grid = svg('g', { class: 'grid' });
  const axis = svg('g', { class: 'axis' });
  for (const t of [0, 0.25, 0.5, 0.75, 1]) {
    grid.append(svg('line', { x1: m.left, x2: W - m.right, y1: y(t), y2: y(t) }));
    axis.append(svg('text', { x: m.left - 8, y: y(t) + 4, 'text-anchor': 'end' }, `${t * 100}%`));
  }
  const step = Math.max(1, Math.ceil((xMax - xMin) / 12));
  for (let k = xMin; k <= xMax; k += step) {
    axis.append(svg('line', { x1: x(k), x2: x(k), y1: H - m.bottom, y2: H - m.bottom + 4 }));
    axis.append(svg('text', { x: x(k), y: H - m.bottom + 17, 'text-anchor': 'middle' }, String(k)));
  }
  axis.append(svg('line', { x1: m.left, x2: W - m.right, y1: H - m.bottom, y2: H - m.bottom }));
  axis.append(svg('text', { x: (m.left + W - m.right) / 2, y: H - 4, 'text-anchor': 'middle' }, xLabel));
  axis.append(svg('text', { x: 12, y: (m.top + H - m.bottom) / 2, 'text-anchor': 'middle', transform: `rotate(-90 12 ${(m.top + H - m.bottom) / 2})` }, yLabel));

  const layers = series.map((s, i) => {
    const color = seriesColor(s.colorIndex ?? i);
    const pts = s.points.filter((p) => p.y !== null && p.y !== undefined);
    const g = svg('g', { class: 'series' });
    const banded = pts.filter((p) => p.lo !== null && p.lo !== undefined);
    if (banded.length > 1) {
      const upper = banded.map((p) => `${x(p.x)},${y(p.hi)}`);
      const lower = banded.slice().reverse().map((p) => `${x(p.x)},${y(p.lo)}`);
      g.append(svg('path', { class: 'band', d: `M${upper.join('L')}L${lower.join('L')}Z`, style: { fill: color } }));
    }
    if (pts.length > 1) {
      g.append(svg('path', { d: `M${pts.map((p) => `${x(p.x)},${y(p.y)}`).join('L')}`, style: { stroke: color } }));
    }
    for (const p of pts) {
      g.append(svg('circle', { cx: x(p.x), cy: y(p.y), r: 3.5, style: { fill: color } },
        svg('title', {}, `${s.label}: ${xLabel} ${p.x} = ${(p.y * 100).toFixed(1)}%`)));
    }
    return g;
  });

  const chart = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': title },
    svg('title', {}, title), svg('desc', {}, description || ''), grid, axis, ...layers);
  return h('figure', { class: 'chart', style: { margin: '0' } },
    chart,
    h('figcaption', { class: 'legend' }, series.map((s, i) => h('span', {},
      h('span', { class: 'swatch', style: { background: seriesColor(s.colorIndex ?? i) } }), s.label))));
}
