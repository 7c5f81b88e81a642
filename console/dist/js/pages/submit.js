// New Run: a form of three tabs (Tasks, Agents, Run settings) and a running
// summary, with "Edit as TOML" as a fourth view of the same config. The form
// edits a config document (runform.js), so the TOML it shows is exactly what
// is submitted, and TOML typed by hand comes back into the form. Secret
// records are picked by name; no field takes a key value. "Validate" shows
// every problem the server finds at once; "Submit" creates the run.

import { api, ApiError } from '../api.js';
import { h, replace, link, uid } from '../dom.js';
import { errorBox, loading, menu, toast } from '../components.js';
import { count, plural } from '../format.js';
import { createEditor } from '../editor.js';
import { keyLines, lineOf } from '../toml.js';
import { navigate } from '../router.js';
import { EXAMPLES, exampleFor } from '../examples.js';
import { workspace } from '../workspace.js';
import {
  MAX_AGENTS, fromTOML, judgeFields, newDocument, setModelType, untouchedModel, setTaskMode, summary, taskMode, toTOML,
} from '../runform.js';

const DRAFT_KEY = 'gauntlet.draft';
const TABS = [['tasks', 'Tasks'], ['agents', 'Agents'], ['settings', 'Run settings'], ['toml', 'Edit as TOML']];

/** renderSubmit renders /runs/new (?benchmark=<key> preselects the benchmark). */
export async function renderSubmit(ctx) {
  document.title = 'New run · gauntlet';
  replace(ctx.main, loading('Loading the form'));
  let benchmarks; let secrets; let harnesses;
  try {
    [benchmarks, secrets, harnesses] = await Promise.all([
      api.benchmarks({ signal: ctx.signal }), api.secrets({ signal: ctx.signal }), api.harnesses({ signal: ctx.signal }),
    ]);
  } catch (err) {
    if (err.name === 'AbortError') throw err;
    replace(ctx.main, errorBox(err, 'Could not load the form'));
    return;
  }
  const records = secrets.secrets || [];
  const harnessList = harnesses.harnesses || [];
  // Hosted models only where the operator serves them: submit refuses them
  // elsewhere, so the form does not offer them.
  const hostsModels = !!harnesses.hosted_models;
  // A benchmark whose images are being prepared takes runs of its ready tasks.
  const ready = (benchmarks.benchmarks || []).filter((b) => b.status === 'ready' || (b.status === 'syncing' && b.images?.ready > 0));

  const wanted = ctx.query.get('benchmark') || '';
  const draft = wanted ? '' : sessionStorage.getItem(DRAFT_KEY);
  let doc;
  try {
    doc = draft ? fromTOML(draft) : newDocument(wanted || (ready[0] && ready[0].key) || '');
  } catch {
    doc = newDocument(wanted);
  }
  let manifest = null;
  let benchmarkView = null;
  let tab = TABS.some(([t]) => t === ctx.query.get('tab')) ? ctx.query.get('tab') : 'tasks';
  let tomlError = '';
  let idempotencyKey = newKey();

  const tabBar = h('div', { class: 'tabs', role: 'tablist', 'aria-label': 'New run sections' });
  const panel = h('div', { role: 'tabpanel', id: 'form-panel', class: 'form-panel' });
  const summaryBox = h('div', { id: 'run-summary', 'aria-live': 'polite' });
  const report = h('div', { id: 'validation', 'aria-live': 'polite' });
  const validateBtn = h('button', { type: 'button', id: 'validate' }, 'Validate');
  const submitBtn = h('button', { type: 'button', id: 'submit', class: 'primary' }, 'Submit run');
  const editor = createEditor({
    id: 'config', label: 'Run config (TOML)', value: toTOML(doc),
    onInput: (v) => {
      sessionStorage.setItem(DRAFT_KEY, v);
      idempotencyKey = newKey();
      try {
        doc = fromTOML(v);
        tomlError = '';
      } catch (err) {
        tomlError = err.message;
      }
      paintSummary();
    },
  });
  const examples = menu('Load example', EXAMPLES.map((ex) => ({
    label: ex.title, sub: ex.description, onSelect: () => {
      try {
        doc = fromTOML(exampleFor(ex, doc.experiment && doc.experiment.benchmark));
        tomlError = '';
      } catch (err) {
        tomlError = err.message;
      }
      changed({ repaint: true });
      loadBenchmark();
    },
  })));

  replace(ctx.main,
    h('div', { class: 'page-head' },
      h('div', { class: 'titles' },
        h('h1', {}, 'New run'),
        h('div', { class: 'sub' }, `Up to ${MAX_AGENTS} agents against a benchmark's tasks. Keys are referenced by secret record name, never pasted here. `,
          link('/secrets', 'Manage secrets'))),
      h('div', { class: 'actions' }, examples)),
    h('div', { class: 'submit-layout' },
      h('div', { class: 'form-main' }, tabBar, panel,
        h('div', { class: 'toolbar editor-actions' }, validateBtn, submitBtn)),
      h('aside', { class: 'card summary-card', 'aria-labelledby': 'summary-title' },
        h('div', { class: 'card-head' }, h('h2', { id: 'summary-title' }, 'Summary')),
        h('div', { class: 'card-body' }, summaryBox, report))));

  // changed records a form edit: the draft, a new idempotency key (a
  // changed config is a new submission), the TOML view and the summary.
  function changed({ repaint = false } = {}) {
    const text = toTOML(doc);
    sessionStorage.setItem(DRAFT_KEY, text);
    idempotencyKey = newKey();
    if (tab !== 'toml') editor.setValue(text);
    editor.setProblems([]);
    paintSummary();
    if (repaint) showTab(tab);
  }

  function showTab(next) {
    if (next !== 'toml' && tab === 'toml' && tomlError) {
      toast(`The TOML does not parse (${tomlError}); fix it before going back to the form.`, 'bad');
      next = 'toml';
    }
    if (next === 'toml' && tab !== 'toml') editor.setValue(toTOML(doc));
    tab = next;
    replace(tabBar, TABS.map(([t, label]) => h('a', {
      href: `?tab=${t}`, role: 'tab', id: `tab-${t}`, 'aria-selected': String(t === tab), 'aria-controls': 'form-panel',
      onclick: (e) => { e.preventDefault(); showTab(t); },
    }, label)));
    panel.setAttribute('aria-labelledby', `tab-${tab}`);
    if (tab === 'tasks') replace(panel, tasksTab());
    else if (tab === 'agents') replace(panel, agentsTab());
    else if (tab === 'settings') replace(panel, settingsTab());
    else replace(panel, editor.el, h('p', { class: 'small muted' }, 'Sent as ', h('code', {}, 'application/toml'),
      '; unknown keys are errors. Edits here show in the form, and the form\'s edits here.'));
  }

  async function loadBenchmark() {
    const key = doc.experiment && doc.experiment.benchmark;
    manifest = null;
    benchmarkView = null;
    if (key) {
      try {
        benchmarkView = await api.benchmark(key, { signal: ctx.signal });
        manifest = benchmarkView.manifest;
      } catch (err) {
        if (err.name === 'AbortError') throw err;
      }
    }
    if (tab !== 'toml' && dropUnusedModels()) changed();
    showTab(tab);
    paintSummary();
  }

  // harnessRow is the harness table's row of the harness an agent runs:
  // its own, else the benchmark's default.
  function harnessRow(agent) {
    const def = (manifest && manifest.harness && manifest.harness.default) || '';
    return harnessList.find((x) => x.name === (agent.harness || def));
  }

  // dropUnusedModels removes the blank default model of agents whose
  // harness runs without one (the benchmark's default oracle, say): a
  // model-free agent omits [agents.model]. It reports whether it did.
  function dropUnusedModels() {
    let dropped = false;
    for (const a of doc.agents || []) {
      const row = harnessRow(a);
      if (row && row.model_free && untouchedModel(a.model)) {
        delete a.model;
        dropped = true;
      }
    }
    return dropped;
  }

  // ---------- Tasks ----------
  function tasksTab() {
    const current = doc.experiment && doc.experiment.benchmark;
    const choices = ready.some((b) => b.key === current) || !current ? ready : [{ key: current, name: current }, ...ready];
    const pick = field('Benchmark', 'benchmark', select('benchmark', choices.map((b) => [b.key, `${b.name} (${b.key})`]), current, (v) => {
      doc.experiment = { ...(doc.experiment || {}), benchmark: v };
      changed();
      loadBenchmark();
    }));
    if (!manifest) {
      return h('div', {}, pick, h('p', { class: 'muted' }, current ? `Benchmark ${current} has no ready task list.` : 'Pick a benchmark.'));
    }
    const mode = taskMode(doc);
    const group = uid('mode');
    const radio = (value, label, detail) => h('label', { class: 'choice' },
      h('input', { type: 'radio', name: group, value, checked: mode === value, id: `tasks-${value}`,
        onchange: () => { setTaskMode(doc, value); changed({ repaint: true }); } }),
      h('span', {}, label), detail ? h('span', { class: 'muted small' }, ` ${detail}`) : null);
    const t = doc.tasks || {};
    let detail = null;
    if (mode === 'task_set') {
      detail = field('Task set', 'task-set', select('task-set', [['', 'Choose…'], ...(manifest.task_sets || []).map((s) =>
        [s.name, `${s.name} · ${plural(s.tasks, 'task')}${s.recommended ? ' · recommended' : ''}`])], t.task_set || '', (v) => {
        doc.tasks = { task_set: v };
        changed();
      }));
    } else if (mode === 'categories') {
      detail = checkList('categories', (manifest.categories || []).map((c) => [c.name, `${c.name} (${c.tasks})`]), t.categories || [], (list) => {
        doc.tasks = { categories: list };
        changed();
      });
    } else if (mode === 'task_names') {
      const search = h('input', { type: 'search', id: 'task-search', placeholder: 'Search tasks', 'aria-label': 'Search tasks' });
      const listBox = h('div', {});
      const paint = () => {
        const q = search.value.trim().toLowerCase();
        const tasks = (manifest.tasks || []).filter((x) => !q || x.name.toLowerCase().includes(q)).slice(0, 200);
        replace(listBox, checkList('task-names', tasks.map((x) => [x.name, x.category ? `${x.name} · ${x.category}` : x.name]),
          (doc.tasks && doc.tasks.task_names) || [], (picked) => {
            // Names hidden by the search stay selected.
            const shown = new Set(tasks.map((x) => x.name));
            const kept = ((doc.tasks && doc.tasks.task_names) || []).filter((n) => !shown.has(n));
            doc.tasks = { task_names: [...kept, ...picked] };
            changed();
          }));
      };
      search.addEventListener('input', paint);
      paint();
      detail = h('div', {}, search, listBox);
    }
    return h('div', {}, pick,
      h('fieldset', { class: 'choices' }, h('legend', {}, 'Tasks'),
        radio('all', 'Every task', `(${count((manifest.tasks || []).length)})`),
        (manifest.task_sets || []).length ? radio('task_set', 'A named task set') : null,
        (manifest.categories || []).length ? radio('categories', 'Categories') : null,
        radio('task_names', 'Task names')),
      detail);
  }

  // ---------- Agents ----------
  function agentsTab() {
    const agents = doc.agents || (doc.agents = []);
    const req = (manifest && manifest.harness) || {};
    const note = req.requirement ? h('p', { class: 'small muted', id: 'harness-requirement' },
      `This benchmark's harness requirement: ${req.requirement}${req.default ? ` (default ${req.default})` : ''}.`) : null;
    const add = h('button', { type: 'button', id: 'add-agent', disabled: agents.length >= MAX_AGENTS, onclick: () => {
      const added = { harness: req.default || '', model: { type: 'provider', model: '', api_key_secret: '' } };
      doc.agents.push(added);
      dropUnusedModels();
      changed({ repaint: true });
    } }, '+ Add agent');
    return h('div', {}, note, agents.map((a, i) => agentCard(a, i)), h('div', { class: 'toolbar' }, add,
      h('span', { class: 'small muted' }, `${agents.length} of ${MAX_AGENTS}`)));
  }

  function agentCard(agent, i) {
    const id = (f) => `agent-${i}-${f}`;
    const set = (k, v) => { agent[k] = v; changed(); };
    // The harness the agent runs (its own, else the benchmark's default)
    // says whether it needs a model: only the model-free ones (oracle, nop,
    // command) may omit [agents.model], and only a harness that calls the
    // model gateway can use a hosted model.
    const runs = harnessRow(agent);
    const modelFree = !!(runs && runs.model_free);
    if (!agent.model && !modelFree) agent.model = { type: 'provider', model: '', api_key_secret: '' };
    const model = agent.model;
    const known = harnessList.map((x) => [x.name, x.available === false ? `${x.name} — unavailable here` : `${x.name}${x.version ? ` ${x.version}` : ''}`]);
    if (agent.harness && !harnessList.some((x) => x.name === agent.harness)) known.unshift([agent.harness, `${agent.harness} (unknown)`]);
    const chosen = harnessList.find((x) => x.name === agent.harness);
    const fields = [
      field('Name (optional)', id('name'), input(id('name'), agent.name || '', (v) => set('name', v), 'tells apart agents with the same harness and model')),
      field('Harness', id('harness'), select(id('harness'), [['', 'Benchmark default'], ...known], agent.harness || '', (v) => {
        agent.harness = v;
        dropUnusedModels();
        changed({ repaint: true });
      }), chosen ? (chosen.available === false ? h('span', { class: 'bad small' }, chosen.reason || 'not available on this platform') : h('span', { class: 'muted small' }, chosen.description || '')) : null),
    ];
    if (chosen && chosen.takes_command) {
      fields.push(field('Command', id('command'), input(id('command'), agent.command || '', (v) => set('command', v), 'run with bash -c in the sandbox')));
    }
    const types = [['provider', 'Provider'], ['endpoint', 'Endpoint']];
    if (hostsModels && (!runs || runs.wire_api)) types.push(['hosted', 'Hosted']);
    // A config that names a hosted model anyway (typed as TOML, or a
    // draft) keeps its value visible; submit then says why it is refused.
    else if (model && model.type === 'hosted') types.push(['hosted', 'Hosted — not served by this platform']);
    if (modelFree) types.unshift(['', 'None — this harness runs without a model']);
    fields.push(field('Model type', id('model-type'), select(id('model-type'), types,
      model ? model.type || 'provider' : '', (v) => {
        if (v === '') delete agent.model; else setModelType(agent, v);
        changed({ repaint: true });
      })));
    const mset = (k, v) => { agent.model[k] = v; changed(); };
    if (!model) {
      // A model-free agent: no model fields.
    } else if (model.type === 'hosted') {
      // Osmosis's hosted model: the platform serves the adapter at its
      // operator's endpoint with its own key, so there is no URL or key here.
      fields.push(field('Base model', id('base-model'), input(id('base-model'), model.base_model || '', (v) => mset('base_model', v), 'e.g. Qwen/Qwen3-8B')));
      fields.push(field('LoRA model name', id('lora'), input(id('lora'), model.lora_model_name || '', (v) => mset('lora_model_name', v), 'the adapter the platform serves')));
    } else {
      fields.push(field('Model', id('model'), input(id('model'), model.model || '', (v) => mset('model', v),
        model.type === 'endpoint' ? 'the name the endpoint serves' : 'provider/name, e.g. openai/gpt-5.2')));
      if (model.type === 'endpoint') {
        fields.push(field('Base URL', id('base-url'), input(id('base-url'), model.base_url || '', (v) => mset('base_url', v), 'https://…/v1')));
      }
      fields.push(field('API key secret', id('key'), secretPicker(id('key'), model.api_key_secret || '', (v) => mset('api_key_secret', v))));
    }
    const remove = doc.agents.length > 1 ? h('button', { type: 'button', class: 'link small', id: id('remove'), onclick: () => {
      doc.agents.splice(i, 1);
      changed({ repaint: true });
    } }, 'Remove') : null;
    return h('fieldset', { class: 'agent-card card', id: `agent-${i}` },
      h('legend', {}, `Agent ${i + 1}`), remove, h('div', { class: 'form-grid' }, fields));
  }

  // secretPicker lists the workspace's and the caller's personal records by
  // name; a name the config already uses but no record has stays selectable
  // (and is flagged as missing in the summary).
  function secretPicker(id, value, onChange) {
    const names = [...new Set(records.map((r) => r.name))].sort();
    const opts = [['', 'Choose a secret record…'], ...names.map((n) => {
      const scopes = records.filter((r) => r.name === n).map((r) => r.scope).join(' + ');
      return [n, `${n} (${scopes})`];
    })];
    if (value && !names.includes(value)) opts.push([value, `${value} (missing)`]);
    return select(id, opts, value, onChange);
  }

  // ---------- Run settings ----------
  function settingsTab() {
    const ex = doc.execution || (doc.execution = {});
    const num = (key, label, attrs, hint) => field(label, `exec-${key}`, h('input', {
      type: 'number', id: `exec-${key}`, value: ex[key] ?? '', ...attrs,
      oninput: (e) => {
        const v = e.target.value === '' ? undefined : Number(e.target.value);
        if (v === undefined) delete ex[key]; else ex[key] = v;
        changed();
      },
    }), hint ? h('span', { class: 'muted small' }, hint) : null);
    const judge = judgeFields(manifest && manifest.judge);
    return h('div', { class: 'form-grid' },
      num('attempts_per_task', 'Attempts per task', { min: 1, max: 100, step: 1 }, 'pass@k needs k attempts'),
      num('max_concurrent_attempts', 'Concurrent attempts', { min: 1, max: 1024, step: 1 }),
      num('timeout_multiplier', 'Timeout multiplier', { min: 0.1, max: 100, step: 0.1 }, 'scales the task timeouts'),
      num('max_retries', 'Retries', { min: 0, max: 10, step: 1 }, 'of infrastructure errors only'),
      num('max_tokens_per_attempt', 'Token budget per attempt', { min: 1, step: 1 }, 'optional: input + output tokens, cached input included'),
      num('max_cost_usd_per_attempt', 'Cost budget per attempt (USD)', { min: 0.01, step: 0.01 }, 'optional: needs every agent\'s model priced'),
      num('pass_threshold', 'Pass threshold', { min: 0, max: 1, step: 0.05 },
        manifest ? `default: the benchmark's ${manifest.pass_threshold}` : 'default: the benchmark\'s'),
      judge.model ? field('Judge model', 'exec-judge-model', input('exec-judge-model', ex.judge_model || '', (v) => { ex.judge_model = v; changed(); },
        judge.defaultModel ? `default ${judge.defaultModel}` : 'required')) : null,
      judge.key ? field('Judge key secret', 'exec-judge-key', secretPicker('exec-judge-key', ex.judge_api_key_secret || '', (v) => {
        ex.judge_api_key_secret = v;
        changed();
      })) : null);
  }

  // ---------- summary ----------
  function paintSummary() {
    if (tomlError) {
      replace(summaryBox, h('div', { class: 'alert bad', id: 'toml-error' }, h('div', { class: 'title' }, 'Not valid TOML'), tomlError));
      return;
    }
    const s = summary(doc, manifest, records);
    replace(summaryBox,
      h('dl', { class: 'kv', id: 'summary' },
        h('dt', {}, 'Benchmark'), h('dd', {}, benchmarkView ? link(`/benchmarks/${encodeURIComponent(benchmarkView.key)}`, benchmarkView.name) : (doc.experiment && doc.experiment.benchmark) || '—'),
        h('dt', {}, 'Tasks'), h('dd', { id: 'summary-tasks' }, manifest ? count(s.tasks) : '—'),
        h('dt', {}, 'Agents'), h('dd', { id: 'summary-agents' }, count(s.agents)),
        h('dt', {}, 'Attempts'), h('dd', { id: 'summary-attempts' }, manifest ? count(s.total) : '—',
          h('span', { class: 'muted small' }, ` = ${count(s.tasks)} tasks × ${s.agents} agents × ${s.attempts}`)),
        h('dt', {}, 'Secrets'), h('dd', { id: 'summary-secrets' }, s.secrets.length ? s.secrets.map((x, i) => [i ? ', ' : '', h('code', {}, x.name)]) : 'none')),
      s.missing.length ? h('div', { class: 'alert bad', id: 'missing-secrets' },
        h('div', { class: 'title' }, `Missing ${plural(s.missing.length, 'secret record')}`),
        h('ul', {}, s.missing.map((m) => h('li', {}, h('code', {}, m.name), h('span', { class: 'small muted' }, ` — ${m.where.join(', ')} `),
          link(`/secrets?new=${encodeURIComponent(m.name)}`, 'Create it')))),
        h('div', { class: 'small' }, 'The run cannot start until each exists.')) : null);
  }

  const busy = (on) => { validateBtn.disabled = on; submitBtn.disabled = on; };
  const text = () => (tab === 'toml' ? editor.value() : toTOML(doc));

  validateBtn.addEventListener('click', async () => {
    busy(true);
    try {
      showReport(report, editor, text(), await api.validateRun(text()));
    } catch (err) {
      showError(report, editor, text(), err);
    } finally {
      busy(false);
    }
  });
  submitBtn.addEventListener('click', async () => {
    busy(true);
    try {
      const created = await api.submitRun(text(), idempotencyKey);
      sessionStorage.removeItem(DRAFT_KEY);
      toast(`Submitted ${created.name}: ${plural(created.slot_count, 'attempt')} on ${plural(created.task_count, 'task')}.`, 'ok');
      navigate(`/benchmarks/runs/${encodeURIComponent(created.id)}`);
    } catch (err) {
      if (err instanceof ApiError && err.code === 'BILLING_REQUIRED') workspace.load({ refresh: true });
      showError(report, editor, text(), err);
      busy(false);
    }
  });

  showTab(tab);
  paintSummary();
  await loadBenchmark();
}

// ---------- small form parts ----------

function field(label, id, control, hint) {
  return h('div', { class: 'field' }, h('label', { for: id }, label), control, hint || null);
}

function input(id, value, onChange, placeholder) {
  return h('input', { type: 'text', id, value, placeholder: placeholder || null, autocomplete: 'off', spellcheck: 'false',
    oninput: (e) => onChange(e.target.value.trim()) });
}

function select(id, options, value, onChange) {
  return h('select', { id, onchange: (e) => onChange(e.target.value) },
    options.map(([v, label]) => h('option', { value: v, selected: v === value }, label)));
}

function checkList(id, options, selected, onChange) {
  const chosen = new Set(selected);
  const box = h('div', { class: 'check-list', id, role: 'group' });
  for (const [v, label] of options) {
    box.append(h('label', { class: 'choice' }, h('input', {
      type: 'checkbox', value: v, checked: chosen.has(v),
      onchange: (e) => {
        if (e.target.checked) chosen.add(v); else chosen.delete(v);
        onChange(options.map(([x]) => x).filter((x) => chosen.has(x)));
      },
    }), h('span', {}, label)));
  }
  return box;
}

function newKey() {
  return `console-${crypto.randomUUID ? crypto.randomUUID() : `${Date.now()}-${Math.random().toString(16).slice(2)}`}`;
}

// located adds the TOML line of each problem.
function located(text, problems) {
  const lines = keyLines(text);
  return problems.map((p) => ({ ...p, line: lineOf(text, p.field, p.message, lines) }));
}

function showReport(box, editor, text, v) {
  const problems = located(text, v.problems || []);
  editor.setProblems(problems);
  replace(box,
    v.valid
      ? h('div', { class: 'alert ok', id: 'validation-ok' }, h('div', { class: 'title' }, 'Ready to submit'), 'Nothing would stop this run.')
      : h('div', { class: 'alert bad', id: 'validation-failed' }, h('div', { class: 'title' }, plural(problems.length, 'problem')),
        'Fix these and validate again.'),
    h('dl', { class: 'kv', id: 'resolved' },
      h('dt', {}, 'Manifest version'), h('dd', {}, v.manifest_version || '—'),
      h('dt', {}, 'Tasks'), h('dd', { id: 'resolved-tasks' }, count(v.task_count)),
      h('dt', {}, 'Attempts'), h('dd', {}, count(v.slot_count))),
    v.billing_problem ? h('div', { class: 'alert bad', id: 'billing-problem' }, h('div', { class: 'title' }, 'Billing'), v.billing_problem) : null,
    problemList(editor, problems),
    (v.warnings || []).length ? h('div', { class: 'alert warn' }, h('div', { class: 'title' }, 'Warnings'),
      h('ul', {}, v.warnings.map((w) => h('li', {}, w)))) : null);
}

function problemList(editor, problems) {
  if (!problems.length) return null;
  return h('ul', { class: 'problems', id: 'config-problems' }, problems.map((p) => h('li', { dataset: { field: p.field || '' } },
    h('span', { class: 'where' }, p.line ? h('span', { class: 'small muted' }, `line ${p.line}`) : null),
    h('span', {}, p.field ? [h('span', { class: 'key' }, p.field), ' '] : null, p.message))));
}

function showError(box, editor, text, err) {
  const problems = err instanceof ApiError ? located(text, err.problems) : [];
  editor.setProblems(problems);
  const billing = err instanceof ApiError && err.code === 'BILLING_REQUIRED';
  replace(box,
    h('div', { class: 'alert bad', role: 'alert', id: 'submit-error' }, h('div', { class: 'title' }, billing ? 'Billing required' : 'Not submitted'),
      problems.length && !billing ? `The server found ${plural(problems.length, 'problem')}.` : err.message),
    problems.length ? problemList(editor, problems) : (err instanceof ApiError && err.details ? errorBox(err) : null));
}
