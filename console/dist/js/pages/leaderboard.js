// The leaderboard of a benchmark: a metric switcher and one ranked list of
// every eligible entrant (its task set as a badge); hovering or focusing a
// row shows its paired comparison with the best row (Holm-adjusted p). The
// scoring rules are docs/SCORING.md ("How gauntlet scores").

import { api } from '../api.js';
import { h, replace } from '../dom.js';
import { attachTooltip, errorBox, loading, numCell, selfReported, table } from '../components.js';
import { cost, estimateParts, pct, pText, pValue, seconds, shortDigest, signedPP, tokens, usd, dateTime } from '../format.js';
import { costPassChart, pointText } from '../chart.js';
import { costPoints, costScale, paretoFrontier } from '../frontier.js';
import { navigate, setQuery } from '../router.js';

/** METRICS are the leaderboard's metrics in display order. */
export const METRICS = [
  { id: 'pass@1', label: 'pass@1', better: 'higher' },
  { id: 'pass@k', label: 'pass@k', better: 'higher' },
  { id: 'pass^k', label: 'pass^k', better: 'higher' },
  { id: 'pass@1-errors-as-failures', label: 'errors as failures', better: 'higher' },
  { id: 'cost', label: 'cost', better: 'lower' },
  { id: 'time', label: 'time', better: 'lower' },
  { id: 'tokens', label: 'tokens', better: 'lower' },
];

const ALPHA = 0.05;

/** SCORING names the page that states every rule the board follows. */
const SCORING = 'How gauntlet scores (docs/SCORING.md)';

/** renderLeaderboard fills box with the leaderboard of key, starting at metric. */
export async function renderLeaderboard(ctx, box, key, initialMetric) {
  let metric = METRICS.some((m) => m.id === initialMetric) ? initialMetric : 'pass@1';
  const body = h('div', { id: 'leaderboard-body' });
  // rank re-ranks by a metric: from the metric selector or a column header,
  // both carried in the URL's ?metric=.
  const rank = (id) => { metric = id; setQuery({ metric: id === 'pass@1' ? '' : id }); load(); };
  const buttons = METRICS.map((m) => h('button', {
    type: 'button', 'aria-pressed': String(m.id === metric), dataset: { metric: m.id },
    title: `Rank by ${m.label} (${m.better} is better)`,
    onclick: () => rank(m.id),
  }, m.label));
  replace(box,
    h('div', { class: 'section-head' },
      h('h2', { id: 'leaderboard-title' }, 'Leaderboard'),
      h('div', { class: 'segmented', role: 'group', 'aria-label': 'Rank by metric' }, buttons)),
    body);

  async function load() {
    for (const b of buttons) b.setAttribute('aria-pressed', String(b.dataset.metric === metric));
    replace(body, loading('Ranking entrants'));
    try {
      const board = await api.leaderboard(key, metric, { signal: ctx.signal });
      replace(body, boardView(board, rank));
    } catch (err) {
      if (err.name === 'AbortError') return;
      replace(body, errorBox(err, 'Could not load the leaderboard'));
    }
  }
  await load();
}

function boardView(board, rank) {
  const rows = board.rows || [];
  if (!rows.length) {
    return h('div', { class: 'table-wrap' }, h('div', { class: 'empty' },
      'No eligible runs yet. A run agent enters the leaderboard once its run finished on the full task list or a published task set and every attempt produced a result.'));
  }
  return h('div', {},
    listView(board.metric, board.k || 0, rows, rank),
    h('p', { class: 'small muted', id: 'board-notes' },
      h('strong', {}, '1*'), ' marks a statistical tie with the best row: a two-sided paired t-test over the tasks both ran cannot tell them apart ',
      `once its p-value is adjusted for the board's comparisons with the best (Holm's step-down procedure; adjusted p ≥ ${ALPHA}). `,
      'Only rows that ran the same task set on the same manifest version as the best are tested; the others are ranked by their number. ',
      'Intervals are 95%: Wilson score intervals for pass rates (they keep their width at 0% and 100%), a percentile bootstrap over tasks for cost, time and tokens. ',
      'Platform errors and failed judges are left out of the scores (the task\'s attempts shrink); agent errors count as failures; "errors as failures" ranks with every error a failure. ',
      `${SCORING}. Hover or focus a row to compare it with the best; click it to open its run.`),
    detectableView(board),
    costPlot(rows));
}

// detectableView states the smallest difference from the best the board's
// tie test would find with 80% power, as the board stands.
function detectableView(board) {
  const d = board.min_detectable_diff;
  if (d === null || d === undefined) return null;
  const unit = ['cost', 'time', 'tokens'].includes(board.metric) ? diffFormat(board.metric).one(d).replace(/^\+/, '') : `${(d * 100).toFixed(1)} pp`;
  return h('p', { class: 'small muted', id: 'min-detectable' },
    'Minimum detectable difference: ', h('strong', {}, unit),
    ' — a row this far from the best is separated from it with 80% power by the paired test at α = 0.05 (the median over the board\'s comparisons). Closer rows can be tied by chance; ',
    h('code', {}, 'gauntlet plan-size'), ' says how many tasks a smaller difference needs.');
}

// costPlot is the cost vs pass@1 plot of the entrants with a cost, with the
// Pareto frontier; none when no entrant reported a cost.
function costPlot(rows) {
  const points = costPoints(rows);
  if (!points.length) return null;
  const frontier = paretoFrontier(points);
  const scale = costScale(points.map((p) => p.x));
  const onFront = new Set(frontier);
  const fmt = (v, estimated) => cost(v, estimated);
  const description = `${points.length} ${points.length === 1 ? 'entrant' : 'entrants'} with a cost. `
    + points.map((p) => pointText(p, fmt, onFront.has(p))).join('. ');
  const left = rows.length - points.length;
  return h('section', { class: 'card section', 'aria-labelledby': 'cost-plot-heading' },
    h('div', { class: 'card-head' }, h('h3', { id: 'cost-plot-heading' }, 'Cost vs pass@1')),
    h('div', { class: 'card-body' },
      costPassChart({ points, frontier, scale, formatCost: fmt,
        title: `Cost per task vs pass@1 of ${points.length} ${points.length === 1 ? 'entrant' : 'entrants'}`, description }),
      h('p', { class: 'small muted' },
        'Each entrant is a point at its cost per task and pass@1, with pass@1\'s 95% interval as a vertical bar. ',
        'The line is the Pareto frontier: no other entrant is both cheaper and better than the entrants on it. ',
        left ? `${left} ${left === 1 ? 'entrant reports' : 'entrants report'} no cost and ${left === 1 ? 'is' : 'are'} not plotted.` : '')));
}

function listView(metric, k, rows, rank) {
  const best = rows.find((r) => r.best);
  const active = (id) => (metric === id ? 'num active-metric' : 'num');
  // A metric's header is a button that re-ranks by it.
  const head = (id, label) => h('button', {
    type: 'button', class: 'th-sort', dataset: { sort: id }, 'aria-pressed': String(metric === id),
    title: `Rank by ${label}`, onclick: () => rank(id),
  }, label, metric === id ? ' ▾' : '');
  const sorted = (id) => (metric === id ? (METRICS.find((m) => m.id === id).better === 'higher' ? 'descending' : 'ascending') : null);
  // With k = 1 (some row made one attempt per task) the pass@k column would
  // repeat pass@1's header: it says which k it is.
  const passK = k > 1 ? `pass@${k}` : k === 1 ? 'pass@k (k=1)' : 'pass@k';
  const passHatK = k > 1 ? `pass^${k}` : k === 1 ? 'pass^k (k=1)' : 'pass^k';
  const errs = (r) => r.errors || {};
  const anyExcluded = rows.some((r) => errs(r).platform_errors || errs(r).judge_failures);
  const anyErrors = anyExcluded || rows.some((r) => errs(r).agent_errors);
  const strictShown = anyExcluded || metric === 'pass@1-errors-as-failures';
  const columns = [
    { label: 'Rank', cell: rankCell },
    { label: 'Agent', class: 'wrap', cell: (r) => [h('strong', {}, agentLabel(r)), ' ', measurementBadge(r, best)] },
    { label: 'pass@1', header: head('pass@1', 'pass@1'), sort: sorted('pass@1'), class: active('pass@1'), cell: (r) => numCell(estimateParts(r.pass1)) },
    { label: passK, header: head('pass@k', passK), sort: sorted('pass@k'), class: active('pass@k'), title: 'The deepest k every row reached', cell: (r) => numCell(estimateParts(r.pass_at_k)) },
    { label: passHatK, header: head('pass^k', passHatK), sort: sorted('pass^k'), class: active('pass^k'), title: 'pass^k: the chance that all k attempts pass (C(c,k)/C(n,k) per task)', cell: (r) => numCell(estimateParts(r.pass_hat_k)) },
    strictShown ? { label: 'Errors as failures', header: head('pass@1-errors-as-failures', 'Errors as failures'), sort: sorted('pass@1-errors-as-failures'),
      class: active('pass@1-errors-as-failures'), title: 'pass@1 with every error (platform and judge too) scored as a failure', cell: (r) => numCell(estimateParts(r.pass1_errors_as_failures)) } : null,
    anyErrors ? { label: 'Errors', class: 'num', cell: errorsCell } : null,
    { label: 'Cost/task', header: head('cost', 'Cost/task'), sort: sorted('cost'), class: active('cost'), cell: (r) => [numCell({ ...estimateParts(r.cost_per_task, usd), value: cost(r.cost_per_task?.value, r.cost_estimated) }), r.cost_per_task ? selfMark(r) : null] },
    { label: 'Time/task', header: head('time', 'Time/task'), sort: sorted('time'), class: active('time'), cell: (r) => numCell(estimateParts(r.time_per_task, seconds)) },
    { label: 'Tokens/task', header: head('tokens', 'Tokens/task'), sort: sorted('tokens'), class: active('tokens'), cell: (r) => [numCell(estimateParts(r.tokens_per_task, tokens)), r.tokens_per_task ? selfMark(r) : null] },
    { label: 'Run', class: 'run-cell', cell: (r) => (r.run_id ? [h('a', { href: `/benchmarks/runs/${encodeURIComponent(r.run_id)}`, class: 'mono run-link' }, r.run_id),
      h('div', { class: 'sub' }, dateTime(r.finished_at))] : '—') },
  ].filter(Boolean);
  // Clicking a row (or Enter on it) opens the run behind its score.
  const open = (r) => { if (r.run_id) navigate(`/benchmarks/runs/${encodeURIComponent(r.run_id)}`); };
  const wrap = table(columns, rows, {
    caption: null,
    rowAttrs: (r) => ({
      class: ['leader-row', r.rank === 0 && 'ineligible', r.run_id && 'clickable'], tabindex: '0',
      dataset: { rank: String(r.rank), tied: String(!!r.tied), best: String(!!r.best), run: r.run_id || '', taskSet: r.task_set || '' },
      'aria-label': `${rankText(r)}: ${agentLabel(r)}`,
      onclick: (e) => { if (!e.target.closest('a, button')) open(r); },
      onkeydown: (e) => { if (e.key === 'Enter') open(r); },
    }),
  });
  const trs = wrap.querySelectorAll('tbody tr');
  rows.forEach((r, i) => attachTooltip(trs[i], () => comparisonView(metric, r, best, k), { avoid: wrap }));
  return h('div', { class: 'board-list' }, wrap);
}

// measurementBadge names a row's task set, and its manifest version when it
// differs from the best's: what the tie test compares by.
// selfMark puts the self-reported mark under a row's cost or tokens.
function selfMark(r) {
  return r.usage_self_reported ? h('div', {}, selfReported(true)) : null;
}

function measurementBadge(r, best) {
  const otherVersion = best && (r.manifest_version !== best.manifest_version || r.manifest_digest !== best.manifest_digest);
  const parts = [r.task_set ? h('span', { class: 'tag task-set', title: `Scored on the ${r.task_set} task set` }, r.task_set) : null];
  if (otherVersion) {
    parts.push(' ', h('span', { class: 'tag', title: `Manifest ${r.manifest_digest}` }, `v${r.manifest_version} `, shortDigest(r.manifest_digest)));
  }
  return parts;
}

// errorsCell is "agent / platform / judge" with what each rule did.
function errorsCell(r) {
  const e = r.errors || {};
  const title = `${e.agent_errors || 0} agent errors scored as failures; ${e.platform_errors || 0} platform errors and ${e.judge_failures || 0} failed judges left out of the scores`
    + (e.unscored_tasks ? `; ${e.unscored_tasks} ${e.unscored_tasks === 1 ? 'task' : 'tasks'} with no scored attempt left out` : '') + `. ${SCORING}.`;
  return h('span', { class: 'errors-cell', title, dataset: { agent: String(e.agent_errors || 0), platform: String(e.platform_errors || 0), judge: String(e.judge_failures || 0) } },
    `${e.agent_errors || 0} / ${e.platform_errors || 0} / ${e.judge_failures || 0}`,
    e.unscored_tasks ? h('div', { class: 'sub' }, `${e.unscored_tasks} unscored`) : null);
}

function rankText(r) {
  if (!r.rank) return 'unranked';
  return r.tied ? `${r.rank}*` : String(r.rank);
}

function rankCell(r) {
  return h('span', {
    class: ['rank', r.tied && 'tied'],
    title: r.tied ? 'Statistically tied with the best (paired t-test, Holm-adjusted p ≥ 0.05)' : r.best ? 'Best value' : null,
  }, rankText(r));
}

/** agentLabel is "model (harness)" or the harness alone. */
export function agentLabel(r) {
  if (r.label) return r.label;
  return r.model ? `${r.model} (${r.harness})` : r.harness;
}

// diffFormat formats a difference and interval in the metric's unit.
function diffFormat(metric) {
  switch (metric) {
    case 'cost': return { one: (v) => signed(v, usd), range: (lo, hi) => `${usd(lo)} to ${usd(hi)}` };
    case 'time': return { one: (v) => signed(v, seconds), range: (lo, hi) => `${signed(lo, seconds)} to ${signed(hi, seconds)}` };
    case 'tokens': return { one: (v) => signed(v, tokens), range: (lo, hi) => `${signed(lo, tokens)} to ${signed(hi, tokens)}` };
    default: return { one: (v) => signedPP(v), range: (lo, hi) => `${signedPP(lo)} to ${signedPP(hi)}` };
  }
}

function signed(v, fmt) {
  if (v === 0) return fmt(0);
  return v > 0 ? `+${fmt(v)}` : `−${fmt(-v)}`;
}

function metricValue(metric, r) {
  if (r.value === null || r.value === undefined) return '—';
  switch (metric) {
    case 'cost': return usd(r.value);
    case 'time': return seconds(r.value);
    case 'tokens': return tokens(r.value);
    default: return pct(r.value);
  }
}

// varianceLine splits the row's pass@1 variance: which tasks were drawn
// (between) and attempt-to-attempt luck on a task (within).
function varianceLine(r) {
  const v = r.variance;
  if (!v) return null;
  const sd = (x) => `${(Math.sqrt(x) * 100).toFixed(1)} pp`;
  return h('div', { class: 'muted small variance', title: 'Standard deviations of pass@1 outcomes: between tasks (which tasks were drawn) and within a task (attempt to attempt). How gauntlet scores (docs/SCORING.md).' },
    `Spread of pass@1: between tasks ${sd(v.between)}, within a task ${sd(v.within)} (SD)`);
}

function comparisonView(metric, r, best, k) {
  const name = metric === 'pass@k' && k ? `pass@${k}` : metric === 'pass^k' && k ? `pass^${k}` : metric === 'pass@1-errors-as-failures' ? 'pass@1 (errors as failures)' : metric;
  if (r.best) {
    return h('div', {}, h('h4', {}, agentLabel(r)),
      h('div', {}, `Best ${name}: `, h('strong', {}, metricValue(metric, r))),
      h('div', { class: 'muted' }, 'Every other row is compared with this one.'), varianceLine(r));
  }
  if (r.rank === 0) {
    return h('div', {}, h('h4', {}, agentLabel(r)), h('div', { class: 'muted' }, `No ${name} value, so this row is not ranked.`));
  }
  if (!r.vs_best) {
    return h('div', {}, h('h4', {}, agentLabel(r)),
      h('div', {}, `${name}: `, h('strong', {}, metricValue(metric, r)), best ? ` vs ${metricValue(metric, best)} for the best` : ''),
      h('div', { class: 'muted' }, 'Not tested against the best: it ran another task set or manifest version, which is not the same measurement, so it is ranked by its number and never tied.'));
  }
  const c = r.vs_best;
  const fmt = diffFormat(metric);
  const ci = c.ci_low !== null && c.ci_low !== undefined ? fmt.range(c.ci_low, c.ci_high) : '—';
  const adjusted = c.adjusted_p ?? c.p_value;
  const adjText = pText(adjusted).replace(/^p/, 'adjusted p');
  let verdict;
  if (!c.tested) verdict = 'Fewer than two shared tasks: no test can separate it from the best, so it counts as tied.';
  else if (r.tied) verdict = `Statistical tie with the best (${adjText}, not below α = ${ALPHA}).`;
  else if (r.rank === 1) verdict = 'Same value as the best.';
  else verdict = `Significantly different from the best (${adjText}, below α = ${ALPHA}).`;
  return h('div', { class: 'comparison' },
    h('h4', {}, `${agentLabel(r)} vs ${best ? agentLabel(best) : 'the best'}`),
    h('dl', { class: 'kv' },
      h('dt', {}, name), h('dd', {}, metricValue(metric, r), best ? ` vs ${metricValue(metric, best)}` : ''),
      h('dt', {}, 'Difference'), h('dd', { class: 'diff' }, fmt.one(c.diff)),
      h('dt', {}, '95% CI'), h('dd', { class: 'diff-ci' }, ci),
      h('dt', {}, 'p-value'), h('dd', { class: 'p-value' }, pValue(c.p_value)),
      h('dt', { title: 'The p-value adjusted by Holm\'s step-down procedure over every comparison with the best on this board: with many entrants, some would otherwise tie or separate by luck' }, 'adjusted p'),
      h('dd', { class: 'adjusted-p' }, pValue(adjusted)),
      h('dt', {}, 'Paired tasks'), h('dd', {}, String(c.tasks))),
    h('div', { class: 'verdict' }, verdict),
    varianceLine(r),
    h('div', { class: 'muted small' }, SCORING));
}
