// Inline SVG charts (no library): a line chart with confidence bands (the
// pass@k curves) and the cost vs pass@1 scatter with its Pareto frontier.

import { h, svg } from './dom.js';
import { placeLabels, shortLabel } from './frontier.js';

// LABEL_CHAR_PX is the average width of a character of an 11 px chart
// label, to keep labels apart without measuring them.
const LABEL_CHAR_PX = 6.4;

/** seriesColor is the CSS colour of the i-th series. */
export function seriesColor(i) {
  return `var(--chart-${(i % 8) + 1})`;
}

/**
 * percentFrame is a chart's frame with y in [0, 1] shown as percent: the
 * horizontal grid lines, their labels, the x axis line and both axis titles.
 * The caller adds its own x ticks to the returned groups.
 */
function percentFrame({ W, H, m, y, xLabel, yLabel }) {
  const grid = svg('g', { class: 'grid' });
  const axis = svg('g', { class: 'axis' });
  for (const t of [0, 0.25, 0.5, 0.75, 1]) {
    grid.append(svg('line', { x1: m.left, x2: W - m.right, y1: y(t), y2: y(t) }));
    axis.append(svg('text', { x: m.left - 8, y: y(t) + 4, 'text-anchor': 'end' }, `${t * 100}%`));
  }
  const midY = (m.top + H - m.bottom) / 2;
  axis.append(svg('line', { x1: m.left, x2: W - m.right, y1: H - m.bottom, y2: H - m.bottom }));
  axis.append(svg('text', { x: (m.left + W - m.right) / 2, y: H - 4, 'text-anchor': 'middle' }, xLabel));
  axis.append(svg('text', { x: 12, y: midY, 'text-anchor': 'middle', transform: `rotate(-90 12 ${midY})` }, yLabel));
  return { grid, axis };
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
  const { grid, axis } = percentFrame({ W, H, m, y, xLabel, yLabel });
  const step = Math.max(1, Math.ceil((xMax - xMin) / 12));
  for (let k = xMin; k <= xMax; k += step) {
    axis.append(svg('line', { x1: x(k), x2: x(k), y1: H - m.bottom, y2: H - m.bottom + 4 }));
    axis.append(svg('text', { x: x(k), y: H - m.bottom + 17, 'text-anchor': 'middle' }, String(k)));
  }

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

/**
 * costPassChart plots points [{label, x: cost per task, y: pass@1, lo, hi,
 * estimated}] with pass@1's interval as a vertical error bar and the Pareto
 * frontier (see frontier.js) as a staircase through its points; a hollow
 * marker is an estimated cost. The SVG is drawn at the figure's own width
 * (redrawn when it changes), so its text keeps its size on a phone instead
 * of shrinking with a scaled picture.
 */
export function costPassChart({ points, frontier, scale, formatCost, title, description }) {
  const onFront = new Set(frontier);
  const fig = h('figure', { class: 'chart cost-plot', id: 'cost-plot', style: { margin: '0' } });
  const legend = h('figcaption', { class: 'legend' },
    h('span', {}, h('span', { class: 'mark front', 'aria-hidden': 'true' }), 'on the Pareto frontier'),
    h('span', {}, h('span', { class: 'mark dominated', 'aria-hidden': 'true' }), 'dominated (another entrant is cheaper and better)'),
    points.some((p) => p.estimated) ? h('span', {}, h('span', { class: 'mark hollow', 'aria-hidden': 'true' }), 'estimated cost (price table)') : null,
    points.some((p) => p.selfReported) ? h('span', { id: 'cost-plot-self-reported' }, h('span', { class: 'mark self-reported', 'aria-hidden': 'true' }),
      'cost reported by the agent itself, not metered: not on the frontier') : null,
    h('span', {}, h('span', { class: 'mark bar', 'aria-hidden': 'true' }), 'pass@1 95% CI'));
  let width = 0;
  const draw = (w) => {
    width = w;
    const W = Math.max(260, w);
    const H = Math.round(Math.min(340, Math.max(230, W * 0.55)));
    const m = { top: 26, right: 18, bottom: 42, left: 50 }; // room above 100% for labels
    const x = (v) => m.left + scale.at(v) * (W - m.left - m.right);
    const y = (v) => H - m.bottom - v * (H - m.top - m.bottom);
    const { grid, axis } = percentFrame({ W, H, m, y, yLabel: 'pass@1',
      xLabel: scale.log ? 'cost per task (log scale)' : 'cost per task' });
    // Thin the cost ticks so their labels never touch (about 56 px each).
    const every = Math.max(1, Math.ceil((scale.ticks.length * 56) / (W - m.left - m.right)));
    scale.ticks.forEach((t, i) => {
      grid.append(svg('line', { x1: x(t), x2: x(t), y1: m.top, y2: H - m.bottom }));
      if (i % every) return;
      axis.append(svg('line', { x1: x(t), x2: x(t), y1: H - m.bottom, y2: H - m.bottom + 4 }));
      axis.append(svg('text', { x: x(t), y: H - m.bottom + 17, 'text-anchor': 'middle' }, formatCost(t)));
    });

    const front = svg('g', { class: 'frontier' });
    if (frontier.length) {
      // The staircase: from each frontier point right to the next one's
      // cost, then up to its pass@1 — the edge of what is dominated.
      let d = `M${x(frontier[0].x)},${y(frontier[0].y)}`;
      for (const p of frontier.slice(1)) d += `H${x(p.x)}V${y(p.y)}`;
      d += `H${W - m.right}`;
      front.append(svg('path', { d }));
    }
    const bars = svg('g', { class: 'error-bars' });
    const marks = svg('g', { class: 'points' });
    const labels = svg('g', { class: 'point-labels' });
    for (const p of points) {
      const cx = x(p.x);
      if (p.lo !== null && p.hi !== null) {
        bars.append(svg('path', { d: `M${cx - 4},${y(p.hi)}H${cx + 4}M${cx},${y(p.hi)}V${y(p.lo)}M${cx - 4},${y(p.lo)}H${cx + 4}` }));
      }
      // A self-reported cost is a square, apart from the metered circles.
      const title = svg('title', {}, pointText(p, formatCost, onFront.has(p)));
      marks.append(p.selfReported
        ? svg('rect', { x: cx - 4.5, y: y(p.y) - 4.5, width: 9, height: 9, class: 'self-reported', 'data-label': p.label }, title)
        : svg('circle', {
          cx, cy: y(p.y), r: 4.5, class: [onFront.has(p) ? 'front' : 'dominated', p.estimated && 'hollow'],
          'data-label': p.label,
        }, title));
    }
    // The frontier's entrants are named where a label fits (best first);
    // every point keeps its title, and the description names them all.
    const maxChars = W < 420 ? 16 : 28;
    const named = [...frontier].sort((a, b) => b.y - a.y).map((p) => {
      const text = shortLabel(p.label, maxChars);
      return { p, text, x: x(p.x), y: y(p.y), width: text.length * LABEL_CHAR_PX };
    });
    const spots = placeLabels(named, { left: m.left, right: W - 2, top: 0, bottom: H - m.bottom },
      points.map((p) => ({ x: x(p.x), y: y(p.y) })));
    named.forEach((l, i) => {
      const at = spots[i];
      if (at) labels.append(svg('text', { x: at.x, y: at.y, 'text-anchor': at.anchor, 'data-label': l.p.label }, l.text));
    });
    const chart = svg('svg', {
      viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img', 'aria-labelledby': 'cost-plot-title', 'aria-describedby': 'cost-plot-desc',
      'data-width': String(W),
    }, svg('title', { id: 'cost-plot-title' }, title), svg('desc', { id: 'cost-plot-desc' }, description), grid, axis, front, bars, marks, labels);
    fig.replaceChildren(chart, legend);
  };
  draw(640);
  // Redraw at the width the figure gets once it is on the page, and when
  // the window resizes it.
  if (typeof ResizeObserver === 'function') {
    new ResizeObserver((entries) => {
      const w = Math.floor(entries[0].contentRect.width);
      if (w > 0 && Math.abs(w - width) > 1) draw(w);
    }).observe(fig);
  }
  return fig;
}

/** pointText is one entrant of the cost plot in words. */
export function pointText(p, formatCost, front) {
  const ci = p.lo !== null && p.hi !== null ? ` (95% CI ${(p.lo * 100).toFixed(1)}–${(p.hi * 100).toFixed(1)}%)` : '';
  if (p.selfReported) {
    return `${p.label}: ${formatCost(p.x, p.estimated)} per task as the agent reported it (not metered), pass@1 ${(p.y * 100).toFixed(1)}%${ci}; not on the frontier`;
  }
  return `${p.label}: ${formatCost(p.x, p.estimated)} per task, pass@1 ${(p.y * 100).toFixed(1)}%${ci}; ${front ? 'on the Pareto frontier' : 'dominated'}`;
}
