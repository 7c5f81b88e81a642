// Benchmark detail: identity and sync status, the leaderboard, and the
// manifest (requirements, categories, task sets, tasks).

import { api } from '../api.js';
import { h, replace, link, qs } from '../dom.js';
import {
  STOPPABLE, confirmDialog, errorBox, loading, menu, outcomeBar, sourceBadge, statusBadge, syncProgress, table, taskCheckBadge, toast,
} from '../components.js';
import { ago, count, dateTime, pct, plural, shortDigest } from '../format.js';
import { renderLeaderboard } from './leaderboard.js';
import { poll } from '../poll.js';
import { navigate } from '../router.js';
import { userLabel, workspace } from '../workspace.js';

/** renderBenchmark renders /benchmarks/:key. */
export async function renderBenchmark(ctx) {
  const key = ctx.params.key;
  document.title = `${key} · gauntlet`;
  replace(ctx.main, loading(`Loading ${key}`));
  let b;
  try {
    b = await api.benchmark(key, { signal: ctx.signal });
  } catch (err) {
    if (err.name === 'AbortError') throw err;
    replace(ctx.main, crumbs(), errorBox(err, `Could not load benchmark ${key}`));
    return;
  }
  document.title = `${b.name || b.key} · gauntlet`;
  const head = h('div', {});
  const board = h('section', { class: 'section', 'aria-labelledby': 'leaderboard-title' });
  const runs = h('section', { class: 'section', id: 'benchmark-runs', 'aria-labelledby': 'benchmark-runs-title' });
  const check = h('section', { class: 'section', id: 'environment-check', 'aria-labelledby': 'environment-check-title' });
  const manifest = h('section', { class: 'section', 'aria-labelledby': 'manifest-title' });
  replace(ctx.main, head, board, runs, check, manifest);
  const header = (view) => headerOf(view, { onChange: () => renderBenchmark(ctx) });
  replace(head, header(b));
  renderRuns(ctx, runs, key);
  renderManifest(manifest, b);
  // A finished check changes the tasks' verdicts: the manifest is redrawn.
  renderCheck(ctx, check, b, async () => {
    const next = await api.benchmark(key, { signal: ctx.signal });
    renderManifest(manifest, next);
  });
  if (b.status !== 'ready' && (!b.manifest || b.images)) {
    // Follow the sync (each task's image while they are prepared) until the
    // manifest is ready, then show everything.
    poll(ctx, async () => {
      const next = await api.benchmark(key, { signal: ctx.signal });
      replace(head, header(next));
      if (next.images) renderManifest(manifest, next);
      if (next.manifest && !next.images) {
        renderManifest(manifest, next);
        await renderLeaderboard(ctx, board, key, ctx.query.get('metric'));
        return false;
      }
      return next.status === 'pending' || next.status === 'syncing';
    });
    if (b.status === 'failed' || !b.manifest) return;
  }
  await renderLeaderboard(ctx, board, key, ctx.query.get('metric'));
}

function crumbs() {
  return h('div', { class: 'crumbs' }, link('/benchmarks', 'Benchmarks'), ' /');
}

function headerOf(b, { onChange }) {
  const m = b.manifest;
  return h('div', {},
    crumbs(),
    h('div', { class: 'page-head' },
      h('div', { class: 'titles' },
        h('h1', {}, b.name || b.key),
        h('div', { class: 'sub' },
          h('span', { class: 'mono' }, b.key),
          sourceBadge(b.source?.type),
          b.source?.ref ? copyButton(b.source.ref) : null,
          statusBadge(b.status),
          b.status === 'ready' ? h('span', { class: 'badge plain', id: 'task-count' }, plural(b.task_count, 'task')) : null,
          b.status === 'syncing' && !b.images ? syncProgress(b.progress) : null,
          b.images ? h('span', { class: 'badge info', id: 'images-progress' }, b.images.label) : null,
          m ? h('span', {}, 'version ', h('strong', {}, m.version)) : null,
          m ? h('span', { class: 'mono', title: m.digest }, shortDigest(m.digest)) : null),
        b.description ? h('p', { class: 'muted' }, b.description) : null,
        b.status === 'failed' ? h('div', { class: 'alert bad' }, h('div', { class: 'title' }, 'Sync failed'), b.sync_error || '') : null),
      h('div', { class: 'actions' },
        actionsMenu(b, onChange),
        b.status === 'ready' || (b.status === 'syncing' && b.images?.ready > 0)
          ? h('a', { class: 'button primary', href: `/runs/new${qs({ benchmark: b.key })}` }, 'New run')
          : null)));
}

// copyButton shows the source reference; a click copies it.
function copyButton(ref) {
  return h('button', { type: 'button', class: 'link mono', id: 'source-ref', title: 'Copy the source reference', onclick: async () => {
    try {
      await navigator.clipboard.writeText(ref);
      toast(`Copied ${ref}`, 'ok');
    } catch (err) {
      toast(`Could not copy: ${err.message}`, 'bad');
    }
  } }, ref, h('span', { class: 'small muted' }, ' copy'));
}

// actionsMenu offers View source, Retry sync after a failed sync, and
// Remove for benchmarks the workspace added (managed ones cannot be removed).
function actionsMenu(b, onChange) {
  const items = [];
  if (b.source?.url) {
    items.push({ label: 'View source', sub: b.source.url, onSelect: () => window.open(b.source.url, '_blank', 'noopener,noreferrer') });
  }
  if (b.status === 'failed') {
    items.push({ label: 'Retry sync', sub: 'page the task list in again', onSelect: async () => {
      try {
        await api.syncBenchmark(b.key);
        toast(`Syncing ${b.name || b.key} again.`, 'ok');
        onChange();
      } catch (err) {
        toast(err.message, 'bad');
      }
    } });
  }
  if (b.removable) {
    items.push({ label: 'Remove', sub: 'its runs stay listed', onSelect: async () => {
      const ok = await confirmDialog({ title: `Remove ${b.name || b.key}?`, body: 'The benchmark leaves this workspace; runs already made stay listed.', confirmLabel: 'Remove', danger: true });
      if (!ok) return;
      try {
        await api.deleteBenchmark(b.key);
        toast(`Removed ${b.name || b.key}.`, 'ok');
        navigate('/benchmarks');
      } catch (err) {
        toast(err.message, 'bad');
      }
    } });
  }
  if (!items.length) return null;
  return menu('Actions', items, { id: 'benchmark-actions' });
}

// renderRuns lists the benchmark's runs (newest first) below its
// leaderboard, live while any is going, with Stop on the ones that can stop.
async function renderRuns(ctx, box, key) {
  const list = h('div', {}, loading('Loading runs'));
  replace(box, h('div', { class: 'section-head' }, h('h2', { id: 'benchmark-runs-title' }, 'Benchmark runs'),
    link(`/runs${qs({ benchmark: key })}`, 'All runs of this benchmark')), list);
  const load = async () => {
    try {
      const res = await api.runs({ benchmark: key, limit: 10 }, { signal: ctx.signal });
      replace(list, runsTable(res.runs || [], load));
      return (res.runs || []).some((r) => ['pending', 'queued', 'running', 'stopping'].includes(r.status));
    } catch (err) {
      if (err.name === 'AbortError') throw err;
      replace(list, errorBox(err, 'Could not load runs'));
      return false;
    }
  };
  if (await load()) poll(ctx, load, 3000);
}

function runsTable(runs, reload) {
  return table([
    { label: 'Run', class: 'wrap', cell: (r) => link(`/benchmarks/runs/${encodeURIComponent(r.id)}`, h('strong', {}, r.name || r.id)) },
    { label: 'Status', cell: (r) => statusBadge(r.status) },
    { label: 'Agents', class: 'num', cell: (r) => count(r.agent_count) },
    { label: 'Progress', cell: (r) => outcomeBar(r.progress, r.outcomes) },
    { label: 'Submitted', cell: (r) => [h('span', { title: dateTime(r.created_at) }, ago(r.created_at)),
      r.submission?.submitted_by ? h('div', { class: 'sub' }, `by ${r.submission.submitted_by_name || userLabel(r.submission.submitted_by)}`) : null] },
    { label: '', cell: (r) => (STOPPABLE.has(r.status) ? h('button', { type: 'button', class: 'small danger', dataset: { stop: r.id }, onclick: async () => {
      const ok = await confirmDialog({ title: `Stop ${r.name || r.id}?`, body: 'No new attempt starts; running ones are stopped. Results so far stay.', confirmLabel: 'Stop run', danger: true });
      if (!ok) return;
      try {
        await api.stopRun(r.id);
        toast(`Stopping ${r.name || r.id}.`, 'ok');
        reload();
      } catch (err) {
        toast(err.message, 'bad');
      }
    } }, 'Stop') : null) },
  ], runs, { empty: 'No runs yet. New run starts one.', rowAttrs: (r) => ({ dataset: { id: r.id, status: r.status } }) });
}

// buildLogs keeps the build-log viewers a user opened on the page of a
// benchmark whose images are being prepared, so the redraw of every poll
// keeps them (and their own polls) alive.
const buildLogs = new Map();

// imagesSection shows each task's image while a sync prepares them: its
// state in full (the ready ones can run already), the reason of an
// unavailable one, and a build log that follows a running build.
function imagesSection(b) {
  const p = b.images;
  return h('div', { id: 'images' },
    h('div', { class: 'section-head' }, h('h2', { id: 'images-title' }, 'Task images'),
      h('span', { class: 'muted' }, `${p.label} · ${p.ready} ready · ${p.preparing} preparing · ${p.unavailable} unavailable · version ${p.version}`)),
    p.ready > 0 ? h('p', { class: 'muted' }, 'Runs may select the ready tasks now; the others are listed as still preparing.') : null,
    table([
      { label: 'Task', cell: (t) => h('span', { class: 'mono' }, t.name) },
      { label: 'Image', cell: (t) => h('span', { class: t.state === 'ready' ? 'ok' : t.state === 'unavailable' ? 'bad' : 'live' }, t.state) },
      { label: 'Reason / build log', class: 'wrap', cell: (t) => [t.reason ? h('pre', { class: 'small wrap' }, t.reason) : null, t.build_log ? buildLogViewer(b.key, t) : null] },
    ], p.tasks, { rowAttrs: (t) => ({ dataset: { task: t.name, state: t.state } }) }));
}

// buildLogViewer is a button that shows a task's whole build log and,
// while its image is preparing, reads it again every second.
function buildLogViewer(key, t) {
  const id = `${key}\u0000${t.name}`;
  let v = buildLogs.get(id);
  if (!v) {
    const pre = h('pre', { class: 'small wrap build-log', hidden: true, dataset: { task: t.name } });
    v = { pre, state: t.state, open: false };
    const load = async () => {
      try {
        pre.textContent = String(await api.text(t.build_log)) || '(the build has not written anything yet)';
      } catch (err) {
        pre.textContent = `Could not load the build log: ${err.message}`;
      }
      if (v.open && v.state === 'preparing' && document.contains(pre)) setTimeout(load, 1000);
    };
    v.button = h('button', { type: 'button', class: 'link', onclick: () => {
      v.open = !v.open;
      pre.hidden = !v.open;
      if (v.open) load();
    } }, 'build log');
    buildLogs.set(id, v);
  }
  v.state = t.state;
  return [v.button, v.pre];
}

function renderManifest(box, b) {
  const m = b.manifest;
  if (b.images && !m) {
    replace(box, imagesSection(b));
    return;
  }
  if (!m) {
    replace(box, h('h2', { id: 'manifest-title' }, 'Manifest'),
      h('div', { class: 'empty' }, b.status === 'failed' ? 'No manifest: the sync failed.' : 'The task list is still syncing.'));
    return;
  }
  replace(box,
    b.images ? imagesSection(b) : null,
    h('div', { class: 'section-head' }, h('h2', { id: 'manifest-title' }, 'Manifest'),
      h('span', { class: 'muted' }, `${count(m.tasks.length)} tasks · ${count(m.categories.length)} categories`)),
    h('div', { class: 'grid-3' },
      requirementsCard(m),
      categoriesCard(m),
      taskSetsCard(m)),
    environmentNotes(m),
    h('div', { class: 'section' }, tasksTable(m)));
}

// environmentNotes says which tasks cannot run (their image could not be
// had at sync: the reason names the image and the cause, with the build
// log's last lines for a failed build). The environment check's findings
// have a section of their own (renderCheck).
function environmentNotes(m) {
  const unavailable = m.unavailable_tasks || [];
  if (!unavailable.length) return null;
  return h('div', { class: 'section', id: 'environments' },
    h('div', { class: 'alert bad', id: 'unavailable-tasks' },
      h('div', { class: 'title' }, `${plural(unavailable.length, 'task')} unavailable: runs skip them`),
      unavailable.map((u) => h('pre', { class: 'small wrap' }, u.reason))));
}

// renderCheck shows the environment check of the ready manifest version
// (the oracle and nop once per task in its own environment): Check
// environments where the API would start one, the check's progress while
// its run goes (live), then its verdicts, each flagged task with its reason
// and links to what explains it (its attempts in the check's run, its
// build log). onDone runs when a check this page followed finishes.
async function renderCheck(ctx, box, b, onDone) {
  if (!b.manifest) return;
  const m = b.manifest;
  let check = m.check;
  let unavailable = '';
  if (!check) {
    // The benchmark view says nothing of a platform without checks: the
    // check route answers 501 there, and the page offers no button.
    try {
      check = await api.check(b.key, { signal: ctx.signal });
      // No check yet answers 200 with status "none".
      if (check?.status === 'none') check = null;
    } catch (err) {
      if (err.name === 'AbortError') throw err;
      if (err.status === 501) unavailable = err.message;
      else if (err.status !== 404) {
        replace(box, checkHead(null), errorBox(err, 'Could not load the environment check'));
        return;
      }
      check = null;
    }
  }
  if (unavailable) {
    box.hidden = true;
    return;
  }
  let run = null;
  const paint = () => replace(box, checkHead(checkButton(b, check, start)), checkBody(b, m, check, run));
  const follow = async () => {
    check = await api.check(b.key, { signal: ctx.signal });
    run = check.run ? await api.run(check.run, { signal: ctx.signal }).catch(() => run) : run;
    paint();
    if (check.status === 'done') {
      await onDone();
      return false;
    }
    return true;
  };
  let poller = null;
  const start = async () => {
    try {
      check = await api.startCheck(b.key);
      toast(`Checking the environments of ${b.name || b.key}.`, 'ok');
    } catch (err) {
      toast(err.message, 'bad');
      paint(); // the button again, for a retry
      return;
    }
    paint();
    if (poller) poller.kick();
    else poller = poll(ctx, follow, 3000);
  };
  if (check?.status === 'running') {
    run = await api.run(check.run, { signal: ctx.signal }).catch(() => null);
    poller = poll(ctx, follow, 3000);
  }
  paint();
}

function checkHead(button) {
  return h('div', { class: 'section-head' }, h('h2', { id: 'environment-check-title' }, 'Environment check'), button);
}

// checkButton mirrors when the API starts a check: the benchmark is ready
// (POST …/check refuses one still syncing), the workspace may submit runs
// (the check is a run; billing refuses it otherwise), and no check of this
// version ran yet (one per version: a second request returns the first).
function checkButton(b, check, start) {
  const billing = workspace.get()?.billing;
  let why = '';
  if (b.status !== 'ready') why = `The benchmark is ${b.status}: a check starts once its task list is ready.`;
  else if (billing && billing.can_submit === false) why = billing.problem || 'This workspace cannot submit runs.';
  else if (check?.status === 'running') why = 'A check of this version is running.';
  else if (check?.status === 'done') why = `Version ${check.version} was checked ${ago(check.ended_at)}; a new version gets a check of its own.`;
  return [why ? h('span', { class: 'small muted', id: 'check-start-why' }, why) : null,
    h('button', { type: 'button', id: 'check-start', disabled: Boolean(why), title: why || null,
      'aria-describedby': why ? 'check-start-why' : null, onclick: async (e) => {
        e.currentTarget.disabled = true;
        await start();
      } }, 'Check environments')];
}

function checkBody(b, m, check, run) {
  if (!check) {
    return h('p', { class: 'muted', id: 'check-none' },
      `No check of version ${m.version} yet. Check environments runs the oracle (the task's own solution) and nop (doing nothing) once per task in the task's own environment, `
      + `${plural(2 * m.tasks.length, 'attempt')} in all: a task whose oracle fails is broken, one that nop passes is trivial.`);
  }
  const runLink = check.run ? link(`/benchmarks/runs/${encodeURIComponent(check.run)}`, 'the check\'s run') : null;
  if (check.status !== 'done') {
    return h('div', { class: 'alert', id: 'check-progress', dataset: { status: check.status } },
      h('div', { class: 'title' }, statusBadge('running'), ` Checking ${plural(m.tasks.length, 'task')} since ${ago(check.started_at)}`),
      run ? outcomeBar(run.progress, run.outcomes) : null,
      h('p', { class: 'small muted' }, 'The page follows it; see ', runLink, ' for each attempt.'));
  }
  const flagged = check.flagged || [
    ...(check.broken || []).map((task) => ({ task, verdict: 'broken', detail: '' })),
    ...(check.trivial || []).map((task) => ({ task, verdict: 'trivial', detail: '' })),
  ];
  const byName = new Map(m.tasks.map((t) => [t.name, t]));
  const broken = (check.broken || []).length;
  const trivial = (check.trivial || []).length;
  return h('div', { id: 'check-verdicts', dataset: { status: 'done' } },
    h('div', { class: `alert ${broken ? 'bad' : trivial ? 'warn' : 'ok'}`, id: 'check-summary' },
      h('div', { class: 'title' }, `${plural(check.checked, 'task')} checked ${ago(check.ended_at)}: ${broken} broken, ${trivial} trivial`),
      h('div', { class: 'small' }, `Version ${check.version}; results of runs on it mark these tasks. `, runLink ? ['Attempts: ', runLink, '.'] : null)),
    flagged.length ? table([
      { label: 'Task', cell: (f) => h('code', {}, f.task) },
      { label: 'Verdict', cell: (f) => taskCheckBadge(f.verdict) },
      { label: 'Reason', class: 'wrap', cell: (f) => f.detail || (f.verdict === 'broken' ? 'the oracle (the task\'s own solution) does not pass' : 'nop (doing nothing) passes') },
      { label: 'Explained by', class: 'wrap', cell: (f) => explainLinks(check, byName.get(f.task), f.task) },
    ], flagged, { rowAttrs: (f) => ({ dataset: { task: f.task, verdict: f.verdict } }) }) : null);
}

// explainLinks points at what explains a flagged task: its two attempts in
// the check's run (the Results tab filtered to the task) and, for a task
// built from a Dockerfile, the last lines of its build log.
function explainLinks(check, task, name) {
  const out = [];
  if (check.run) out.push(link(`/benchmarks/runs/${encodeURIComponent(check.run)}${qs({ tab: 'results', task: name })}`, 'its attempts'));
  const logPath = task?.environment?.build_log;
  if (logPath) {
    const lines = h('pre', { class: 'small wrap', hidden: true });
    out.push(' · ', h('button', { type: 'button', class: 'link', onclick: async () => {
      try {
        const text = await api.text(logPath);
        lines.textContent = String(text).trimEnd().split('\n').slice(-20).join('\n') || '(the build log is empty)';
        lines.hidden = false;
      } catch (err) {
        toast(`Could not load the build log: ${err.message}`, 'bad');
      }
    } }, 'build log (last lines)'), lines);
  }
  return out.length ? out : h('span', { class: 'muted' }, '—');
}

function imageText(env) {
  if (!env) return h('span', { class: 'muted' }, '—');
  if (env.unavailable) return [h('span', { class: 'tag' }, env.source), ' ', h('span', { class: 'bad' }, 'unavailable')];
  if (env.state === 'preparing') return [h('span', { class: 'tag' }, env.source), ' ', h('span', { class: 'live' }, 'preparing')];
  const pinned = env.pinned || '';
  const at = pinned.indexOf('@sha256:');
  const own = [h('span', { class: 'tag' }, env.source), ' ', env.image ? h('code', {}, env.image) : null, ' ',
    at >= 0 ? h('span', { class: 'mono small muted', title: pinned }, pinned.slice(at + 1, at + 20)) : null];
  // A separate verifier's own image, pinned beside the task's.
  if (!env.verifier) return own;
  return [...own, h('div', { class: 'small', title: 'the separate verifier environment\'s image' }, 'verifier ', imageText(env.verifier))];
}

function requirementsCard(m) {
  const harness = m.harness || {};
  const judge = m.judge || {};
  return h('div', { class: 'card', id: 'requirements' },
    h('div', { class: 'card-head' }, h('h3', {}, 'Requirements')),
    h('div', { class: 'card-body' }, h('dl', { class: 'kv' },
      h('dt', {}, 'Harness'), h('dd', {}, harnessText(harness)),
      h('dt', {}, 'Judge'), h('dd', {}, judge.required ? ['LLM judge required', judge.default_model ? [' · default ', h('code', {}, judge.default_model)] : ' · no default model'] : 'not needed'),
      h('dt', {}, 'Pass threshold'), h('dd', {}, `reward ≥ ${m.pass_threshold}`),
      h('dt', {}, 'Secrets'), h('dd', {}, m.required_secrets?.length ? m.required_secrets.map((s) => [h('code', {}, s), ' ']) : 'none'),
      h('dt', {}, 'Version'), h('dd', {}, m.version),
      h('dt', {}, 'Digest'), h('dd', { class: 'mono small' }, m.digest))));
}

function harnessText(harness) {
  const req = harness.requirement || 'optional';
  const def = harness.default ? [' · default ', h('code', {}, harness.default)] : null;
  const words = {
    required: 'every agent names its harness',
    optional: 'agents may omit the harness',
    'official-only': 'only the official harness runs',
  };
  return [h('span', { class: 'tag' }, req), ' ', h('span', { class: 'muted' }, words[req] || ''), def];
}

function categoriesCard(m) {
  const total = m.tasks.length || 1;
  return h('div', { class: 'card', id: 'categories' },
    h('div', { class: 'card-head' }, h('h3', {}, 'Categories')),
    h('div', { class: 'card-body' }, m.categories.length
      ? h('div', { class: 'bars' }, m.categories.map((c) => [
        h('span', { class: 'name' }, c.name),
        h('div', { class: 'bar-line' },
          h('div', { class: 'bar-track' }, h('div', { class: 'bar-fill', style: { width: pct(c.tasks / total), background: 'var(--chart-1)' } })),
          h('span', { class: 'bar-value' }, count(c.tasks))),
      ]))
      : h('span', { class: 'muted' }, 'The source gives no categories.'),
    difficultyLine(m)));
}

function difficultyLine(m) {
  const entries = Object.entries(m.difficulties || {});
  if (!entries.length) return null;
  const order = ['easy', 'medium', 'hard'];
  const rank = (d) => (order.includes(d) ? order.indexOf(d) : order.length);
  entries.sort((a, b) => rank(a[0]) - rank(b[0]) || a[0].localeCompare(b[0]));
  return h('p', { class: 'small muted' }, 'Difficulty: ', entries.map(([d, n], i) => [i ? ' · ' : '', `${d} ${n}`]));
}

function taskSetsCard(m) {
  return h('div', { class: 'card', id: 'task-sets' },
    h('div', { class: 'card-head' }, h('h3', {}, 'Task sets')),
    h('div', { class: 'card-body' }, m.task_sets.length
      ? h('dl', { class: 'kv' }, m.task_sets.map((s) => [
        h('dt', {}, h('code', {}, s.name)),
        h('dd', {}, `${count(s.tasks)} tasks`, s.recommended ? [' ', h('span', { class: 'badge ok plain' }, 'recommended')] : null,
          s.description ? h('div', { class: 'small muted' }, s.description) : null),
      ]))
      : h('span', { class: 'muted' }, 'No named task sets: runs use the full task list or a selection.')));
}

function tasksTable(m) {
  const search = h('input', { type: 'search', placeholder: 'Filter tasks', 'aria-label': 'Filter tasks by name, category or difficulty' });
  const inSet = {};
  for (const [set, tasks] of Object.entries(m.task_set_tasks || {})) {
    for (const t of tasks) (inSet[t] ||= []).push(set);
  }
  const render = () => {
    const q = search.value.trim().toLowerCase();
    const rows = m.tasks.filter((t) => !q || [t.name, t.category, t.difficulty, ...(t.tags || [])].some((v) => v && v.toLowerCase().includes(q)));
    return table([
      { label: 'Task', cell: (t) => h('code', {}, t.name) },
      { label: 'Category', cell: (t) => t.category || h('span', { class: 'muted' }, '—') },
      { label: 'Difficulty', cell: (t) => t.difficulty || h('span', { class: 'muted' }, '—') },
      { label: 'Task sets', cell: (t) => (inSet[t.name] || []).map((s) => [h('span', { class: 'tag' }, s), ' ']) },
      { label: 'Tags', class: 'wrap', cell: (t) => (t.tags || []).join(', ') },
      { label: 'Image', cell: (t) => imageText(t.environment) },
      { label: 'Check', cell: (t) => (t.check ? h('span', { class: 'tag' }, t.check) : h('span', { class: 'muted' }, '—')) },
    ], rows, { empty: 'No task matches the filter.' });
  };
  const box = h('div', {}, render());
  search.addEventListener('input', () => replace(box, render()));
  return h('div', { id: 'tasks' },
    h('div', { class: 'toolbar' }, h('h3', { class: 'grow' }, 'Tasks'), search), box);
}
