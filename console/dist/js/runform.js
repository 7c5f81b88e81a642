// The New Run form's model, free of the DOM: the form edits a run config
// document (the TOML's data as plain objects), so the form and "Edit as
// TOML" are two views of one value and round-trip by construction. Keys the
// form has no field for ([env], [secrets], [verifier], an agent's env …)
// stay in the document untouched. TOML itself is read and written by the
// vendored smol-toml (npm smol-toml 1.9.1, BSD-3-Clause), a correct TOML 1.0
// parser: a hand-written scanner would disagree with the server's parser on
// some input, and then the form would show a config other than the one sent.

import { parse, stringify } from './vendor/smol-toml/index.js';

/** MAX_AGENTS is the run config's limit on [[agents]] entries. */
export const MAX_AGENTS = 8;

/** MODEL_TYPES are the model types a run config accepts, with their fields. */
export const MODEL_TYPES = {
  provider: ['model', 'api_key_secret'],
  endpoint: ['model', 'base_url', 'api_key_secret', 'extra_headers'],
  hosted: ['base_model', 'lora_model_name'],
};

/** TASK_MODES are the ways the Tasks tab selects tasks. */
export const TASK_MODES = ['all', 'task_set', 'categories', 'task_names'];

// Section and key order of the TOML the form writes: the order of the
// documentation, so a generated config reads like the examples.
const SECTION_ORDER = ['experiment', 'tasks', 'execution', 'env', 'secrets', 'verifier', 'agents'];
const AGENT_ORDER = ['name', 'harness', 'command', 'harness_api_key_secret', 'secrets', 'model', 'env'];
const MODEL_ORDER = ['type', 'model', 'base_model', 'lora_model_name', 'base_url', 'api_key_secret', 'extra_headers'];
const EXECUTION_ORDER = ['attempts_per_task', 'max_concurrent_attempts', 'timeout_multiplier', 'max_retries',
  'max_tokens_per_attempt', 'max_cost_usd_per_attempt', 'pass_threshold', 'judge_model', 'judge_api_key_secret'];

/** newDocument is the form's starting config for a benchmark key. */
export function newDocument(benchmark, defaultHarness = '') {
  const agent = defaultHarness ? { harness: defaultHarness } : {};
  agent.model = { type: 'provider', model: '', api_key_secret: '' };
  return {
    experiment: { benchmark: benchmark || '' },
    execution: { attempts_per_task: 1, max_concurrent_attempts: 4, timeout_multiplier: 1.0, max_retries: 0 },
    agents: [agent],
  };
}

/**
 * fromTOML parses a config's text into a document. It throws an Error whose
 * message names the line when the text is not TOML.
 */
export function fromTOML(text) {
  let doc;
  try {
    doc = parse(text);
  } catch (err) {
    // TomlError carries the position; its message is a multi-line code block.
    const what = String(err.message || err).split('\n')[0].replace(/^Invalid TOML document: /, '');
    throw new Error(err.line ? `line ${err.line}, column ${err.column}: ${what}` : what);
  }
  if (doc.agents !== undefined && !Array.isArray(doc.agents)) {
    throw new Error('agents must be an array of tables ([[agents]])');
  }
  return doc;
}

/** toTOML renders a document as TOML, in the documented section order, without empty values. */
export function toTOML(doc) {
  // JavaScript has one number type, so 1.0 would come out as the TOML
  // integer 1; the keys whose type is float are written as floats.
  return stringify(ordered(clean(doc))).replace(FLOAT_KEYS, '$1 = $2.0');
}

// FLOAT_KEYS matches an integral value of a float-typed [execution] key.
const FLOAT_KEYS = /^(timeout_multiplier|pass_threshold|max_cost_usd_per_attempt) = (-?\d+)$/gm;

// clean drops what the form leaves empty: "" strings, empty lists and
// tables, so an untouched field writes nothing (the server then applies
// its default) instead of an invalid empty value.
function clean(v) {
  if (Array.isArray(v)) {
    const items = v.map(clean).filter((x) => x !== undefined);
    return items.length ? items : undefined;
  }
  if (v && typeof v === 'object' && !(v instanceof Date)) {
    const out = {};
    for (const [k, x] of Object.entries(v)) {
      const c = clean(x);
      if (c !== undefined) out[k] = c;
    }
    return Object.keys(out).length ? out : undefined;
  }
  if (v === '' || v === null || v === undefined || (typeof v === 'number' && Number.isNaN(v))) return undefined;
  return v;
}

function ordered(doc) {
  if (!doc) return {};
  const out = byOrder(doc, SECTION_ORDER);
  if (out.execution) out.execution = byOrder(out.execution, EXECUTION_ORDER);
  if (out.agents) {
    out.agents = out.agents.map((a) => {
      const agent = byOrder(a || {}, AGENT_ORDER);
      if (agent.model) agent.model = byOrder(agent.model, MODEL_ORDER);
      return agent;
    });
  }
  return out;
}

// byOrder copies obj with the keys of order first, in that order, then the rest.
function byOrder(obj, order) {
  const out = {};
  for (const k of order) if (k in obj) out[k] = obj[k];
  for (const [k, v] of Object.entries(obj)) if (!(k in out)) out[k] = v;
  return out;
}

/** taskMode says how a document selects tasks (a task set wins, as on the server). */
export function taskMode(doc) {
  const t = doc.tasks || {};
  // A key present but still empty is the mode just chosen in the form.
  if ('task_set' in t) return 'task_set';
  if ('categories' in t && !(t.task_names || []).length) return 'categories';
  if ('task_names' in t) return 'task_names';
  return 'all';
}

/** setTaskMode switches the selection, keeping only the keys of the new mode. */
export function setTaskMode(doc, mode, value) {
  if (!TASK_MODES.includes(mode)) throw new Error(`task mode ${mode}: want one of ${TASK_MODES.join(', ')}`);
  if (mode === 'all') {
    delete doc.tasks;
    return doc;
  }
  doc.tasks = { [mode]: value ?? (mode === 'task_set' ? '' : []) };
  return doc;
}

/**
 * selectedTasks is the set of task names a document selects on a manifest
 * (the API's benchmark manifest view): every task, a task set's tasks, or
 * the union of the named tasks and the categories' tasks. Unknown names
 * select nothing; the server reports them.
 */
export function selectedTasks(doc, manifest) {
  if (!manifest) return new Set();
  const all = manifest.tasks || [];
  const t = doc.tasks || {};
  if (t.task_set) return new Set((manifest.task_set_tasks || {})[t.task_set] || []);
  const names = t.task_names || [];
  const cats = t.categories || [];
  if (!names.length && !cats.length) return new Set(all.map((x) => x.name));
  const known = new Set(all.map((x) => x.name));
  const out = new Set(names.filter((n) => known.has(n)));
  const catSet = new Set(cats);
  for (const task of all) if (task.category && catSet.has(task.category)) out.add(task.name);
  return out;
}

/**
 * untouchedModel reports whether a model is the form's blank default (type
 * provider, every field empty): one the form may drop when the agent's
 * harness turns out to need no model, as nothing the user typed is lost.
 */
export function untouchedModel(model) {
  if (!model || (model.type || 'provider') !== 'provider') return false;
  return Object.entries(model).every(([k, v]) => k === 'type' || v === '' || v === undefined);
}

/** setModelType changes an agent's model type, keeping the fields both types share. */
export function setModelType(agent, type) {
  if (!MODEL_TYPES[type]) throw new Error(`model type ${type}: want provider, endpoint or hosted`);
  const old = agent.model || {};
  const model = { type };
  for (const f of MODEL_TYPES[type]) if (old[f] !== undefined) model[f] = old[f];
  agent.model = model;
  return agent;
}

/**
 * referencedSecrets lists every secret record name a document and its
 * benchmark need, each with where it is referenced, in first-seen order.
 */
export function referencedSecrets(doc, manifest) {
  const refs = new Map();
  const add = (name, where) => {
    if (typeof name !== 'string' || !name) return;
    if (!refs.has(name)) refs.set(name, []);
    refs.get(name).push(where);
  };
  for (const n of (manifest && manifest.required_secrets) || []) add(n, 'the benchmark');
  (doc.agents || []).forEach((a, i) => {
    const who = `agents[${i}]`;
    add(a && a.model && a.model.api_key_secret, `${who}.model.api_key_secret`);
    add(a && a.harness_api_key_secret, `${who}.harness_api_key_secret`);
    for (const n of (a && a.secrets) || []) add(n, `${who}.secrets`);
  });
  for (const n of (doc.secrets && doc.secrets.required) || []) add(n, 'secrets.required');
  for (const n of (doc.verifier && doc.verifier.required) || []) add(n, 'verifier.required');
  add(doc.execution && doc.execution.judge_api_key_secret, 'execution.judge_api_key_secret');
  return [...refs.entries()].map(([name, where]) => ({ name, where }));
}

/**
 * summary is what the running summary shows: tasks after selection, agents,
 * attempts per task, total attempts (tasks × agents × attempts), the secret
 * records referenced, and those the workspace lacks (records is the API's
 * secret list; a workspace or a personal record satisfies a name).
 */
export function summary(doc, manifest, records) {
  const tasks = selectedTasks(doc, manifest).size;
  const agents = (doc.agents || []).length;
  const attempts = Number((doc.execution || {}).attempts_per_task) || 1;
  const have = new Set((records || []).map((r) => r.name));
  const secrets = referencedSecrets(doc, manifest);
  return {
    tasks, agents, attempts, total: tasks * agents * attempts,
    secrets, missing: secrets.filter((s) => !have.has(s.name)),
  };
}

/**
 * judgeFields says which judge fields to offer for a benchmark's judge
 * (the manifest's {required, default_model}): none when it grades without
 * a judge; else the key secret (required) and the model (optional when the
 * benchmark has a default, whose name is the placeholder).
 */
export function judgeFields(judge) {
  const j = judge || {};
  if (!j.required) return { model: false, key: false, defaultModel: '' };
  return { model: true, key: true, modelRequired: !j.default_model, defaultModel: j.default_model || '' };
}
