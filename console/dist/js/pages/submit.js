// Submit a run: a TOML editor prefilled from an example; "Validate" shows
// what the run would resolve to and every problem next to its key; "Submit"
// creates the run and opens it.

import { api, ApiError } from '../api.js';
import { h, replace, link } from '../dom.js';
import { errorBox, menu, toast } from '../components.js';
import { count, plural } from '../format.js';
import { createEditor } from '../editor.js';
import { keyLines, lineOf } from '../toml.js';
import { navigate } from '../router.js';
import { EXAMPLES, exampleFor } from '../examples.js';
import { workspace } from '../workspace.js';

const DRAFT_KEY = 'gauntlet.draft';

/** renderSubmit renders /runs/new. */
export async function renderSubmit(ctx) {
  document.title = 'Submit a run · gauntlet';
  const benchmark = ctx.query.get('benchmark') || '';
  const draft = benchmark ? '' : sessionStorage.getItem(DRAFT_KEY);
  let idempotencyKey = newKey();
  const report = h('div', { id: 'validation', 'aria-live': 'polite' },
    h('p', { class: 'muted' }, 'Validate to see how many tasks the config resolves to, which secret records are missing, and every problem next to its key.'));
  const editor = createEditor({
    id: 'config', label: 'Run config (TOML)', value: draft || exampleFor(EXAMPLES[0], benchmark),
    onInput: (v) => {
      sessionStorage.setItem(DRAFT_KEY, v);
      idempotencyKey = newKey(); // a changed config is a new submission
    },
  });
  const validateBtn = h('button', { type: 'button', id: 'validate' }, 'Validate');
  const submitBtn = h('button', { type: 'button', id: 'submit', class: 'primary' }, 'Submit run');
  const examples = menu('Load example', EXAMPLES.map((ex) => ({
    label: ex.title, sub: ex.description, onSelect: () => {
      editor.setValue(exampleFor(ex, benchmark));
      sessionStorage.setItem(DRAFT_KEY, editor.value());
      editor.setProblems([]);
      idempotencyKey = newKey();
    },
  })));

  replace(ctx.main,
    h('div', { class: 'page-head' },
      h('div', { class: 'titles' },
        h('h1', {}, 'Submit a run'),
        h('div', { class: 'sub' }, 'A run pits up to 8 agents against a benchmark\'s tasks. Secret records are named here, never their values. ',
          link('/secrets', 'Manage secrets'))),
      h('div', { class: 'actions' }, examples)),
    h('div', { class: 'submit-layout' },
      h('div', {},
        editor.el,
        h('div', { class: 'toolbar editor-actions' }, validateBtn, submitBtn, h('span', { class: 'grow' }),
          h('span', { class: 'small muted' }, 'Sent as ', h('code', {}, 'application/toml'), '; unknown keys are errors.'))),
      h('aside', { class: 'card', 'aria-labelledby': 'validation-title' },
        h('div', { class: 'card-head' }, h('h2', { id: 'validation-title' }, 'Validation')),
        h('div', { class: 'card-body' }, report))));

  const busy = (on) => { validateBtn.disabled = on; submitBtn.disabled = on; };

  validateBtn.addEventListener('click', async () => {
    busy(true);
    try {
      const v = await api.validateRun(editor.value());
      showReport(report, editor, v);
    } catch (err) {
      showError(report, editor, err);
    } finally {
      busy(false);
    }
  });

  submitBtn.addEventListener('click', async () => {
    busy(true);
    try {
      const created = await api.submitRun(editor.value(), idempotencyKey);
      sessionStorage.removeItem(DRAFT_KEY);
      toast(`Submitted ${created.name}: ${plural(created.slot_count, 'attempt')} on ${plural(created.task_count, 'task')}.`, 'ok');
      navigate(`/runs/${encodeURIComponent(created.id)}`);
    } catch (err) {
      if (err instanceof ApiError && err.code === 'BILLING_REQUIRED') workspace.load({ refresh: true });
      showError(report, editor, err);
      busy(false);
    }
  });
}

function newKey() {
  return `console-${crypto.randomUUID ? crypto.randomUUID() : `${Date.now()}-${Math.random().toString(16).slice(2)}`}`;
}

// located adds the editor line of each problem.
function located(text, problems) {
  const lines = keyLines(text);
  return problems.map((p) => ({ ...p, line: lineOf(text, p.field, p.message, lines) }));
}

function showReport(box, editor, v) {
  const problems = located(editor.value(), v.problems || []);
  editor.setProblems(problems);
  const agents = v.task_count ? Math.round(v.slot_count / v.task_count) : 0;
  replace(box,
    v.valid
      ? h('div', { class: 'alert ok', id: 'validation-ok' }, h('div', { class: 'title' }, 'Ready to submit'),
        'Nothing would stop this run.')
      : h('div', { class: 'alert bad', id: 'validation-failed' }, h('div', { class: 'title' }, `${plural(problems.length, 'problem')}`),
        'Fix these and validate again.'),
    h('dl', { class: 'kv', id: 'resolved' },
      h('dt', {}, 'Benchmark'), h('dd', {}, v.benchmark ? link(`/benchmarks/${encodeURIComponent(v.benchmark)}`, v.benchmark) : '—'),
      h('dt', {}, 'Manifest version'), h('dd', {}, v.manifest_version || '—'),
      h('dt', {}, 'Tasks'), h('dd', { id: 'resolved-tasks' }, count(v.task_count)),
      h('dt', {}, 'Attempts'), h('dd', {}, count(v.slot_count), agents > 0 ? h('span', { class: 'muted' }, ` (agents × tasks × attempts; ${agents} per task)`) : null)),
    missingSecrets(v.missing_secrets || []),
    v.billing_problem ? h('div', { class: 'alert bad', id: 'billing-problem' }, h('div', { class: 'title' }, 'Billing'), v.billing_problem) : null,
    problemList(editor, problems),
    (v.warnings || []).length ? h('div', { class: 'alert warn' }, h('div', { class: 'title' }, 'Warnings'),
      h('ul', {}, v.warnings.map((w) => h('li', {}, w)))) : null);
}

function missingSecrets(names) {
  if (!names.length) return null;
  return h('div', { class: 'alert bad', id: 'missing-secrets' },
    h('div', { class: 'title' }, 'Missing secret records'),
    h('div', {}, names.map((n, i) => [i ? ', ' : '', h('code', {}, n)])),
    h('div', { class: 'small' }, 'Set them on the ', link('/secrets', 'Secrets'), ' page; the config names them, the values stay in the secret store.'));
}

function problemList(editor, problems) {
  if (!problems.length) return null;
  return h('ul', { class: 'problems', id: 'config-problems' }, problems.map((p) => h('li', { dataset: { field: p.field || '' } },
    h('span', { class: 'where' },
      p.line ? h('button', { type: 'button', class: 'link small', onclick: () => editor.goto(p.line), title: 'Show in the editor' }, `line ${p.line}`)
        : h('span', { class: 'small muted' }, 'not in file')),
    h('span', {}, p.field ? [h('span', { class: 'key' }, p.field), ' '] : null, p.message))));
}

function showError(box, editor, err) {
  const problems = err instanceof ApiError ? located(editor.value(), err.problems) : [];
  editor.setProblems(problems);
  const billing = err instanceof ApiError && err.code === 'BILLING_REQUIRED';
  replace(box,
    h('div', { class: 'alert bad', role: 'alert', id: 'submit-error' }, h('div', { class: 'title' }, billing ? 'Billing required' : 'Not submitted'),
      problems.length && !billing ? `The server found ${plural(problems.length, 'problem')}.` : err.message),
    problems.length ? problemList(editor, problems) : (err instanceof ApiError && err.details ? errorBox(err) : null));
}
