// The Logs tab of a run: log lines a page at a time (cursor pagination),
// coloured by level.

import { api } from '../api.js';
import { h, replace, append } from '../dom.js';
import { errorBox, loading } from '../components.js';
import { dateTime, timeOfDay } from '../format.js';

const PAGE = 200;

/** renderLogs fills panel with the run's log. */
export function renderLogs(ctx, panel, run) {
  const box = h('div', { class: 'logs', id: 'run-logs', role: 'log', 'aria-label': 'Run log' });
  const more = h('button', { type: 'button', id: 'logs-more' }, 'Load more');
  const status = h('span', { class: 'muted small' });
  const reload = h('button', { type: 'button', id: 'logs-reload', title: 'Read the log again from the start' }, 'Reload');
  const level = h('select', { id: 'logs-level', 'aria-label': 'Minimum level' },
    h('option', { value: '' }, 'All levels'), h('option', { value: 'warn' }, 'Warnings and errors'), h('option', { value: 'error' }, 'Errors only'));
  replace(panel,
    h('div', { class: 'toolbar' }, h('span', { class: 'grow muted' }, `Everything the platform did for ${run.name || run.id}, oldest first.`),
      h('label', {}, 'Show', level)),
    h('div', {}, loading('Loading the log')),
    h('div', { class: 'pager' }, status, reload, more));
  const lines = [];
  let cursor = '';
  let first = true;

  const paint = () => {
    const min = level.value;
    const shown = lines.filter((l) => !min || l.level === 'error' || (min === 'warn' && l.level === 'warn'));
    replace(box, shown.length ? shown.map(lineView) : h('div', { class: 'empty' }, lines.length ? 'No line at this level.' : 'No log lines yet.'));
    status.textContent = `${lines.length} lines${cursor ? ', more available' : ''}`;
  };
  const load = async () => {
    more.disabled = true;
    try {
      const res = await api.runLogs(run.id, { cursor, limit: PAGE }, { signal: ctx.signal });
      lines.push(...(res.logs || []));
      cursor = res.next_cursor || '';
      if (first) {
        panel.children[1].replaceWith(box);
        first = false;
      }
      paint();
    } catch (err) {
      if (err.name === 'AbortError') return;
      append(panel, errorBox(err, 'Could not load the log'));
    } finally {
      more.disabled = !cursor;
      more.textContent = cursor ? 'Load more' : 'End of log';
    }
  };
  more.addEventListener('click', load);
  reload.addEventListener('click', () => {
    lines.length = 0;
    cursor = '';
    load();
  });
  level.addEventListener('change', paint);
  load();
}

function lineView(l) {
  return h('div', { class: `line ${l.level}`, dataset: { level: l.level } },
    h('span', { class: 'at', title: dateTime(l.at) }, timeOfDay(l.at)),
    h('span', { class: `lvl ${l.level}` }, l.level),
    h('span', { class: 'step', title: l.slot ? `slot ${l.slot}` : null }, l.step),
    h('span', { class: 'msg' }, l.message, l.slot ? h('span', { class: 'subtle' }, `  [${l.slot}]`) : null));
}
