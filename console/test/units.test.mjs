// Unit tests of the console's DOM-free modules (TOML key lines, number
// formatting). console/units_test.go runs them with node's test runner:
//
//   node --test console/test/units.test.mjs

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lineOf, splitPath } from '../dist/js/toml.js';
import { estimateText, parseLogins, pct, pText, pValue, seconds, signedPP, taskCheckText, tokens, usd } from '../dist/js/format.js';

const CONFIG = `[experiment]
benchmark = "demo-bench"   # a comment with = in it

[execution]
attempts_per_task = 0
max_retry = 1

[[agents]]
harness = "oracle"
[agents.model]
type = "local"

[[agents]]
name = "x"
[agents.model]
type = "endpoint"
extra_headers = { "a b" = "x", AUTHORIZATION = "y" }
`;

test('lineOf finds the line that sets each field the API names', () => {
  const cases = [
    { field: 'experiment', want: 1 },
    { field: 'experiment.benchmark', want: 2 },
    { field: 'execution.attempts_per_task', want: 5 },
    { field: 'execution.max_retry', want: 6 },
    { field: 'agents', want: 8, why: 'the first [[agents]]' },
    { field: 'agents[0].harness', want: 9 },
    { field: 'agents[0].model.type', want: 11 },
    { field: 'agents[1]', want: 13 },
    { field: 'agents[1].name', want: 14 },
    { field: 'agents[1].model.type', want: 16 },
    { field: 'agents[1].model.base_url', want: 15, why: 'a missing key points at its table' },
    { field: 'agents[1].model.extra_headers["a b"]', want: 17, why: 'a quoted key in an inline table' },
    { field: 'agents[1].model.extra_headers.AUTHORIZATION', want: 17 },
    { field: 'agents[5]', want: 8, why: 'an agent past the last one points at the first' },
    { field: 'tasks.task_set', want: null, why: 'no [tasks] table' },
    { field: 'extra', want: null },
    { field: '', message: 'invalid TOML at line 3, column 2: expected a key', want: 3, why: 'a syntax error names its line' },
    { field: '', message: 'the selection matches no tasks', want: null },
  ];
  for (const c of cases) {
    assert.equal(lineOf(CONFIG, c.field, c.message || ''), c.want, `lineOf(${JSON.stringify(c.field)}) ${c.why || ''}`);
  }
});

test('splitPath splits dotted paths, keeping indices and unquoting keys', () => {
  const cases = [
    ['execution.attempts_per_task', ['execution', 'attempts_per_task']],
    ['agents[1].model.type', ['agents[1]', 'model', 'type']],
    ['agents[0].model.extra_headers["a b"]', ['agents[0]', 'model', 'extra_headers', 'a b']],
    ['secrets.required', ['secrets', 'required']],
  ];
  for (const [path, want] of cases) assert.deepEqual(splitPath(path), want, `splitPath(${path})`);
});

test('scores, money, time and tokens format as the pages show them', () => {
  const cases = [
    [pct(0.625), '62.5%'],
    [pct(null), '—'],
    [estimateText({ value: 0.625, ci_low: 0.412, ci_high: 0.838, n: 8 }), '62.5% (41.2–83.8)'],
    [estimateText({ value: 1, ci_low: null, ci_high: null, n: 1 }), '100.0%'],
    [estimateText(null), '—'],
    [estimateText({ value: 0.0123, ci_low: 0.01, ci_high: 0.0146, n: 8 }, usd), '$0.012 ($0.010–$0.015)'],
    [usd(0.00123), '$0.0012'],
    [usd(0), '$0'],
    [usd(1.234), '$1.23'],
    [usd(1234.5), '$1,235'],
    [seconds(0.85), '850ms'],
    [seconds(12.34), '12.3s'],
    [seconds(245), '4m 05s'],
    [seconds(7380), '2h 03m'],
    [tokens(950), '950'],
    [tokens(12345), '12.3k'],
    [tokens(4_560_000), '4.56M'],
    [signedPP(-1), '−100.0 pp'],
    [signedPP(0), '±0.0 pp'],
    [signedPP(0.052), '+5.2 pp'],
    [pValue(0.0004), '< 0.001'],
    [pValue(0.0342), '0.034'],
    [pValue(1), '1'],
  ];
  for (const [got, want] of cases) assert.equal(got, want);
});

// ---------- New Run form model ----------
import { fromTOML, newDocument, referencedSecrets, selectedTasks, setModelType, setTaskMode, summary, taskMode, toTOML, untouchedModel } from '../dist/js/runform.js';

const MANIFEST = {
  tasks: [
    { name: 'a', category: 'data' }, { name: 'b', category: 'data' }, { name: 'c', category: 'web' }, { name: 'd', category: null },
  ],
  task_set_tasks: { parity: ['a', 'c'] },
  required_secrets: ['BENCH_TOKEN'],
};

test('the form document round-trips through TOML, keeping keys the form has no field for', () => {
  const text = `[experiment]
benchmark = "demo-bench"

[tasks]
categories = ["data"]

[execution]
attempts_per_task = 3
max_concurrent_attempts = 4
timeout_multiplier = 1.5
max_retries = 1

[env]
LOG_LEVEL = "info"

[[agents]]
name = "fast"
harness = "codex"
[agents.model]
type = "endpoint"
model = "qwen"
base_url = "https://llm.example.com/v1"
api_key_secret = "LLM_KEY"
extra_headers = { "X-Team" = "evals" }
[agents.env]
EFFORT = "high"

[[agents]]
harness = "claude-code"
[agents.model]
type = "provider"
model = "anthropic/claude-sonnet-4-5"
api_key_secret = "ANTHROPIC_API_KEY"
`;
  const doc = fromTOML(text);
  const again = fromTOML(toTOML(doc));
  assert.deepEqual(again, doc);
  assert.equal(again.agents[0].env.EFFORT, 'high');
  assert.equal(again.agents[0].model.extra_headers['X-Team'], 'evals');
  assert.equal(again.execution.timeout_multiplier, 1.5);
});

test('toTOML writes sections in the documented order and leaves empty fields out', () => {
  const doc = newDocument('demo-bench', 'codex');
  doc.agents[0].model.model = 'openai/gpt-5.2';
  const text = toTOML(doc);
  assert.ok(text.indexOf('[experiment]') < text.indexOf('[execution]'));
  assert.ok(text.indexOf('[execution]') < text.indexOf('[[agents]]'));
  assert.doesNotMatch(text, /api_key_secret/, 'an empty secret picker writes no key');
  assert.match(text, /model = "openai\/gpt-5.2"/);
  assert.match(text, /^timeout_multiplier = 1\.0$/m, 'a float key stays a float');
});

test('toTOML writes the per-attempt budgets after max_retries, the cost as a float', () => {
  const doc = newDocument('demo-bench', 'oracle');
  doc.execution.max_cost_usd_per_attempt = 5;
  doc.execution.max_tokens_per_attempt = 2000000;
  const text = toTOML(doc);
  assert.match(text, /^max_retries = 0\nmax_tokens_per_attempt = 2000000\nmax_cost_usd_per_attempt = 5\.0$/m);
  assert.equal(fromTOML(text).execution.max_cost_usd_per_attempt, 5);
});

test('task selection: every task, a task set, and the union of names and categories', () => {
  const doc = newDocument('x');
  assert.equal(taskMode(doc), 'all');
  assert.equal(selectedTasks(doc, MANIFEST).size, 4);
  setTaskMode(doc, 'task_set', 'parity');
  assert.deepEqual([...selectedTasks(doc, MANIFEST)].sort(), ['a', 'c']);
  setTaskMode(doc, 'categories', ['data']);
  assert.equal(taskMode(doc), 'categories');
  assert.deepEqual([...selectedTasks(doc, MANIFEST)].sort(), ['a', 'b']);
  doc.tasks.task_names = ['d', 'nope'];
  assert.deepEqual([...selectedTasks(doc, MANIFEST)].sort(), ['a', 'b', 'd'], 'unknown names select nothing');
  setTaskMode(doc, 'all');
  assert.equal(doc.tasks, undefined);
  assert.throws(() => setTaskMode(doc, 'some'), /task mode some/);
});

test('changing the model type keeps only the fields the new type has', () => {
  const agent = { model: { type: 'endpoint', model: 'm', base_url: 'https://x/v1', api_key_secret: 'K' } };
  setModelType(agent, 'provider');
  assert.deepEqual(agent.model, { type: 'provider', model: 'm', api_key_secret: 'K' });
  setModelType(agent, 'hosted');
  assert.deepEqual(agent.model, { type: 'hosted' });
  agent.model.base_model = 'Qwen/Qwen3-8B';
  agent.model.lora_model_name = 'step-400';
  assert.match(toTOML({ experiment: { benchmark: 'b' }, agents: [agent] }),
    /\[agents\.model\]\ntype = "hosted"\nbase_model = "Qwen\/Qwen3-8B"\nlora_model_name = "step-400"\n/, 'a hosted model is base_model + lora_model_name');
});

test('only the blank default model may be dropped for a model-free harness', () => {
  assert.equal(untouchedModel(newDocument('b').agents[0].model), true);
  assert.equal(untouchedModel({ type: 'provider' }), true);
  assert.equal(untouchedModel({ type: 'provider', model: 'openai/gpt-5.2', api_key_secret: '' }), false);
  assert.equal(untouchedModel({ type: 'hosted' }), false, 'a chosen type is a choice');
  assert.equal(untouchedModel(undefined), false);
  // A model-free agent writes no [agents.model] and reads back without one.
  const text = toTOML({ experiment: { benchmark: 'b' }, agents: [{ harness: 'oracle' }] });
  assert.doesNotMatch(text, /agents\.model/);
  assert.equal(fromTOML(text).agents[0].model, undefined);
});

test('the summary counts tasks × agents × attempts and flags missing secret records', () => {
  const doc = fromTOML(`[experiment]
benchmark = "x"
[tasks]
task_set = "parity"
[execution]
attempts_per_task = 5
judge_api_key_secret = "JUDGE_KEY"
[secrets]
required = ["GITHUB_TOKEN"]
[[agents]]
harness = "codex"
[agents.model]
type = "provider"
model = "openai/gpt-5.2"
api_key_secret = "OPENAI_API_KEY"
[[agents]]
harness = "cursor-cli"
harness_api_key_secret = "CURSOR_API_KEY"
[agents.model]
type = "provider"
model = "openai/gpt-5.2"
api_key_secret = "OPENAI_API_KEY"
`);
  const s = summary(doc, MANIFEST, [{ name: 'OPENAI_API_KEY', scope: 'personal' }, { name: 'GITHUB_TOKEN', scope: 'workspace' }]);
  assert.equal(s.tasks, 2);
  assert.equal(s.agents, 2);
  assert.equal(s.total, 2 * 2 * 5);
  assert.deepEqual(s.secrets.map((x) => x.name), ['BENCH_TOKEN', 'OPENAI_API_KEY', 'CURSOR_API_KEY', 'GITHUB_TOKEN', 'JUDGE_KEY']);
  assert.deepEqual(s.missing.map((x) => x.name), ['BENCH_TOKEN', 'CURSOR_API_KEY', 'JUDGE_KEY']);
  assert.deepEqual(referencedSecrets(doc, MANIFEST).find((x) => x.name === 'OPENAI_API_KEY').where,
    ['agents[0].model.api_key_secret', 'agents[1].model.api_key_secret']);
});

test('bad TOML is an error that names the line', () => {
  assert.throws(() => fromTOML('[execution]\nattempts_per_task = = 3\n'), /line 2/);
});

test('pText states a p-value without "= <"', () => {
  assert.equal(pText(0.0001), 'p < 0.001');
  assert.equal(pText(0.0421), 'p = 0.042');
  assert.equal(pText(null), 'p —');
});

// placeTooltip lives in components.js, which imports dom.js: both are DOM-free at import time.
test('a tooltip that must avoid a table goes beside it, else below, and only then over it', async () => {
  const { placeTooltip } = await import('../dist/js/components.js');
  const view = { width: 1440, height: 900 };
  const tip = { width: 300, height: 150 };
  const row = { top: 200, bottom: 230, left: 20, right: 900 };
  const tableBeside = { top: 100, bottom: 400, left: 20, right: 900 };
  assert.deepEqual(placeTooltip(row, tip, tableBeside, view), { top: 200, left: 908 });
  const wide = { top: 100, bottom: 400, left: 10, right: 1430 };
  assert.deepEqual(placeTooltip(row, tip, wide, view), { top: 408, left: 20 }, 'below the table when no side has room');
  const tall = { top: 10, bottom: 890, left: 10, right: 1430 };
  assert.equal(placeTooltip(row, tip, tall, view).top, 236, 'below the row when nothing fits');
});

test('paretoFrontier keeps the points no other is cheaper and better than, cheapest first', async () => {
  const { paretoFrontier, dominates } = await import('../dist/js/frontier.js');
  const p = (name, x, y) => ({ name, x, y });
  const points = [
    p('a', 0.10, 0.40), p('b', 0.05, 0.30), p('c', 0.20, 0.35), // c: dearer and worse than a
    p('d', 0.30, 0.70), p('e', 0.30, 0.60), // e: same cost as d, worse
    p('f', 0.50, 0.70), // f: same pass@1 as d, dearer
    p('g', 0.02, 0.10), p('h', 0.02, 0.10), // equal points: both kept
    p('i', 1.00, 0.90),
  ];
  assert.deepEqual(paretoFrontier(points).map((q) => q.name), ['g', 'h', 'b', 'a', 'd', 'i']);
  assert.ok(dominates(points[0], points[2]));
  assert.ok(!dominates(points[6], points[7]), 'an equal point does not dominate');
  assert.ok(!dominates(points[1], points[0]), 'cheaper but worse does not dominate');
  assert.deepEqual(paretoFrontier([]), []);
  // A cost the agent reported itself competes with no metered one: cheaper
  // and better than every point, it is still not on the frontier.
  const reported = { name: 'self', x: 0.001, y: 0.95, selfReported: true };
  assert.deepEqual(paretoFrontier([...points, reported]).map((q) => q.name), ['g', 'h', 'b', 'a', 'd', 'i']);
  assert.deepEqual(paretoFrontier([p('x', 0, 0)]).map((q) => q.name), ['x']);
  // Every point left out is dominated by a frontier point; no frontier point is.
  const front = paretoFrontier(points);
  for (const q of points) {
    const dominated = points.some((o) => dominates(o, q));
    assert.equal(front.includes(q), !dominated, `${q.name} on the frontier iff not dominated`);
  }
});

test('costPoints takes rows with a cost and pass@1, with the interval and the estimated mark', async () => {
  const { costPoints } = await import('../dist/js/frontier.js');
  const rows = [
    { label: 'm (codex)', pass1: { value: 0.5, ci_low: 0.3, ci_high: 0.7 }, cost_per_task: { value: 0.12 }, cost_estimated: true, run_id: 'r1' },
    { harness: 'oracle', pass1: { value: 1, ci_low: null, ci_high: null }, cost_per_task: null, run_id: 'r2' },
    { model: 'x', harness: 'nop', pass1: { value: 0 }, cost_per_task: { value: 0 }, run_id: 'r3' },
    { label: 'no pass', pass1: null, cost_per_task: { value: 1 } },
    { label: 'heuristic (command)', pass1: { value: 0.6 }, cost_per_task: { value: 0.006 }, usage_self_reported: true, run_id: 'r4' },
  ];
  assert.deepEqual(costPoints(rows), [
    { label: 'm (codex)', x: 0.12, y: 0.5, lo: 0.3, hi: 0.7, estimated: true, selfReported: false, runId: 'r1' },
    { label: 'x (nop)', x: 0, y: 0, lo: null, hi: null, estimated: false, selfReported: false, runId: 'r3' },
    { label: 'heuristic (command)', x: 0.006, y: 0.6, lo: null, hi: null, estimated: false, selfReported: true, runId: 'r4' },
  ]);
  assert.deepEqual(costPoints(undefined), []);
});

test('costScale: linear from $0 with nice ticks, logarithmic over decades for a wide spread', async () => {
  const { costScale } = await import('../dist/js/frontier.js');
  const lin = costScale([0.012, 0.05, 0.11]);
  assert.equal(lin.log, false);
  assert.deepEqual(lin.ticks, [0, 0.05, 0.1, 0.15]);
  assert.equal(lin.at(0), 0);
  assert.equal(lin.at(0.15), 1);
  assert.deepEqual(costScale([3, 7]).ticks, [0, 2, 4, 6, 8]);
  assert.deepEqual(costScale([0]).ticks, [0], 'every cost $0');
  assert.deepEqual(costScale([0.2]).ticks, [0, 0.1, 0.2, 0.3], 'one cost: from $0, off the edge');
  // Close costs far from $0: the axis starts below the cheapest.
  const close = costScale([0.056, 0.0625, 0.074]);
  assert.deepEqual(close.ticks, [0.055, 0.06, 0.065, 0.07, 0.075]);
  assert.ok(close.at(0.056) > 0 && close.at(0.074) < 1, 'no point on the edge');
  const log = costScale([0.002, 0.5, 3]);
  assert.equal(log.log, true);
  assert.deepEqual(log.ticks, [0.001, 0.01, 0.1, 1, 10]);
  assert.equal(log.at(0.001), 0);
  assert.ok(Math.abs(log.at(0.1) - 0.5) < 1e-12);
  assert.equal(costScale([0, 0.5, 3]).log, false, 'a $0 cost keeps the linear scale');
});

test('placeLabels keeps labels inside the plot, off each other and off the points', async () => {
  const { placeLabels } = await import('../dist/js/frontier.js');
  const bounds = { left: 0, right: 300, top: 0, bottom: 200 };
  const points = [{ x: 100, y: 100 }, { x: 290, y: 50 }, { x: 130, y: 152 }, { x: 150, y: 142 }, { x: 100, y: 142 }];
  const got = placeLabels([
    { x: 100, y: 100, width: 60 }, // right-above
    { x: 100, y: 100, width: 60 }, // right-above is taken by the first: left-above
    { x: 290, y: 50, width: 60 }, // no room on the right: left
    { x: 130, y: 152, width: 60 }, // every spot above covers a point: no label
    { x: 200, y: 190, width: 30 }, // left and right covered by labels of points beside it: centred
  ], bounds, [...points, { x: 200, y: 190 }, { x: 185, y: 190 }, { x: 215, y: 190 }]);
  assert.deepEqual(got, [{ x: 108, y: 93, anchor: 'start' }, { x: 92, y: 93, anchor: 'end' }, { x: 282, y: 43, anchor: 'end' },
    null, { x: 200, y: 180, anchor: 'middle' }]);
  // A crowd: what finds no free spot is left out, never drawn over another.
  const crowd = placeLabels(Array.from({ length: 6 }, () => ({ x: 150, y: 100, width: 120 })), bounds, [{ x: 150, y: 100 }]);
  assert.equal(crowd.filter(Boolean).length, 2);
  assert.deepEqual(crowd.slice(2), [null, null, null, null]);
});

test('shortLabel drops the harness, then the provider, then the end of the name', async () => {
  const { shortLabel } = await import('../dist/js/frontier.js');
  assert.equal(shortLabel('gpt-5.2 (codex)', 28), 'gpt-5.2 (codex)');
  assert.equal(shortLabel('openai/gpt-5.2 (claude-code)', 20), 'openai/gpt-5.2');
  assert.equal(shortLabel('provider/model-002 (harness-2)', 12), 'model-002');
  assert.equal(shortLabel('acme/a-very-long-model-name (x)', 10), 'a-very-lo…');
  assert.equal(shortLabel('oracle', 3), 'or…');
});

test('taskCheckText labels a flagged task and says why; other verdicts get no badge', () => {
  const broken = taskCheckText('broken');
  assert.equal(broken.label, 'env: broken');
  assert.equal(broken.tone, 'bad');
  assert.match(broken.title, /oracle .* does not pass/);
  assert.match(broken.title, /environment's fault, not the agent's/);
  const trivial = taskCheckText('trivial', 'nop (doing nothing) passes');
  assert.equal(trivial.label, 'env: trivial');
  assert.equal(trivial.tone, 'warn');
  assert.match(trivial.title, /says nothing of the agent.*\(nop \(doing nothing\) passes\)$/);
  for (const v of ['ok', 'unavailable', '', undefined, null]) assert.equal(taskCheckText(v), null, String(v));
});

test('parseLogins reads host=SECRET pairs for registry_credentials', () => {
  assert.deepEqual(parseLogins(''), { list: [] });
  assert.deepEqual(parseLogins(' ghcr.io=GHCR_PULL , 127.0.0.1:5000 = LOCAL '),
    { list: [{ registry: 'ghcr.io', secret: 'GHCR_PULL' }, { registry: '127.0.0.1:5000', secret: 'LOCAL' }] });
  for (const bad of ['ghcr.io', '=GHCR_PULL', 'ghcr.io=']) {
    assert.match(parseLogins(bad).error, /not host=SECRET/);
  }
});
