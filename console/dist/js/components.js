// Small UI pieces shared by the pages: status badges, progress bars, error
// boxes, toasts, the tooltip, menus, dialogs and table helpers.

import { h, replace } from './dom.js';
import { ApiError } from './api.js';
import { count, taskCheckText } from './format.js';

const STATUS_TONE = {
  // runs and agents
  pending: '', queued: '', running: 'info live', stopping: 'warn live', finished: 'ok', failed: 'bad', stopped: '',
  // benchmark sync
  syncing: 'info live', ready: 'ok',
  // attempt outcomes
  passed: 'ok', errored: 'warn', judge_failed: 'warn', cancelled: '',
};

/** ACTIVE_RUN lists run statuses that still change (polling continues). */
export const ACTIVE_RUN = new Set(['pending', 'queued', 'running', 'stopping']);

/** STOPPABLE lists run statuses the Stop button applies to. */
export const STOPPABLE = new Set(['pending', 'queued', 'running']);

/** statusBadge renders a status word with its colour. */
export function statusBadge(status, extraTitle) {
  const tone = STATUS_TONE[status] ?? '';
  return h('span', { class: `badge ${tone}`, title: extraTitle || null, dataset: { status } }, status || 'unknown');
}

/**
 * taskCheckBadge marks a result whose task the environment check flagged
 * (broken or trivial), the reason in its title; null for any other task.
 */
export function taskCheckBadge(verdict, detail) {
  const t = taskCheckText(verdict, detail);
  if (!t) return null;
  return h('span', { class: `badge plain ${t.tone}`, title: t.title, dataset: { taskCheck: verdict } }, t.label);
}

/** sourceBadge renders a benchmark source type. */
export function sourceBadge(type) {
  return h('span', { class: `tag ${type === 'managed' ? 'accent' : ''}` }, type);
}

/**
 * outcomeBar renders a run or agent progress as a bar split by outcome,
 * with an accessible label "completed / total".
 */
export function outcomeBar(progress, outcomes, { large = false } = {}) {
  const total = progress?.total || 0;
  const done = progress?.completed || 0;
  const frac = (n) => (total > 0 ? `${(100 * n) / total}%` : '0%');
  const segs = [];
  if (outcomes) {
    const errored = (outcomes.errored || 0);
    segs.push(h('span', { class: 'seg-pass', style: { width: frac(outcomes.passed || 0) } }));
    segs.push(h('span', { class: 'seg-fail', style: { width: frac(outcomes.failed || 0) } }));
    segs.push(h('span', { class: 'seg-err', style: { width: frac(errored) } }));
    segs.push(h('span', { class: 'seg-cancel', style: { width: frac(outcomes.cancelled || 0) } }));
  } else {
    segs.push(h('span', { class: 'seg-done', style: { width: frac(done) } }));
  }
  // Cancelled slots ended but never ran: the count is of attempts that ran
  // (a run stopped before anything started is 0 of N, not N of N).
  const cancelled = outcomes ? (outcomes.cancelled || 0) : 0;
  const ran = Math.max(0, done - cancelled);
  const percent = total > 0 ? Math.floor((100 * ran) / total) : 0;
  return h('div', { class: ['progress', large && 'large'] },
    h('div', {
      class: 'bar', role: 'progressbar', 'aria-valuemin': 0, 'aria-valuemax': total, 'aria-valuenow': ran,
      'aria-label': `${count(ran)} of ${count(total)} ran${cancelled ? `, ${count(cancelled)} cancelled` : ''}`,
    }, segs),
    h('span', { class: 'label' }, `${count(ran)}/${count(total)}`, large ? ` · ${percent}%` : '',
      large && cancelled ? ` · ${count(cancelled)} cancelled` : ''));
}

/** outcomeLegend explains the outcome colours of outcomeBar. */
export function outcomeLegend(outcomes) {
  const item = (cls, label, n) => h('span', {}, h('span', { class: `swatch ${cls}` }), `${label} ${count(n || 0)}`);
  return h('div', { class: 'legend' },
    item('seg-pass', 'passed', outcomes?.passed),
    item('seg-fail', 'failed', outcomes?.failed),
    item('seg-err', 'errored', outcomes?.errored),
    item('seg-cancel', 'cancelled', outcomes?.cancelled),
    outcomes?.retries ? h('span', {}, `infra retries ${count(outcomes.retries)}`) : null);
}

/** syncProgress renders a benchmark sync's synced/total. */
export function syncProgress(p) {
  const bar = outcomeBar({ completed: p?.synced || 0, total: p?.total || 0 }, null);
  // "Preparing images · 3 / 15" while a sync pins and builds task images.
  return p?.label ? h('div', {}, bar, h('div', { class: 'sub' }, p.label)) : bar;
}

/**
 * errorBox renders an error: the API's message, every field problem with
 * its key, and other details.
 */
export function errorBox(err, title) {
  const api = err instanceof ApiError;
  const problems = api ? err.problems : [];
  const extra = api && err.details && !problems.length ? detailsList(err.details) : null;
  return h('div', { class: 'alert bad', role: 'alert' },
    h('div', { class: 'title' }, title || (api ? humanCode(err.code) : 'Something went wrong')),
    h('div', { class: 'message' }, err.message || String(err)),
    problems.length ? h('ul', { class: 'problem-list' }, problems.map((p) =>
      h('li', {}, p.field ? [h('code', {}, p.field), ': '] : null, p.message))) : null,
    extra);
}

function detailsList(details) {
  if (typeof details !== 'object') return h('div', { class: 'small muted' }, String(details));
  const entries = Object.entries(details);
  if (!entries.length) return null;
  return h('ul', {}, entries.map(([k, v]) => h('li', {}, h('code', {}, k), ': ', typeof v === 'string' ? v : JSON.stringify(v))));
}

function humanCode(code) {
  const known = {
    BILLING_REQUIRED: 'Billing required', VALIDATION_FAILED: 'The configuration has problems', NOT_FOUND: 'Not found',
    CONFLICT: 'Not possible right now', BAD_REQUEST: 'Bad request', BODY_TOO_LARGE: 'Too large',
    NETWORK: 'Network error', INTERNAL: 'Server error', UNAUTHORIZED: 'Signed out',
  };
  return known[code] || code;
}

/** toast shows a short message in the live region. */
export function toast(message, tone = '') {
  const box = document.getElementById('toasts');
  const t = h('div', { class: `toast ${tone}` }, message);
  box.append(t);
  setTimeout(() => t.remove(), tone === 'bad' ? 9000 : 4500);
}

/** loading is a placeholder while a page fetches. */
export function loading(what = 'Loading') {
  return h('div', { class: 'loading' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), ` ${what}…`);
}

/**
 * table renders a data table from column specs {label, class, cell(row)};
 * a column's header (a node) replaces its label text in the head, and sort
 * sets the column's aria-sort.
 */
export function table(columns, rows, { caption, rowAttrs, empty = 'Nothing here yet.' } = {}) {
  if (!rows.length) return h('div', { class: 'table-wrap' }, h('div', { class: 'empty' }, empty));
  // Each cell carries its column's label: on a phone the rows fold into
  // "label: value" lines (app.css). A table still wider than its frame
  // scrolls visibly: the frame is marked overflowing (edge shadow, hint).
  const tbl = h('table', { class: 'data' },
    caption ? h('caption', {}, caption) : null,
    h('thead', {}, h('tr', {}, columns.map((c) => h('th', { class: c.class || null, scope: 'col', title: c.title || null, 'aria-sort': c.sort || null }, c.header || c.label)))),
    h('tbody', {}, rows.map((r, i) => h('tr', rowAttrs ? rowAttrs(r, i) : {},
      columns.map((c) => h('td', { class: c.class || null, 'data-label': c.label || null }, c.cell(r, i)))))));
  const wrap = h('div', { class: 'table-wrap' }, tbl, h('div', { class: 'scroll-hint', 'aria-hidden': 'true' }, 'More columns: scroll sideways →'));
  if (typeof ResizeObserver === 'function') {
    const mark = () => wrap.classList.toggle('overflowing', tbl.scrollWidth > wrap.clientWidth + 1);
    const ro = new ResizeObserver(mark);
    ro.observe(wrap);
    ro.observe(tbl);
  }
  return wrap;
}

/**
 * selfReported marks tokens or a cost the agent reported itself (a command
 * agent's usage.json) rather than the model gateway metered: shown beside
 * such a figure wherever one is shown, null for a metered one.
 */
export function selfReported(on) {
  return on ? h('span', {
    class: 'tag self-reported',
    title: 'Reported by the agent itself (its usage.json), not metered by the model gateway: not comparable with metered figures',
  }, 'self-reported') : null;
}

/** numCell renders a value with an optional dimmed interval after it. */
export function numCell(parts) {
  // The space stays outside both nowrap spans: the interval may go to a
  // second line when the column is narrow.
  return [h('span', { class: 'v' }, parts.value), parts.ci ? [' ', h('span', { class: 'ci' }, parts.ci)] : null];
}

/**
 * menu renders a button that opens a menu of {label, sub, onSelect} items,
 * with keyboard support (arrows, Escape).
 */
export function menu(label, items, { id } = {}) {
  const list = h('div', { role: 'menu', hidden: true });
  const button = h('button', { type: 'button', 'aria-haspopup': 'menu', 'aria-expanded': 'false', id: id || null }, label, ' ▾');
  const close = () => {
    list.hidden = true;
    button.setAttribute('aria-expanded', 'false');
    document.removeEventListener('click', outside, true);
  };
  const outside = (e) => { if (!wrap.contains(e.target)) close(); };
  const open = () => {
    list.hidden = false;
    button.setAttribute('aria-expanded', 'true');
    document.addEventListener('click', outside, true);
    list.querySelector('[role="menuitem"]')?.focus();
  };
  for (const it of items) {
    list.append(h('button', {
      type: 'button', role: 'menuitem', tabindex: '-1',
      onclick: () => { close(); button.focus(); it.onSelect(); },
    }, it.label, it.sub ? h('span', { class: 'sub' }, it.sub) : null));
  }
  list.addEventListener('keydown', (e) => {
    const entries = [...list.querySelectorAll('[role="menuitem"]')];
    const i = entries.indexOf(document.activeElement);
    if (e.key === 'ArrowDown') { entries[(i + 1) % entries.length].focus(); e.preventDefault(); }
    if (e.key === 'ArrowUp') { entries[(i - 1 + entries.length) % entries.length].focus(); e.preventDefault(); }
    if (e.key === 'Escape') { close(); button.focus(); }
  });
  button.addEventListener('click', () => (list.hidden ? open() : close()));
  const wrap = h('div', { class: 'menu' }, button, list);
  return wrap;
}

/**
 * confirmDialog asks a yes/no question in a modal <dialog>; resolves true
 * when confirmed.
 */
export function confirmDialog({ title, body, confirmLabel = 'Confirm', danger = false }) {
  return new Promise((resolve) => {
    const dlg = h('dialog', { class: 'card', 'aria-labelledby': 'confirm-title' },
      h('form', { method: 'dialog', class: 'card-body' },
        h('h2', { id: 'confirm-title' }, title),
        h('p', {}, body),
        h('div', { class: 'toolbar' }, h('span', { class: 'grow' }),
          h('button', { value: 'cancel', type: 'submit' }, 'Cancel'),
          h('button', { value: 'ok', type: 'submit', class: danger ? 'danger' : 'primary' }, confirmLabel))));
    dlg.addEventListener('close', () => { resolve(dlg.returnValue === 'ok'); dlg.remove(); });
    document.body.append(dlg);
    dlg.showModal();
  });
}

/**
 * tooltip shows rich content next to an element on hover and focus. The
 * element gets aria-describedby pointing at the shared tooltip while shown.
 * With avoid (an element, e.g. the table the element is in), the tooltip is
 * placed beside that element — right, left, below or above, the first that
 * fits — so it never covers the rows it is about.
 */
export function attachTooltip(el, content, { avoid } = {}) {
  const tip = document.getElementById('tooltip');
  const show = () => {
    const body = typeof content === 'function' ? content() : content;
    if (!body) return;
    replace(tip, body);
    tip.hidden = false;
    el.setAttribute('aria-describedby', 'tooltip');
    const { top, left } = placeTooltip(el.getBoundingClientRect(), tip.getBoundingClientRect(),
      avoid ? avoid.getBoundingClientRect() : null, { width: window.innerWidth, height: window.innerHeight });
    tip.style.top = `${top}px`;
    tip.style.left = `${left}px`;
  };
  const hide = () => {
    tip.hidden = true;
    el.removeAttribute('aria-describedby');
  };
  el.addEventListener('mouseenter', show);
  el.addEventListener('mouseleave', hide);
  el.addEventListener('focus', show);
  el.addEventListener('blur', hide);
  el.addEventListener('keydown', (e) => { if (e.key === 'Escape') hide(); });
}

const GAP = 8;

/**
 * placeTooltip picks the tooltip's viewport position for an anchor rect: just
 * below it (above when there is no room); with an avoid rect, outside that
 * rect — to its right, left, below or above, the first side with room,
 * aligned with the anchor — and only when no side has room, below the anchor.
 */
export function placeTooltip(anchor, tip, avoid, view) {
  const clampX = (x) => Math.min(view.width - tip.width - GAP, Math.max(GAP, x));
  const clampY = (y) => Math.min(view.height - tip.height - GAP, Math.max(GAP, y));
  if (avoid) {
    if (avoid.right + GAP + tip.width <= view.width - GAP) return { top: clampY(anchor.top), left: avoid.right + GAP };
    if (avoid.left - GAP - tip.width >= GAP) return { top: clampY(anchor.top), left: avoid.left - GAP - tip.width };
    if (avoid.bottom + GAP + tip.height <= view.height - GAP) return { top: avoid.bottom + GAP, left: clampX(anchor.left) };
    if (avoid.top - GAP - tip.height >= GAP) return { top: avoid.top - GAP - tip.height, left: clampX(anchor.left) };
  }
  let top = anchor.bottom + 6;
  if (top + tip.height > view.height - GAP) top = Math.max(GAP, anchor.top - tip.height - 6);
  return { top, left: clampX(anchor.left + 24) };
}

/** hideTooltip hides the shared tooltip (on navigation). */
export function hideTooltip() {
  const tip = document.getElementById('tooltip');
  if (tip) tip.hidden = true;
}
