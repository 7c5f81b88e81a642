// Runs: the workspace's runs, filtered by benchmark and status, a page at a
// time (cursor pagination), updating while any shown run is active.

import { api } from '../api.js';
import { h, replace, link } from '../dom.js';
import { ACTIVE_RUN, errorBox, loading, outcomeBar, selfReported, statusBadge, table } from '../components.js';
import { ago, cost, count, dateTime, seconds, tokens } from '../format.js';
import { setQuery } from '../router.js';
import { poll } from '../poll.js';
import { userLabel } from '../workspace.js';

const STATUSES = ['pending', 'queued', 'running', 'stopping', 'finished', 'failed', 'stopped'];
const PAGE = 25;

/** renderRuns renders the run list page. */
export async function renderRuns(ctx) {
  document.title = 'Runs · gauntlet';
  const state = {
    benchmark: ctx.query.get('benchmark') || '',
    status: ctx.query.get('status') || '',
    cursor: ctx.query.get('cursor') || '',
    previous: [], // cursors of earlier pages
  };
  const benchSelect = h('select', { id: 'filter-benchmark', name: 'benchmark' }, h('option', { value: '' }, 'All benchmarks'));
  if (state.benchmark) benchSelect.append(h('option', { value: state.benchmark }, state.benchmark));
  benchSelect.value = state.benchmark;
  const statusSelect = h('select', { id: 'filter-status', name: 'status' },
    h('option', { value: '' }, 'Any status'), STATUSES.map((s) => h('option', { value: s }, s)));
  statusSelect.value = state.status;
  const listBox = h('div', { id: 'run-list' }, loading('Loading runs'));
  const pager = h('div', { class: 'pager' });
  replace(ctx.main,
    h('div', { class: 'page-head' },
      h('div', { class: 'titles' }, h('h1', {}, 'Runs'), h('div', { class: 'sub' }, 'Every run of this workspace, newest first.')),
      h('div', { class: 'actions' }, h('a', { class: 'button primary', href: '/runs/new' }, 'New run'))),
    h('div', { class: 'toolbar', role: 'search', 'aria-label': 'Filter runs' },
      h('label', { for: 'filter-benchmark' }, 'Benchmark', benchSelect),
      h('label', { for: 'filter-status' }, 'Status', statusSelect)),
    listBox, pager);

  api.benchmarks({ signal: ctx.signal }).then((res) => {
    for (const b of res.benchmarks || []) {
      if (b.key !== state.benchmark) benchSelect.append(h('option', { value: b.key }, b.name && b.name !== b.key ? `${b.name} (${b.key})` : b.key));
    }
  }).catch(() => { /* the filter still works with a typed key in the URL */ });

  let active = false;
  const load = async () => {
    try {
      const res = await api.runs({ benchmark: state.benchmark, status: state.status, cursor: state.cursor, limit: PAGE }, { signal: ctx.signal });
      const runs = res.runs || [];
      active = runs.some((r) => ACTIVE_RUN.has(r.status));
      replace(listBox, runTable(runs, state));
      renderPager(res.next_cursor || '');
    } catch (err) {
      if (err.name === 'AbortError') throw err;
      replace(listBox, errorBox(err, 'Could not load runs'));
    }
    return active;
  };

  const renderPager = (next) => {
    replace(pager,
      h('span', {}, `Page ${state.previous.length + 1}`),
      h('button', {
        type: 'button', disabled: !state.previous.length && !state.cursor, onclick: () => {
          state.cursor = state.previous.pop() || '';
          reload();
        },
      }, '← Newer'),
      h('button', {
        type: 'button', id: 'next-page', disabled: !next, onclick: () => {
          state.previous.push(state.cursor);
          state.cursor = next;
          reload();
        },
      }, 'Older →'));
  };

  const reload = async () => {
    setQuery({ benchmark: state.benchmark, status: state.status, cursor: state.cursor });
    replace(listBox, loading('Loading runs'));
    await load();
    poller.kick();
  };
  benchSelect.addEventListener('change', () => { state.benchmark = benchSelect.value; state.cursor = ''; state.previous = []; reload(); });
  statusSelect.addEventListener('change', () => { state.status = statusSelect.value; state.cursor = ''; state.previous = []; reload(); });
  await load();
  const poller = poll(ctx, load, 3000);
}

function runTable(runs, state) {
  const filtered = state.benchmark || state.status;
  return table([
    { label: 'Run', class: 'wrap', cell: (r) => [
      link(`/benchmarks/runs/${encodeURIComponent(r.id)}`, h('strong', {}, r.name || r.id)),
      h('div', { class: 'sub mono' }, r.id),
    ] },
    { label: 'Benchmark', cell: (r) => [link(`/benchmarks/${encodeURIComponent(r.benchmark)}`, r.benchmark_name || r.benchmark),
      h('div', { class: 'sub' }, r.task_set ? `task set ${r.task_set}` : r.coverage, ` · v${r.manifest_version}`)] },
    { label: 'Status', cell: (r) => [statusBadge(r.status), r.reason ? h('div', { class: 'sub' }, h('span', { class: 'ellipsis', title: r.reason }, r.reason)) : null] },
    { label: 'Progress', cell: (r) => outcomeBar(r.progress, r.outcomes) },
    { label: 'Agents', class: 'num', cell: (r) => count(r.agent_count) },
    { label: 'Tasks', class: 'num', cell: (r) => count(r.task_count) },
    { label: 'Duration', class: 'num', cell: (r) => (r.started_at ? seconds(r.duration_sec) : '—') },
    { label: 'Tokens', class: 'num', cell: (r) => tokens((r.tokens?.input || 0) + (r.tokens?.output || 0)) },
    { label: 'Cost', class: 'num', cell: (r) => [cost(r.cost_usd, r.cost_estimated), r.usage_self_reported ? ' ' : null, selfReported(r.usage_self_reported)] },
    { label: 'Submitted', cell: (r) => [h('span', { title: dateTime(r.created_at) }, ago(r.created_at)),
      r.submission?.submitted_by ? h('div', { class: 'sub' }, `by ${r.submission.submitted_by_name || userLabel(r.submission.submitted_by)}`) : null] },
  ], runs, {
    empty: filtered ? 'No run matches these filters.' : 'No runs yet. Submit one to put agents on a leaderboard.',
    rowAttrs: (r) => ({ dataset: { id: r.id, status: r.status } }),
  });
}
