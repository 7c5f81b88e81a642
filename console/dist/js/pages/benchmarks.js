// Benchmarks: the workspace's benchmarks with sync status, adding one from
// the Harbor registry, retrying a failed sync, removing a harbor benchmark.

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
        h('div', { class: 'sub' }, 'Managed benchmarks come with the platform; add any Harbor registry dataset to this workspace.')),
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
  const input = h('input', {
    type: 'text', id: 'add-source', name: 'source', placeholder: 'terminal-bench@2.0', autocomplete: 'off',
    spellcheck: 'false', 'aria-describedby': 'add-hint', size: 28,
  });
  const logins = h('input', {
    type: 'text', id: 'add-logins', name: 'registry_credentials', placeholder: 'ghcr.io=GHCR_PULL', autocomplete: 'off',
    spellcheck: 'false', 'aria-describedby': 'add-logins-hint', size: 24,
  });
  const button = h('button', { type: 'submit', class: 'primary' }, 'Add benchmark');
  const form = h('form', { class: 'inline-form', 'aria-label': 'Add a benchmark from the registry' },
    h('div', { class: 'field' },
      h('label', { for: 'add-source' }, 'Registry dataset'),
      input,
      h('span', { class: 'hint', id: 'add-hint' }, h('code', {}, 'name'), ' or ', h('code', {}, 'name@version'))),
    h('div', { class: 'field' },
      h('label', { for: 'add-logins' }, 'Registry logins (optional)'),
      logins,
      h('span', { class: 'hint', id: 'add-logins-hint' }, h('code', {}, 'host=SECRET'), ', comma-separated: a workspace secret holding ',
        h('code', {}, 'username:password'))),
    button);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    replace(status);
    const source = input.value.trim();
    if (!source) {
      input.setAttribute('aria-invalid', 'true');
      status.append(h('div', { class: 'alert bad', role: 'alert' }, 'Name a registry dataset, e.g. ', h('code', {}, 'terminal-bench@2.0'), '.'));
      return;
    }
    input.removeAttribute('aria-invalid');
    const creds = parseLogins(logins.value);
    if (creds.error) {
      logins.setAttribute('aria-invalid', 'true');
      status.append(h('div', { class: 'alert bad', role: 'alert' }, creds.error));
      return;
    }
    logins.removeAttribute('aria-invalid');
    button.disabled = true;
    try {
      const b = await api.addBenchmark(source, creds.list);
      input.value = '';
      logins.value = '';
      toast(`Adding ${b.name || b.key}: the task list syncs in the background.`, 'ok');
      await onAdded();
    } catch (err) {
      input.setAttribute('aria-invalid', 'true');
      status.append(errorBox(err, `Could not add ${source}`));
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
    if (b.status === 'syncing' || (b.status === 'pending' && b.progress?.total)) parts.push(syncProgress(b.progress));
    if (b.status === 'ready' && b.version) parts.push(h('div', { class: 'sub' }, `version ${b.version}`));
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
