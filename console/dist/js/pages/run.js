// Run detail: status, progress (live while the run is active), metrics per
// agent, per-category pass@1 and pass@k curves, and the Results, Logs and
// Configuration tabs; Stop and Download.

import { api, download } from '../api.js';
import { h, replace, link } from '../dom.js';
import {
  ACTIVE_RUN, STOPPABLE, confirmDialog, errorBox, loading, menu, numCell, outcomeBar, outcomeLegend, selfReported, statusBadge, table, toast,
} from '../components.js';
import { bytes, cost, count, dateTime, estimateParts, pct, seconds, shortDigest, tokens, usd } from '../format.js';
import { lineChart, seriesColor } from '../chart.js';
import { navigate, setQuery } from '../router.js';
import { poll } from '../poll.js';
import { userLabel } from '../workspace.js';
import { renderResults } from './results.js';
import { renderLogs } from './logs.js';

const TABS = [
  ['overview', 'Overview'],
  ['results', 'Results'],
  ['logs', 'Logs'],
  ['config', 'Configuration'],
];

// SETTLE_POLLS bounds the polls that wait for an ended run's metrics.
const SETTLE_POLLS = 30;

/** renderRun renders /runs/:id. */
export async function renderRun(ctx) {
  const id = ctx.params.id;
  document.title = `Run ${id} · gauntlet`;
  replace(ctx.main, loading('Loading run'));
  let run;
  try {
    run = await api.run(id, { signal: ctx.signal });
  } catch (err) {
    if (err.name === 'AbortError') throw err;
    replace(ctx.main, crumbs(), errorBox(err, `Could not load run ${id}`));
    return;
  }
  document.title = `${run.name || id} · gauntlet`;
  const head = h('div', {});
  const stats = h('div', {});
  const tabBar = h('div', { class: 'tabs', role: 'tablist', 'aria-label': 'Run sections' });
  const panel = h('div', { role: 'tabpanel', id: 'run-panel' });
  replace(ctx.main, head, stats, tabBar, panel);

  let tab = TABS.some(([t]) => t === ctx.query.get('tab')) ? ctx.query.get('tab') : 'overview';
  // fetchedAt is when the shown run answer arrived: live durations tick on
  // from the server's duration_sec at that moment (tickDurations).
  const state = { run, fetchedAt: performance.now(), refreshPanel: null };

  // The header is rebuilt only when what it shows changes: a poll that
  // rebuilt it every time closed a download menu the user had open.
  let shownHeader = '';
  const paint = () => {
    const key = headerKey(state.run);
    if (key !== shownHeader) {
      replace(head, header(state.run, () => changed()));
      shownHeader = key;
    }
    replace(stats, statStrip(state.run, state.fetchedAt));
  };
  const showTab = (next, { initial = false } = {}) => {
    tab = next;
    // The results filters in the URL belong to the Results tab only.
    const filters = initial ? {} : { agent: '', task: '', outcome: '', q: '' };
    setQuery({ tab: tab === 'overview' ? '' : tab, ...filters });
    replace(tabBar, TABS.map(([t, label]) => h('a', {
      href: `?tab=${t}`, role: 'tab', id: `tab-${t}`, 'aria-selected': String(t === tab), 'aria-controls': 'run-panel',
      onclick: (e) => { e.preventDefault(); showTab(t); },
    }, label)));
    panel.setAttribute('aria-labelledby', `tab-${tab}`);
    state.refreshPanel = null;
    if (tab === 'overview') {
      replace(panel, overview(state.run, state.fetchedAt));
      state.refreshPanel = () => replace(panel, overview(state.run, state.fetchedAt));
    } else if (tab === 'results') {
      renderResults(ctx, panel, state.run);
    } else if (tab === 'logs') {
      renderLogs(ctx, panel, state.run);
    } else {
      renderConfig(ctx, panel, state.run);
    }
  };
  // settling counts the polls after the run ended while its metrics still
  // lag its results: the pipeline recomputes them shortly after the end,
  // and a page that stopped polling at the end would keep the stale ones
  // (a stopped run showed no pass@1).
  let settling = 0;
  const reload = async () => {
    state.run = await api.run(id, { signal: ctx.signal });
    state.fetchedAt = performance.now();
    paint();
    if (state.refreshPanel) state.refreshPanel();
    if (ACTIVE_RUN.has(state.run.status)) return true;
    return !state.run.metrics_current && settling++ < SETTLE_POLLS;
  };
  paint();
  showTab(tab, { initial: true });
  const poller = poll(ctx, reload, 2000);
  const ticker = setInterval(tickDurations, 1000);
  ctx.onCleanup(() => clearInterval(ticker));
  // changed follows a run the user just stopped until it settles.
  const changed = async () => {
    await reload().catch(() => {});
    poller.kick();
  };
}

// liveDuration renders a duration the page ticks on every second while it
// runs: seconds since the answer arrived are added to the server's value.
function liveDuration(sec, live, fetchedAt) {
  return h('span', { class: 'duration', dataset: live ? { base: String(sec), at: String(fetchedAt) } : {} }, seconds(sec));
}

/** tickDurations moves every live duration on the page on to now. */
function tickDurations() {
  const now = performance.now();
  for (const el of document.querySelectorAll('.duration[data-base]')) {
    el.textContent = seconds(Number(el.dataset.base) + (now - Number(el.dataset.at)) / 1000);
  }
}

// agentDuration is an agent's time so far under its progress bar: live
// while it runs, its final duration once it ended.
function agentDuration(a, fetchedAt) {
  if (!a.started_at) {
    return h('div', { class: 'sub agent-duration', dataset: { agentDuration: 'none' } }, a.ended_at ? 'never started' : 'not started');
  }
  const live = !a.ended_at;
  return h('div', { class: 'sub agent-duration', dataset: { agentDuration: live ? 'live' : 'final' },
    title: live ? `running since ${dateTime(a.started_at)}` : `${dateTime(a.started_at)} to ${dateTime(a.ended_at)}` },
  live ? 'running ' : 'took ', liveDuration(a.duration_sec, live, fetchedAt));
}

function crumbs() {
  return h('div', { class: 'crumbs' }, link('/runs', 'Runs'), ' /');
}

// headerKey is every run field header() renders.
function headerKey(run) {
  const o = run.outcomes || {};
  return JSON.stringify([run.name, run.id, run.status, run.reason, run.benchmark, run.benchmark_name, run.task_set,
    run.coverage, run.manifest_version, run.manifest_digest, Boolean(o.passed || o.failed || o.errored)]);
}

function header(run, changed) {
  const head = h('div', {},
    crumbs(),
    h('div', { class: 'page-head' },
      h('div', { class: 'titles' },
        h('h1', { id: 'run-name' }, run.name || run.id),
        h('div', { class: 'sub' },
          statusBadge(run.status),
          h('span', { class: 'mono', title: 'run id' }, run.id),
          h('span', {}, 'on ', link(`/benchmarks/${encodeURIComponent(run.benchmark)}`, run.benchmark_name || run.benchmark)),
          h('span', {}, run.task_set ? ['task set ', h('code', {}, run.task_set)] : `${run.coverage} task list`),
          h('span', { title: run.manifest_digest }, 'pinned version ', h('strong', {}, run.manifest_version), ' ',
            h('span', { class: 'mono' }, shortDigest(run.manifest_digest))))),
      h('div', { class: 'actions' },
        STOPPABLE.has(run.status) ? stopButton(run, changed) : null,
        downloadMenu(run))),
    run.reason ? h('div', { class: `alert ${run.status === 'failed' ? 'bad' : 'warn'}`, id: 'run-reason' }, run.reason) : null);
  return head;
}

function stopButton(run, changed) {
  return h('button', {
    type: 'button', class: 'danger', id: 'stop-run', onclick: async (e) => {
      const btn = e.currentTarget; // read before awaiting: it is null once the event is dispatched
      const ok = await confirmDialog({
        title: `Stop ${run.name || run.id}?`,
        body: 'No new attempts start, running sandboxes are stopped and queued attempts are cancelled. Results already in stay.',
        confirmLabel: 'Stop run', danger: true,
      });
      if (!ok) return;
      btn.disabled = true;
      try {
        await api.stopRun(run.id);
        toast(`Stopping ${run.name || run.id}.`);
      } catch (err) {
        toast(`Could not stop the run: ${err.message}`, 'bad');
      }
      await changed();
    },
  }, 'Stop');
}

const DOWNLOADS = [
  ['summary', 'Summary', 'summary.csv: one row per agent'],
  ['results', 'Results', 'results.csv: one row per task × attempt'],
  ['artifacts', 'Artifacts', 'every stored file, per result'],
  ['logs', 'Logs', 'logs.txt: the run log'],
  ['all', 'Everything', 'all of the above in one zip'],
];

function downloadMenu(run) {
  if (run.status === 'pending' || run.status === 'queued') {
    return h('button', { type: 'button', disabled: true, id: 'download-menu', title: 'Downloads open once the run is running.' }, 'Download ▾');
  }
  const o = run.outcomes || {};
  if (!(o.passed || o.failed || o.errored) && !STOPPABLE.has(run.status) && run.status !== 'stopping') {
    return h('button', { type: 'button', disabled: true, id: 'download-menu', title: 'Nothing to download: no attempt ran.' }, 'Download ▾');
  }
  return menu('Download', DOWNLOADS.map(([type, label, sub]) => ({
    label, sub, onSelect: async () => {
      toast(`Preparing ${label.toLowerCase()} of ${run.name || run.id}…`);
      try {
        const saved = await download(api.downloadPath(run.id, type), `${run.name || run.id}-${type}.zip`);
        toast(`Saved ${saved.name} (${bytes(saved.size)}).`, 'ok');
      } catch (err) {
        toast(`Download failed: ${err.message}`, 'bad');
      }
    },
  })), { id: 'download-menu' });
}

function statStrip(run, fetchedAt) {
  const tok = run.tokens || {};
  const s = run.submission?.settings || {};
  const stat = (label, value, hint, id) => h('div', { class: 'stat', id: id || null },
    h('div', { class: 'label' }, label), h('div', { class: 'value' }, value), hint ? h('div', { class: 'hint' }, hint) : null);
  return h('div', { class: 'run-stats' },
    h('div', { class: 'card run-progress' }, h('div', { class: 'card-body' },
      h('div', { class: 'label muted small' }, 'Progress'),
      outcomeBar(run.progress, run.outcomes, { large: true }),
      outcomeLegend(run.outcomes))),
    h('div', { class: 'stats' },
      stat('Duration', run.started_at ? liveDuration(run.duration_sec, !run.ended_at, fetchedAt) : '—',
        run.ended_at ? `ended ${dateTime(run.ended_at)}` : run.started_at ? 'live' : 'not started', 'stat-duration'),
      stat('Tokens', tokens((tok.input || 0) + (tok.output || 0)), `in ${tokens(tok.input)} · out ${tokens(tok.output)} · cache ${tokens(tok.cache)}`),
      stat('LLM cost', cost(run.cost_usd, run.cost_estimated), run.judge || run.usage_self_reported ? [run.judge ? 'agents only ' : null, selfReported(run.usage_self_reported)] : null, 'stat-cost'),
      run.judge ? stat('Judge', cost(run.judge.cost_usd, run.judge.cost_estimated),
        `${run.judge.model} · ${count(run.judge.calls)} ${run.judge.calls === 1 ? 'call' : 'calls'} · in ${tokens(run.judge.tokens?.input)} · out ${tokens(run.judge.tokens?.output)}`, 'stat-judge') : null,
      stat('Shape', `${count(run.agent_count)} × ${count(run.task_count)} × ${count(s.attempts_per_task)}`, 'agents × tasks × attempts'),
      // The date on the value's line, the time beside the submitter: a
      // whole date-time does not fit a stat card's line.
      stat('Submitted', dateTime(run.created_at).split(' ')[0],
        [dateTime(run.created_at).split(' ')[1] || null, run.submission?.submitted_by ? ` by ${run.submission.submitted_by_name || userLabel(run.submission.submitted_by)}` : null], 'stat-submitted')));
}

function overview(run, fetchedAt) {
  const agents = run.agents || [];
  return h('div', {},
    h('section', { class: 'section', 'aria-labelledby': 'agents-title' },
      h('div', { class: 'section-head' }, h('h2', { id: 'agents-title' }, 'Agents'),
        metricsBadge(run)),
      agentsTable(agents, fetchedAt)),
    h('div', { class: 'grid-2 section' },
      h('section', { class: 'card', 'aria-labelledby': 'categories-title' },
        h('div', { class: 'card-head' }, h('h3', { id: 'categories-title' }, 'pass@1 by category')),
        h('div', { class: 'card-body' }, categoryBars(agents))),
      h('section', { class: 'card', 'aria-labelledby': 'curve-title' },
        h('div', { class: 'card-head' }, h('h3', { id: 'curve-title' }, 'pass@k and pass^k curves')),
        h('div', { class: 'card-body', id: 'pass-at-k' }, passAtKChart(run, agents, 'pass_at_k_curve', 'pass@k')),
        h('div', { class: 'card-body', id: 'pass-hat-k' }, passAtKChart(run, agents, 'pass_hat_k_curve', 'pass^k')),
        h('p', { class: 'card-body small muted' },
          'pass@k: the chance that at least one of k attempts passes; pass^k: that all k pass (reliability). Both are unbiased per-task estimates over the scored attempts, averaged over tasks, with Wilson 95% intervals; see How gauntlet scores (docs/SCORING.md).'))),
    powerCard(run, agents),
    compareCard(run, agents));
}

// compareCard offers to compare one of the run's agents with the best
// entrant of its benchmark's leaderboard or with a chosen baseline
// (RUN/AGENT): the comparison page contrasts them task by task.
function compareCard(run, agents) {
  if (run.status !== 'finished' || !agents.length) return null;
  const pick = h('select', { id: 'compare-agent', 'aria-label': 'Agent to compare' },
    agents.map((a) => h('option', { value: String(a.index) }, a.label)));
  const baseline = h('input', { type: 'text', id: 'compare-baseline', placeholder: 'RUN or RUN/AGENT', size: 24, 'aria-label': 'Baseline' });
  const status = h('span', { class: 'small muted', id: 'compare-status', role: 'status' });
  const me = () => `${run.id}/${pick.value}`;
  const go = (a) => navigate(`/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(me())}`);
  const withBest = async () => {
    status.textContent = 'Finding the best entrant…';
    try {
      const board = await api.leaderboard(run.benchmark, 'pass@1');
      const best = (board.rows || []).find((r) => r.best);
      if (!best) { status.textContent = 'The leaderboard has no entrant yet.'; return; }
      const bestRun = await api.run(best.run_id);
      const agent = (bestRun.agents || []).find((a) => a.harness === best.harness && (a.model || '') === (best.model || ''));
      if (!agent) { status.textContent = `The best entrant's agent was not found in run ${best.run_id}.`; return; }
      go(`${best.run_id}/${agent.index}`);
    } catch (err) {
      status.textContent = `Could not find the best entrant: ${err.message}`;
    }
  };
  return h('section', { class: 'card section', id: 'compare', 'aria-labelledby': 'compare-title' },
    h('div', { class: 'card-head' }, h('h3', { id: 'compare-title' }, 'Compare')),
    h('div', { class: 'card-body' },
      h('div', { class: 'toolbar' },
        h('label', {}, 'Agent ', pick),
        h('button', { type: 'button', id: 'compare-best', onclick: withBest }, 'Compare with the best'),
        h('form', { class: 'inline', onsubmit: (e) => { e.preventDefault(); if (baseline.value.trim()) go(baseline.value.trim()); } },
          baseline, h('button', { type: 'submit', id: 'compare-with-baseline' }, 'Compare with this baseline')),
        status),
      h('p', { class: 'small muted' }, 'Task by task: the paired difference, the tasks one solves and the other does not, per category, cost and time. Same figures offline: ',
        h('code', {}, `gauntlet compare BASELINE ${run.id}/AGENT`))));
}

// metricsBadge marks scores that do not cover the whole run: a going run's
// (they change as attempts finish), a stopped run's (only the attempts
// that ran), and an ended run's whose last results are still being scored.
function metricsBadge(run) {
  const partial = (title) => h('span', { class: 'badge warn plain', id: 'metrics-partial', title }, 'partial');
  if (ACTIVE_RUN.has(run.status)) return partial('Scores so far: they change as attempts finish');
  if (run.status === 'stopped') return partial('The run was stopped: scores cover the attempts that ran');
  if (!run.metrics_current) return h('span', { class: 'badge plain', id: 'metrics-updating', title: 'The last results are being scored' }, 'updating');
  return null;
}

// powerCard shows the server's power analysis: how many tasks × attempts a
// paired test needs to separate the two best agents by pass@1.
function powerCard(run, agents) {
  const p = run.power;
  if (!p) return null;
  const label = (i) => agents.find((a) => a.index === i)?.label || `agent ${i}`;
  const enough = (run.task_count || 0) >= p.tasks;
  return h('section', { class: 'card section', id: 'power', 'aria-labelledby': 'power-title' },
    h('div', { class: 'card-head' }, h('h3', { id: 'power-title' }, 'Sample size to separate the top two')),
    h('div', { class: 'card-body' },
      h('p', {}, `${label(p.agent_a)} (${pct(p.pass_a)}) vs ${label(p.agent_b)} (${pct(p.pass_b)}): a paired test needs `,
        h('strong', { id: 'power-tasks' }, `${count(p.tasks)} tasks × ${count(p.attempts)} attempts`),
        ` (${count(p.pairs)} paired observations) for ${Math.round(p.power * 100)}% power at α = ${p.alpha}. `,
        enough ? 'This run has enough tasks.' : `This run has ${count(run.task_count)}.`),
      h('ul', { class: 'muted small' }, ...p.assumptions.map((a) => h('li', {}, a))),
      h('p', { class: 'muted small' }, 'Same figure offline: ', h('code', {}, `gauntlet plan-size --pass-a ${p.pass_a} --pass-b ${p.pass_b} --attempts ${p.attempts}`))));
}

// AGENT_SORT gives each sortable column of the agents table its key.
const AGENT_SORT = {
  agent: (a) => a.label, status: (a) => a.status, progress: (a) => a.progress?.completed || 0,
  pass1: (a) => a.metrics?.pass1?.value, passk: (a) => a.metrics?.pass_at_k?.value, passhatk: (a) => a.metrics?.pass_hat_k?.value,
  cost_task: (a) => a.metrics?.cost_per_task?.value, time_task: (a) => a.metrics?.time_per_task?.value,
  tokens_task: (a) => a.metrics?.tokens_per_task?.value, outcomes: (a) => a.outcomes?.passed || 0, cost: (a) => a.cost_usd,
};

// agentSort is the Agent Results order the user chose; it outlives the
// re-renders of a live run's polling.
let agentSort = { key: '', dir: 1 };

/** agentsTable renders the Agent Results table, sortable by every column (click a header; again to reverse). */
function agentsTable(agents, fetchedAt) {
  let sort = agentSort;
  const box = h('div', { id: 'agents-table' });
  const paint = () => {
    const rows = agents.map((a, i) => ({ a, i }));
    if (sort.key) {
      const key = AGENT_SORT[sort.key];
      rows.sort((x, y) => {
        const vx = key(x.a); const vy = key(y.a);
        if (vx === undefined || vx === null) return 1; // missing values last either way
        if (vy === undefined || vy === null) return -1;
        return (typeof vx === 'string' ? vx.localeCompare(vy) : vx - vy) * sort.dir;
      });
    }
    replace(box, agentsRows(rows, agents, sort, fetchedAt, (key) => {
      sort = { key, dir: sort.key === key ? -sort.dir : (key === 'agent' || key === 'status' ? 1 : -1) };
      agentSort = sort;
      paint();
    }));
  };
  paint();
  return box;
}

function agentsRows(rows, agents, sort, fetchedAt, onSort) {
  const k = agents.reduce((max, a) => Math.max(max, a.metrics?.pass_at_k?.k || 0), 0);
  const head = (key, label) => h('button', { type: 'button', class: 'th-sort', dataset: { sort: key }, 'aria-pressed': String(sort.key === key),
    onclick: () => onSort(key) }, label, sort.key === key ? (sort.dir > 0 ? ' ▴' : ' ▾') : '');
  const col = (key, label, rest) => ({ label, header: head(key, label), sort: sort.key === key ? (sort.dir > 0 ? 'ascending' : 'descending') : null, ...rest });
  return table([
    col('agent', 'Agent', { class: 'wrap', cell: ({ a, i }) => [
      h('span', { class: 'swatch-dot', style: { background: seriesColor(i) } }),
      h('strong', {}, a.label), a.name && !a.label.includes(a.name) ? h('div', { class: 'sub' }, a.name) : null] }),
    col('status', 'Status', { cell: ({ a }) => statusBadge(a.status) }),
    col('progress', 'Progress', { cell: ({ a }) => [outcomeBar(a.progress, a.outcomes), agentDuration(a, fetchedAt)] }),
    col('pass1', 'pass@1', { class: 'num', cell: ({ a }) => numCell(estimateParts(a.metrics?.pass1)) }),
    col('passk', k ? `pass@k (k≤${k})` : 'pass@k', { class: 'num', cell: ({ a }) => (a.metrics?.pass_at_k
      ? [h('span', { class: 'sub' }, `k=${a.metrics.pass_at_k.k} `), numCell(estimateParts(a.metrics.pass_at_k))] : '—') }),
    col('passhatk', k ? `pass^k (k≤${k})` : 'pass^k', { class: 'num', cell: ({ a }) => (a.metrics?.pass_hat_k
      ? [h('span', { class: 'sub' }, `k=${a.metrics.pass_hat_k.k} `), numCell(estimateParts(a.metrics.pass_hat_k))] : '—') }),
    col('cost_task', 'Cost/task', { class: 'num', cell: ({ a }) => [numCell(estimateParts(a.metrics?.cost_per_task, usd)), a.metrics?.cost_per_task && a.usage_self_reported ? h('div', {}, selfReported(true)) : null] }),
    col('time_task', 'Time/task', { class: 'num', cell: ({ a }) => numCell(estimateParts(a.metrics?.time_per_task, seconds)) }),
    col('tokens_task', 'Tokens/task', { class: 'num', cell: ({ a }) => [numCell(estimateParts(a.metrics?.tokens_per_task, tokens)), a.metrics?.tokens_per_task && a.usage_self_reported ? h('div', {}, selfReported(true)) : null] }),
    col('outcomes', 'Passed / failed / errored', { class: 'num', cell: ({ a }) => [`${count(a.outcomes?.passed)} / ${count(a.outcomes?.failed)} / ${count(a.outcomes?.errored)}`,
      errorRules(a)] }),
    col('cost', 'Cost', { class: 'num', cell: ({ a }) => [cost(a.cost_usd, a.cost_estimated), a.usage_self_reported ? h('div', {}, selfReported(true)) : null,
      a.judge ? h('div', { class: 'sub', title: `the LLM judge (${a.judge.model}) grading this agent's attempts: ${count(a.judge.calls)} calls, apart from the agent's cost` },
        ['judge ', cost(a.judge.cost_usd, a.judge.cost_estimated)]) : null] }),
  ], rows, { empty: 'This run has no agents.', rowAttrs: ({ a }) => ({ dataset: { agent: String(a.index) } }) });
}

function categoryBars(agents) {
  const categories = [...new Set(agents.flatMap((a) => (a.metrics?.categories || []).map((c) => c.category)))].sort();
  if (!categories.length) return h('p', { class: 'muted' }, 'No per-category pass@1 yet: it needs scored attempts of tasks with a category.');
  // Each bar names its agent (the colour alone needs the legend), a 0%
  // bar keeps a visible stub at the baseline, and the legend is this
  // chart's own.
  return h('figure', { class: 'chart', style: { margin: '0' } },
    h('div', { class: 'bars', id: 'category-bars' }, categories.map((cat) => [
      h('span', { class: 'name' }, cat),
      h('div', { class: 'row' }, agents.map((a, i) => {
        const e = (a.metrics?.categories || []).find((c) => c.category === cat)?.pass1;
        return h('div', { class: 'bar-line', title: `${a.label}: ${estimateParts(e).value} ${estimateParts(e).ci}`, dataset: { agent: String(a.index) } },
          h('span', { class: 'bar-agent', style: { borderColor: seriesColor(i) } }, a.label),
          h('div', { class: 'bar-track' },
            e ? h('div', { class: ['bar-fill', e.value === 0 && 'zero'], style: { width: pct(e.value), background: seriesColor(i) } }) : null,
            e && e.ci_low !== null && e.ci_low !== undefined
              ? h('div', { class: 'bar-ci', style: { left: pct(e.ci_low), width: pct(e.ci_high - e.ci_low) } }) : null),
          h('span', { class: 'bar-value' }, e ? pct(e.value, 0) : '—'));
      })),
    ])),
    h('figcaption', { class: 'legend', id: 'category-legend' }, agents.map((a, i) => h('span', {},
      h('span', { class: 'swatch', style: { background: seriesColor(i) } }), a.label))));
}

// errorRules says what the scoring rules did with the agent's errors: agent
// errors count as failures, platform errors and failed judges are left out.
function errorRules(a) {
  const e = a.metrics?.errors;
  if (!e || !(e.agent_errors || e.platform_errors || e.judge_failures)) return null;
  return h('div', { class: 'sub error-rules', title: 'Agent errors are scored as failures; platform errors (after retries) and failed judges are left out of the scores. See How gauntlet scores (docs/SCORING.md).' },
    `${count(e.agent_errors)} agent (as failures) · ${count(e.platform_errors)} platform · ${count(e.judge_failures)} judge (left out)`);
}

// passAtKChart draws one curve per agent from the metrics' curve field
// (pass_at_k_curve or pass_hat_k_curve), named name.
function passAtKChart(run, agents, field, name) {
  const attempts = run.submission?.settings?.attempts_per_task || 1;
  const series = agents.map((a, i) => ({
    label: a.label, colorIndex: i,
    points: (a.metrics?.[field] || []).map((p) => ({ x: p.k, y: p.value, lo: p.ci_low, hi: p.ci_high })),
  }));
  if (!series.some((s) => s.points.length)) {
    return h('p', { class: 'muted' }, `The ${name} curve appears once a task has a scored attempt.`);
  }
  const sym = name.replace(/k$/, '');
  const described = series.map((s) => `${s.label}: ${s.points.map((p) => `${sym}${p.x} ${pct(p.y)}`).join(', ')}`).join('; ');
  return h('div', {},
    lineChart({ series, xLabel: 'k (attempts)', yLabel: name, title: `${name} for k = 1 to ${attempts}`, description: described }),
    attempts === 1 ? h('p', { class: 'small muted' }, `One attempt per task: ${name} needs more attempts to show a curve.`) : null);
}

async function renderConfig(ctx, panel, run) {
  replace(panel, loading('Loading configuration'));
  try {
    const text = await api.runConfig(run.id, { signal: ctx.signal });
    const copy = h('button', { type: 'button', class: 'small', onclick: async () => {
      try { await navigator.clipboard.writeText(text); toast('Copied the configuration.', 'ok'); } catch { toast('Copying needs clipboard permission.', 'bad'); }
    } }, 'Copy');
    replace(panel,
      h('div', { class: 'toolbar' }, h('span', { class: 'grow muted' },
        'The resolved configuration, with the pinned manifest version: submit it again to repeat this run exactly.'), copy),
      h('pre', { class: 'block tall', id: 'run-config' }, text));
  } catch (err) {
    if (err.name === 'AbortError') return;
    replace(panel, errorBox(err, 'Could not load the configuration'));
  }
}
