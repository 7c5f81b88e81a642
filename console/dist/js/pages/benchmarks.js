// Benchmarks: the workspace's benchmarks with sync status, adding one (from
// the Harbor registry.json, Harbor's package registry or a git repository),
// retrying a failed sync, removing a harbor benchmark.

import { api } from '../api.js';
import { h, replace, link, qs } from '../dom.js';
import { errorBox, loading, statusBadge, sourceBadge, syncProgress, table, toast, confirmDialog } from '../components.js';
import { ago, count, dateTime, parseLogins } from '../format.js';
import { poll } from '../poll.js';

const SYNCING = new Set(['pending', 'syncing']);

/** renderBenchmarks renders the benchmark list page. */
export async function renderBenchmarks(ctx) {
  document.title = 'Benchmarks · gauntlet';
  const listBox = h('div', { id: 'benchmark-list' }, loading('Loading benchmarks'));
  const formStatus = h('div', { 'aria-live': 'polite' });
  replace(ctx.main,
    h('div', { class: 'page-head' },
      h('div', { class: 'titles' },
        h('h1', {}, 'Benchmarks'),
        h('div', { class: 'sub' }, 'Managed benchmarks come with the platform; add any Harbor dataset to this workspace: from the registry (name@version), from the package registry (org/name@ref) or from a git repository.')),
      addForm(formStatus, () => changed())),
    formStatus,
    listBox);

  let latest = [];
  const refresh = async () => {
    try {
      const res = await api.benchmarks({ signal: ctx.signal });
      latest = res.benchmarks || [];
      replace(listBox, benchmarkTable(latest, () => changed()));
    } catch (err) {
      if (err.name === 'AbortError') throw err;
      replace(listBox, errorBox(err, 'Could not load benchmarks'));
    }
    return latest.some((b) => SYNCING.has(b.status));
  };
  await refresh();
  const poller = poll(ctx, refresh, 2000);
  // changed reloads after the user started a sync and resumes live updates.
  const changed = async () => { await refresh(); poller.kick(); };
}

function addForm(status, onAdded) {
  const text = (id, name, placeholder, describedBy, size) => h('input', {
    type: 'text', id, name, placeholder, autocomplete: 'off', spellcheck: 'false', 'aria-describedby': describedBy, size,
  });
  const input = text('add-source', 'source', 'terminal-bench@2.0 or org/name@latest', 'add-hint', 28);
  const repo = text('add-repo', 'repo', 'https://github.com/org/tasks@main', 'add-repo-hint', 28);
  const path = text('add-path', 'path', 'tasks', 'add-path-hint', 10);
  const keySecret = text('add-key-secret', 'api_key_secret', 'HARBOR_API_KEY', 'add-key-hint', 16);
  const logins = text('add-logins', 'registry_credentials', 'ghcr.io=GHCR_PULL', 'add-logins-hint', 24);
  const button = h('button', { type: 'submit', class: 'primary' }, 'Add benchmark');
  const field = (id, label, control, ...hint) => h('div', { class: 'field' },
    h('label', { for: control.id }, label), control, h('span', { class: 'hint', id }, ...hint));
  const form = h('form', { class: 'inline-form', 'aria-label': 'Add a benchmark' },
    field('add-hint', 'Dataset', input, h('code', {}, 'name@version'), ' (registry) or ', h('code', {}, 'org/name@ref'),
      ' (package: a tag, revision or ', h('code', {}, 'sha256:'), ' digest)'),
    field('add-repo-hint', 'or Git repository', repo, h('code', {}, 'URL@ref'), ': its task directories'),
    field('add-path-hint', 'Path', path, 'with a repository (default ', h('code', {}, 'tasks'), ')'),
    field('add-key-hint', 'API key secret (optional)', keySecret, 'a workspace secret holding a Harbor API key, for private packages'),
    field('add-logins-hint', 'Registry logins (optional)', logins, h('code', {}, 'host=SECRET'), ', comma-separated: a workspace secret holding ',
      h('code', {}, 'username:password')),
    button);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    replace(status);
    const req = { source: input.value.trim(), repo: repo.value.trim(), path: path.value.trim(), api_key_secret: keySecret.value.trim() };
    if (!req.source && !req.repo) {
      input.setAttribute('aria-invalid', 'true');
      status.append(h('div', { class: 'alert bad', role: 'alert' }, 'Name a dataset, e.g. ', h('code', {}, 'terminal-bench@2.0'),
        ' or ', h('code', {}, 'org/name@latest'), ', or give a git repository.'));
      return;
    }
    if (req.source && req.repo) {
      repo.setAttribute('aria-invalid', 'true');
      status.append(h('div', { class: 'alert bad', role: 'alert' }, 'Give a dataset or a git repository, not both.'));
      return;
    }
    input.removeAttribute('aria-invalid');
    repo.removeAttribute('aria-invalid');
    const creds = parseLogins(logins.value);
    if (creds.error) {
      logins.setAttribute('aria-invalid', 'true');
      status.append(h('div', { class: 'alert bad', role: 'alert' }, creds.error));
      return;
    }
    logins.removeAttribute('aria-invalid');
    req.registry_credentials = creds.list;
    button.disabled = true;
    try {
      const b = await api.addBenchmark(req);
      for (const el of [input, repo, path, keySecret, logins]) el.value = '';
      toast(`Adding ${b.name || b.key}: the task list syncs in the background.`, 'ok');
      if (b.sync_warning) toast(b.sync_warning, 'bad');
      await onAdded();
    } catch (err) {
      (req.repo ? repo : input).setAttribute('aria-invalid', 'true');
      status.append(errorBox(err, `Could not add ${req.source || req.repo}`));
    } finally {
      button.disabled = false;
    }
  });
  return h('div', { class: 'actions' }, form);
}

function benchmarkTable(list, refresh) {
  return table([
    { label: 'Benchmark', class: 'wrap', cell: (b) => [
      link(`/benchmarks/${encodeURIComponent(b.key)}`, h('strong', {}, b.name || b.key)),
      h('div', { class: 'sub mono' }, b.key),
    ] },
    { label: 'Source', cell: (b) => [
      sourceBadge(b.source?.type), ' ',
      b.source?.ref ? h('span', { class: 'sub mono', title: b.source.ref }, truncate(b.source.ref, 32)) : null,
    ] },
    { label: 'Sync', cell: syncCell(refresh) },
    { label: 'Tasks', class: 'num', cell: (b) => count(b.task_count) },
    { label: 'Categories', class: 'num', cell: (b) => count(b.category_count) },
    { label: 'Last run', cell: (b) => (b.last_run
      ? [link(`/benchmarks/runs/${encodeURIComponent(b.last_run.id)}`, b.last_run.name || b.last_run.id), ' ', statusBadge(b.last_run.status),
        h('div', { class: 'sub', title: dateTime(b.last_run.created_at) }, ago(b.last_run.created_at))]
      : h('span', { class: 'muted' }, 'never')) },
    { label: 'Runs', class: 'num', cell: (b) => (b.run_count
      ? link(`/runs${qs({ benchmark: b.key })}`, count(b.run_count)) : '0') },
    { label: 'Actions', cell: (b) => actions(b, refresh) },
  ], list, { empty: 'No benchmarks yet. Add one from the registry above.', rowAttrs: (b) => ({ dataset: { key: b.key } }) });
}

function syncCell(refresh) {
  return (b) => {
    const parts = [statusBadge(b.status)];
    if (b.images) {
      // Preparing images: the count and each task's state, in full.
      const names = (st) => b.images.tasks.filter((t) => t.state === st).map((t) => t.name);
      parts.push(h('div', { class: 'sub images-progress' }, b.images.label),
        ...['ready', 'preparing', 'unavailable'].filter((st) => names(st).length)
          .map((st) => h('div', { class: 'sub wrap', dataset: { state: st } }, `${st}: ${names(st).join(', ')}`)));
    } else if (b.status === 'syncing' || (b.status === 'pending' && b.progress?.total)) parts.push(syncProgress(b.progress));
    if (b.status === 'ready' && b.version) parts.push(h('div', { class: 'sub' }, `version ${b.version}`));
    if (b.sync_warning) parts.push(h('div', { class: 'sync-warning', role: 'note' }, b.sync_warning));
    if (b.status === 'failed') {
      parts.push(h('div', { class: 'sync-error' }, b.sync_error || 'sync failed'));
      parts.push(h('button', {
        type: 'button', class: 'small', onclick: async (e) => {
          e.currentTarget.disabled = true;
          try {
            await api.syncBenchmark(b.key);
            toast(`Retrying the sync of ${b.key}.`);
          } catch (err) {
            toast(`Retry failed: ${err.message}`, 'bad');
          }
          await refresh();
        },
      }, 'Retry sync'));
    }
    return parts;
  };
}

function actions(b, refresh) {
  if (!b.removable) {
    return h('span', { class: 'sub not-removable', title: 'Managed benchmarks come with the platform and belong to every workspace.' },
      'Managed: part of every workspace, cannot be removed');
  }
  return h('button', {
    type: 'button', class: 'small danger', onclick: async () => {
      const ok = await confirmDialog({
        title: `Remove ${b.name || b.key}?`,
        body: 'The benchmark leaves this workspace. Existing runs keep their results; add it again to run it.',
        confirmLabel: 'Remove', danger: true,
      });
      if (!ok) return;
      try {
        await api.deleteBenchmark(b.key);
        toast(`Removed ${b.key}.`, 'ok');
      } catch (err) {
        toast(`Could not remove ${b.key}: ${err.message}`, 'bad');
      }
      await refresh();
    },
  }, 'Remove');
}

function truncate(s, n) {
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}
