// Compare two entrants of a benchmark (/compare?a=RUN/AGENT&b=RUN/AGENT):
// the paired pass@1 difference with its interval and p, cost and time
// deltas, per-category differences, and the tasks one solves and the other
// does not, each linking to its attempts. A is the baseline, B the
// candidate; every difference is B − A. The rules are docs/SCORING.md's.

import { api } from '../api.js';
import { h, replace, link } from '../dom.js';
import { errorBox, loading, selfReported, table } from '../components.js';
import { estimateText, pct, pText, seconds, signedPP, tokens, usd } from '../format.js';
import { navigate } from '../router.js';

/** renderCompare renders /compare. */
export async function renderCompare(ctx) {
  document.title = 'Compare · gauntlet';
  const a = ctx.query.get('a') || '';
  const b = ctx.query.get('b') || '';
  const inputA = h('input', { type: 'text', id: 'compare-a', value: a, size: 28, placeholder: 'RUN or RUN/AGENT', 'aria-label': 'Baseline (A)' });
  const inputB = h('input', { type: 'text', id: 'compare-b', value: b, size: 28, placeholder: 'RUN or RUN/AGENT', 'aria-label': 'Candidate (B)' });
  const form = h('form', { class: 'toolbar', id: 'compare-form', onsubmit: (e) => {
    e.preventDefault();
    navigate(`/compare?a=${encodeURIComponent(inputA.value.trim())}&b=${encodeURIComponent(inputB.value.trim())}`);
  } }, h('label', {}, 'A (baseline) ', inputA), h('label', {}, 'B (candidate) ', inputB), h('button', { type: 'submit' }, 'Compare'));
  const body = h('div', { id: 'compare-body' });
  replace(ctx.main, h('div', { class: 'section-head' }, h('h1', {}, 'Compare two entrants')), form, body);
  if (!a || !b) {
    replace(body, h('p', { class: 'muted' }, 'Name two finished run agents of one benchmark: a run id, with "/" and the agent\'s index when the run has several agents. A run page offers "compare with the best".'));
    return;
  }
  replace(body, loading('Comparing'));
  try {
    const c = await api.compare(a, b, { signal: ctx.signal });
    replace(body, compareView(c));
  } catch (err) {
    if (err.name === 'AbortError') throw err;
    replace(body, errorBox(err, 'Could not compare them'));
  }
}

function side(e) {
  return h('span', {}, h('strong', {}, e.label), ' ', link(`/benchmarks/runs/${encodeURIComponent(e.run_id)}`, `${e.run_id}/${e.agent}`));
}

function signed(v, fmt) {
  if (v === null || v === undefined) return '—';
  if (v === 0) return fmt(0);
  return v > 0 ? `+${fmt(v)}` : `−${fmt(-v)}`;
}

function diffRow(name, aText, bText, d, fmt) {
  if (!d) return null;
  const ci = d.ci_low !== null && d.ci_low !== undefined ? `${fmt(d.ci_low)} to ${fmt(d.ci_high)}` : '—';
  return { name, a: aText, b: bText, diff: fmt(d.diff), ci, p: d.p_value === null || d.p_value === undefined ? '—' : pText(d.p_value) };
}

function compareView(c) {
  const pp = (v) => signedPP(v);
  const rows = [
    diffRow('pass@1', estimateText(c.a.pass1), estimateText(c.b.pass1), c.pass1, pp),
    diffRow('Cost/task', [usd(c.a.cost_per_task?.value), c.a.usage_self_reported ? ' ' : null, selfReported(c.a.usage_self_reported)],
      [usd(c.b.cost_per_task?.value), c.b.usage_self_reported ? ' ' : null, selfReported(c.b.usage_self_reported)], c.cost, (v) => signed(v, usd)),
    diffRow('Time/task', seconds(c.a.time_per_task?.value), seconds(c.b.time_per_task?.value), c.time, (v) => signed(v, seconds)),
    diffRow('Tokens/task', '', '', c.tokens, (v) => signed(v, tokens)),
  ].filter(Boolean);
  return h('div', {},
    h('p', {}, 'A ', side(c.a), ' vs B ', side(c.b), ` on ${c.tasks} common ${c.tasks === 1 ? 'task' : 'tasks'}`,
      c.only_a || c.only_b ? ` (${c.only_a} only A scored, ${c.only_b} only B)` : '', '.'),
    c.same_measurement ? null : h('p', { class: 'badge warn plain', id: 'compare-versions' },
      `A ran manifest ${c.a.manifest_version}, B ${c.b.manifest_version}: a common task may differ between them.`),
    h('section', { class: 'section' },
      table([
        { label: 'Metric', cell: (r) => r.name },
        { label: 'A', class: 'num', cell: (r) => r.a },
        { label: 'B', class: 'num', cell: (r) => r.b },
        { label: 'B − A', class: 'num', cell: (r) => h('strong', {}, r.diff) },
        { label: '95% CI', class: 'num', cell: (r) => r.ci },
        { label: 'p', class: 'num', cell: (r) => r.p },
      ], rows, { caption: 'Paired differences over the common tasks (paired t-test)' })),
    categoriesView(c),
    h('div', { class: 'grid-2 section' },
      changesView('Regressions', 'compare-regressions', 'Tasks A solves and B does not (solved: passed at least half its attempts)', c.regressions, c),
      changesView('Improvements', 'compare-improvements', 'Tasks B solves and A does not', c.improvements, c)),
    h('p', { class: 'small muted' }, 'How gauntlet scores (docs/SCORING.md): pass@1 per task over its scored attempts; platform errors and failed judges are left out.'));
}

function categoriesView(c) {
  if (!c.categories?.length) return null;
  return h('section', { class: 'section', id: 'compare-categories' },
    h('h2', {}, 'By category'),
    table([
      { label: 'Category', cell: (r) => r.category },
      { label: 'Tasks', class: 'num', cell: (r) => String(r.pass1.tasks) },
      { label: 'B − A (pass@1)', class: 'num', cell: (r) => signedPP(r.pass1.diff) },
      { label: '95% CI', class: 'num', cell: (r) => (r.pass1.ci_low !== null && r.pass1.ci_low !== undefined ? `${signedPP(r.pass1.ci_low)} to ${signedPP(r.pass1.ci_high)}` : '—') },
      { label: 'p', class: 'num', cell: (r) => (r.pass1.p_value === null || r.pass1.p_value === undefined ? '—' : pText(r.pass1.p_value)) },
    ], c.categories));
}

// attempts links to a run agent's results of one task.
function attempts(e, task, text) {
  return link(`/benchmarks/runs/${encodeURIComponent(e.run_id)}?tab=results&agent=${e.agent}&task=${encodeURIComponent(task)}`, text);
}

function changesView(title, id, note, changes, c) {
  return h('section', { class: 'card', id, 'aria-label': title },
    h('div', { class: 'card-head' }, h('h3', {}, `${title} (${changes.length})`)),
    h('div', { class: 'card-body' },
      h('p', { class: 'small muted' }, note),
      changes.length ? table([
        { label: 'Task', class: 'wrap', cell: (t) => h('span', { class: 'mono' }, t.task) },
        { label: 'A pass@1', class: 'num', cell: (t) => attempts(c.a, t.task, pct(t.a, 0)) },
        { label: 'B pass@1', class: 'num', cell: (t) => attempts(c.b, t.task, pct(t.b, 0)) },
      ], changes) : h('p', { class: 'muted' }, 'None.')));
}
