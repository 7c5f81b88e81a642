// The Results tab of a run: one row per task × attempt with filters and
// cursor pages, and a drawer with one result's rewards, graded output,
// agent transcript, trajectory and artifacts.

import { conversation } from '../conversation.js';
import { api, download } from '../api.js';
import { h, replace } from '../dom.js';
import { errorBox, loading, selfReported, statusBadge, table, taskCheckBadge, toast } from '../components.js';
import { bytes, cost, count, dateTime, seconds, taskCheckText, tokens } from '../format.js';
import { setQuery } from '../router.js';

const OUTCOMES = ['passed', 'failed', 'errored', 'judge_failed', 'cancelled'];
const PAGE = 50;

/** renderResults fills panel with the results of run. */
export function renderResults(ctx, panel, run) {
  const q = new URLSearchParams(window.location.search);
  const state = {
    agent: q.get('agent') || '', task: q.get('task') || '', outcome: q.get('outcome') || '', q: q.get('q') || '',
    cursor: '', previous: [],
  };
  // One or more agents: none ticked means every agent (agent=0,2 in the URL).
  const picked = new Set(state.agent.split(',').filter(Boolean));
  const agentBoxes = (run.agents || []).map((a) => h('input', { type: 'checkbox', value: String(a.index),
    id: `results-agent-${a.index}`, checked: picked.has(String(a.index)) }));
  const agentSel = h('fieldset', { id: 'results-agent', class: 'checks' }, h('legend', {}, 'Agents (none = all)'),
    agentBoxes.map((box, i) => h('label', {}, box, ` ${run.agents[i].label}`)));
  const outcomeSel = h('select', { id: 'results-outcome' }, h('option', { value: '' }, 'Any outcome'),
    OUTCOMES.map((o) => h('option', { value: o }, o)));
  outcomeSel.value = state.outcome;
  const taskList = h('datalist', { id: 'results-tasks' });
  const taskInput = h('input', { type: 'text', id: 'results-task', list: 'results-tasks', placeholder: 'any task', value: state.task, size: 18 });
  const search = h('input', { type: 'search', id: 'results-q', placeholder: 'Search task or message', value: state.q, size: 24 });
  const listBox = h('div', { id: 'results-list' });
  const pager = h('div', { class: 'pager' });
  replace(panel,
    h('div', { class: 'toolbar', role: 'search', 'aria-label': 'Filter results' },
      agentSel,
      h('label', {}, 'Task', taskInput, taskList),
      h('label', {}, 'Outcome', outcomeSel),
      h('label', { class: 'grow' }, 'Search', search),
      h('button', { type: 'button', onclick: () => load() }, 'Refresh')),
    listBox, pager);

  api.benchmark(run.benchmark, { signal: ctx.signal }).then((b) => {
    const names = b.manifest?.task_set_tasks?.[run.task_set] || (b.manifest?.tasks || []).map((t) => t.name);
    replace(taskList, names.map((n) => h('option', { value: n })));
  }).catch(() => { /* the task filter still takes a typed name */ });

  // Only the latest load may render: a slower answer to an earlier filter
  // must not replace the list the current filter asked for.
  let latest = 0;
  const load = async () => {
    const mine = ++latest;
    setQuery({ agent: state.agent, task: state.task, outcome: state.outcome, q: state.q });
    replace(listBox, loading('Loading results'));
    try {
      const res = await api.results(run.id, {
        agent: state.agent, task: state.task, outcome: state.outcome, q: state.q, cursor: state.cursor, limit: PAGE,
      }, { signal: ctx.signal });
      if (mine !== latest) return;
      replace(listBox, resultsTable(ctx, run, res.results || []));
      renderPager(res.next_cursor || '');
    } catch (err) {
      if (err.name === 'AbortError' || mine !== latest) return;
      replace(listBox, errorBox(err, 'Could not load results'));
    }
  };
  const renderPager = (next) => {
    replace(pager,
      h('span', {}, `Page ${state.previous.length + 1}`),
      h('button', { type: 'button', disabled: !state.previous.length, onclick: () => { state.cursor = state.previous.pop() || ''; load(); } }, '← Previous'),
      h('button', { type: 'button', disabled: !next, onclick: () => { state.previous.push(state.cursor); state.cursor = next; load(); } }, 'Next →'));
  };
  const restart = () => { state.cursor = ''; state.previous = []; load(); };
  agentSel.addEventListener('change', () => {
    state.agent = agentBoxes.filter((b) => b.checked).map((b) => b.value).join(',');
    restart();
  });
  outcomeSel.addEventListener('change', () => { state.outcome = outcomeSel.value; restart(); });
  taskInput.addEventListener('change', () => { state.task = taskInput.value.trim(); restart(); });
  let timer = 0;
  search.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(() => { state.q = search.value.trim(); restart(); }, 300);
  });
  ctx.onCleanup(() => clearTimeout(timer));
  load();
}

function resultsTable(ctx, run, results) {
  const wrap = table([
    // A task the environment check flagged is marked, so a failure there is
    // not read as the agent's alone.
    { label: 'Task', cell: (r) => [h('code', {}, r.task), r.task_check ? [' ', taskCheckBadge(r.task_check)] : null] },
    { label: 'Agent', cell: (r) => r.agent_label },
    { label: 'Attempt', class: 'num', cell: (r) => String(r.attempt) },
    { label: 'Outcome', cell: (r) => [statusBadge(r.outcome), r.error_class ? h('span', { class: 'sub' }, ` ${r.error_class}`) : null] },
    { label: 'Reward', class: 'num', cell: (r) => (r.reward === null || r.reward === undefined ? '—' : r.reward.toFixed(3)) },
    { label: 'Duration', class: 'num', cell: (r) => seconds(r.duration_sec) },
    { label: 'Tokens', class: 'num', cell: (r) => tokens((r.tokens?.input || 0) + (r.tokens?.output || 0)) },
    { label: 'Cost', class: 'num', cell: (r) => [cost(r.cost_usd, r.cost_estimated), r.usage_self_reported ? ' ' : null, selfReported(r.usage_self_reported)] },
    { label: 'Message', cell: (r) => (r.message ? h('span', { class: 'ellipsis muted', title: r.message }, r.message) : '') },
  ], results, {
    empty: 'No result matches. Results appear as attempts finish.',
    rowAttrs: (r) => ({
      class: 'clickable', tabindex: '0', dataset: { result: r.id, outcome: r.outcome },
      'aria-label': `${r.task}, ${r.agent_label}, attempt ${r.attempt}: ${r.outcome}. Open details.`,
    }),
  });
  const rows = wrap.querySelectorAll('tbody tr');
  results.forEach((r, i) => {
    const open = () => openDrawer(ctx, run, r, rows[i]);
    rows[i].addEventListener('click', open);
    rows[i].addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); open(); } });
  });
  return wrap;
}

let closeOpenDrawer = null;

async function openDrawer(ctx, run, row, returnFocus) {
  if (closeOpenDrawer) closeOpenDrawer();
  const body = h('div', { class: 'drawer-body' }, loading('Loading result'));
  const closeBtn = h('button', { type: 'button', class: 'small', 'aria-label': 'Close result details' }, 'Close ✕');
  const drawer = h('div', { class: 'drawer', role: 'dialog', 'aria-modal': 'true', 'aria-labelledby': 'drawer-title', id: 'result-drawer' },
    h('header', {}, h('h2', { id: 'drawer-title' }, `${row.task} · attempt ${row.attempt}`), statusBadge(row.outcome), taskCheckBadge(row.task_check), closeBtn),
    body);
  const backdrop = h('div', { class: 'drawer-backdrop' });
  const onKey = (e) => { if (e.key === 'Escape') close(); };
  const close = () => {
    drawer.remove();
    backdrop.remove();
    document.removeEventListener('keydown', onKey);
    closeOpenDrawer = null;
    returnFocus?.focus();
  };
  closeOpenDrawer = close;
  ctx.onCleanup(() => { if (closeOpenDrawer === close) close(); });
  closeBtn.addEventListener('click', close);
  backdrop.addEventListener('click', close);
  document.addEventListener('keydown', onKey);
  document.body.append(backdrop, drawer);
  closeBtn.focus();
  try {
    const detail = await api.result(run.id, row.id, { signal: ctx.signal });
    replace(body, resultDetail(detail));
  } catch (err) {
    if (err.name === 'AbortError') return;
    replace(body, errorBox(err, 'Could not load the result'));
  }
}

function resultDetail(d) {
  const rewards = Object.entries(d.rewards || {});
  return h('div', {},
    h('dl', { class: 'kv result-meta' },
      h('dt', {}, 'Agent'), h('dd', {}, d.agent_label),
      h('dt', {}, 'Outcome'), h('dd', {}, statusBadge(d.outcome), d.error_class ? ` ${d.error_class} error` : ''),
      d.message ? [h('dt', {}, 'Message'), h('dd', {}, d.message)] : null,
      taskCheckText(d.task_check) ? [h('dt', {}, 'Environment'), h('dd', { id: 'result-task-check' }, taskCheckBadge(d.task_check), ' ',
        h('span', { class: 'small muted' }, taskCheckText(d.task_check).title))] : null,
      h('dt', {}, 'Reward'), h('dd', { id: 'result-reward' }, d.reward === null || d.reward === undefined ? 'none (scores 0)' : String(d.reward)),
      rewards.length ? [h('dt', {}, 'Rewards'), h('dd', {}, rewards.map(([k, v], i) => [i ? ', ' : '', h('code', {}, k), ` ${v}`]))] : null,
      h('dt', {}, 'Duration'), h('dd', {}, seconds(d.duration_sec)),
      h('dt', {}, 'Tokens'), h('dd', {}, `in ${tokens(d.tokens?.input)} · out ${tokens(d.tokens?.output)} · cache ${tokens(d.tokens?.cache)}`),
      h('dt', {}, 'Cost'), h('dd', { id: 'result-cost' }, cost(d.cost_usd, d.cost_estimated), d.usage_self_reported ? ' ' : null, selfReported(d.usage_self_reported)),
      d.judge ? [
        h('dt', {}, 'Judge'), h('dd', { id: 'result-judge' }, h('code', {}, d.judge.model), ` · ${count(d.judge.calls)} ${d.judge.calls === 1 ? 'call' : 'calls'}`),
        h('dt', {}, 'Judge tokens'), h('dd', { id: 'result-judge-tokens' }, `in ${tokens(d.judge.tokens?.input)} · out ${tokens(d.judge.tokens?.output)} · cache ${tokens(d.judge.tokens?.cache)}`),
        h('dt', {}, 'Judge cost'), h('dd', { id: 'result-judge-cost', title: 'Grading, not the agent: not in its tokens or cost' }, cost(d.judge.cost_usd, d.judge.cost_estimated)),
      ] : null,
      h('dt', {}, 'Started'), h('dd', {}, dateTime(d.started_at)),
      h('dt', {}, 'Ended'), h('dd', {}, dateTime(d.ended_at)),
      d.generation ? [h('dt', {}, 'Generation'), h('dd', {}, `${d.generation} (after infrastructure retries)`)] : null),
    (d.steps || []).length ? steps(d.steps) : null,
    h('h3', {}, 'Graded output'),
    phase(d.output, 'verifier', 'The verifier printed nothing.'),
    h('h3', {}, 'Agent transcript'),
    phase(d.agent_output, 'agent', 'The agent printed nothing.'),
    h('h3', {}, 'Conversation'),
    d.trajectory
      ? [conversation(d.trajectory),
        h('details', { class: 'fold' }, h('summary', {}, 'agent/trajectory.json'), h('pre', { class: 'block' }, JSON.stringify(d.trajectory, null, 2)))]
      : h('p', { class: 'muted', id: 'no-trajectory' }, 'This agent stored no trajectory.'),
    h('h3', {}, `Artifacts (${count((d.artifacts || []).length)})`),
    artifacts(d.artifacts || []),
    (d.earlier_attempts || []).length ? [h('h3', {}, 'Earlier generations'),
      h('ul', {}, d.earlier_attempts.map((e) => h('li', {}, `generation ${e.generation}: `, statusBadge(e.outcome),
        e.error_class ? ` ${e.error_class}` : '', e.message ? ` — ${e.message}` : '')))] : null);
}

// steps shows a multi-step attempt's steps: a row each (reward, times,
// tokens, cost, exception), then each step's graded output, agent output
// and conversation in a fold.
function steps(list) {
  return h('section', { id: 'result-steps' },
    h('h3', {}, `Steps (${count(list.length)} run)`),
    h('table', { class: 'steps' },
      h('thead', {}, h('tr', {}, ['Step', 'Reward', 'Agent', 'Verifier', 'Tokens', 'Cost', 'Exception'].map((c) => h('th', {}, c)))),
      h('tbody', {}, list.map((s) => h('tr', {},
        h('td', {}, h('code', {}, s.name)),
        h('td', { class: 'step-reward' }, s.reward === null || s.reward === undefined ? 'none' : String(s.reward),
          Object.keys(s.rewards || {}).length > 1 ? h('span', { class: 'small muted' }, ' ' + Object.entries(s.rewards).map(([k, v]) => `${k} ${v}`).join(', ')) : null),
        h('td', {}, seconds(s.agent_sec)),
        h('td', {}, seconds(s.verifier_sec)),
        h('td', {}, `in ${tokens(s.tokens?.input)} · out ${tokens(s.tokens?.output)}`),
        h('td', {}, cost(s.cost_usd, false)),
        h('td', { class: 'small' }, s.exception || ''))))),
    list.map((s) => h('details', { class: 'fold step-detail' },
      h('summary', {}, `Step ${s.name}`),
      h('h4', {}, 'Graded output'),
      phase(s.output, 'verifier', 'The verifier printed nothing.'),
      h('h4', {}, 'Agent transcript'),
      phase(s.agent_output, 'agent', 'The agent printed nothing.'),
      s.trajectory ? [h('h4', {}, 'Conversation'), conversation(s.trajectory)] : null)));
}

function phase(out, name, emptyText) {
  if (!out || (!out.stdout && !out.stderr)) return h('p', { class: 'muted' }, emptyText);
  return h('div', { class: `phase-${name}` },
    out.stdout ? h('details', { class: 'fold', open: true }, h('summary', {}, 'stdout'), h('pre', { class: 'block' }, out.stdout)) : null,
    out.stderr ? h('details', { class: 'fold', open: !out.stdout }, h('summary', {}, 'stderr'), h('pre', { class: 'block' }, out.stderr)) : null,
    out.truncated ? h('p', { class: 'small muted' }, 'Cut at 64 KiB; the artifacts below hold the whole output.') : null);
}

function artifacts(list) {
  if (!list.length) return h('p', { class: 'muted' }, 'No stored files.');
  return h('ul', { class: 'artifacts', id: 'artifact-list' }, list.map((a) => h('li', {},
    h('button', {
      type: 'button', class: 'link', title: `Download ${a.path}`, onclick: async () => {
        try {
          await download(a.url, a.path.split('/').pop());
        } catch (err) {
          toast(`Download failed: ${err.message}`, 'bad');
        }
      },
    }, a.path),
    h('span', { class: 'muted small' }, ` ${bytes(a.size)}`))));
}
