// Browser test of the gauntlet console against a real `gauntlet local`
// platform. console/browser_test.go starts the platform, seeds a finished
// run and runs this file with node's test runner:
//
//   GAUNTLET_URL=http://127.0.0.1:PORT GAUNTLET_TOKEN=gt_… GAUNTLET_RUN_ID=… \
//   GAUNTLET_SCREENSHOTS=/tmp/shots node --test console/test/console.test.mjs
//
// It drives Debian's chromium through npm playwright-core (no browser
// download), takes a screenshot of every page into GAUNTLET_SCREENSHOTS and
// asserts what each page shows. The tests run in order and share one page.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { chromium } from 'playwright-core';

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set; run this file through console/browser_test.go`);
  return v;
};
const BASE = env('GAUNTLET_URL');
const TOKEN = env('GAUNTLET_TOKEN');
const RUN_ID = env('GAUNTLET_RUN_ID');
const JUDGE_RUN_ID = env('GAUNTLET_JUDGE_RUN_ID');
const STEPS_RUN_ID = env('GAUNTLET_STEPS_RUN_ID');
const SHOTS = env('GAUNTLET_SCREENSHOTS');
const COST_BENCH = env('GAUNTLET_COST_BENCH');
const UNSTARTED_RUN_ID = env('GAUNTLET_UNSTARTED_RUN_ID');
const FLAGGED_BENCH = env('GAUNTLET_FLAGGED_BENCH');
const FLAGGED_TASK = env('GAUNTLET_FLAGGED_TASK');
const CHROMIUM = process.env.GAUNTLET_CHROMIUM || '/usr/bin/chromium';
// Every wait is for a state (an element, a URL, an event), never for a
// time; WAIT only bounds how long one state may take to come: two minutes
// (a loaded machine slows the test down instead of failing it), or less when
// the Go test's deadline (GAUNTLET_WAIT_MS) is nearer, so a state that never
// comes fails naming the wait instead of the whole test being killed.
const WAIT = Math.min(Number(process.env.GAUNTLET_WAIT_MS) || 120_000, 120_000);

let browser;
let page;
const problems = []; // console errors, CSP violations, uncaught exceptions

before(async () => {
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: 'light' });
  context.setDefaultTimeout(WAIT);
  context.setDefaultNavigationTimeout(WAIT);
  page = await context.newPage();
  page.on('console', (m) => {
    // The browser logs every 4xx answer as a failed resource; the tests
    // provoke 401, 404 and 422 on purpose and check what the page shows.
    if (m.type() === 'error' && !/Failed to load resource: the server responded with a status of 4\d\d/.test(m.text())) {
      problems.push(`console: ${m.text()}`);
    }
  });
  page.on('pageerror', (err) => problems.push(`uncaught: ${err.message}`));
});

after(async () => {
  await browser?.close();
});

async function shot(name) {
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

function noProblems() {
  assert.deepEqual(problems.splice(0), [], 'the page logged errors');
}

test('an unauthenticated visit goes to sign-in, which rejects a wrong token', async () => {
  await page.goto(`${BASE}/benchmarks`);
  await page.waitForURL(/\/signin\?next=%2Fbenchmarks/);
  await assert.doesNotReject(page.locator('#token').waitFor());
  await page.fill('#token', 'gt_not-a-real-token');
  await page.click('button[type="submit"]');
  const alert = page.locator('[role="alert"]');
  await alert.waitFor();
  assert.match(await alert.innerText(), /Token rejected/);
  assert.match(await alert.innerText(), /not valid/);
  await shot('01-signin-rejected');
});

test('signing in with the token shows the benchmarks with the workspace and billing', async () => {
  await page.fill('#token', TOKEN);
  await page.click('button[type="submit"]');
  await page.waitForURL(`${BASE}/benchmarks`);
  const row = page.locator('#benchmark-list tr[data-key="demo-bench"]');
  await row.waitFor();
  const text = await row.innerText();
  assert.match(text, /demo-bench/);
  assert.match(text, /managed/);
  assert.match(text, /ready/);
  assert.match(text, /cannot be removed/);
  const cells = await row.locator('td').allInnerTexts();
  assert.equal(cells[3], '15', 'task count');
  assert.equal(cells[4], '4', 'category count');
  assert.match(cells[5], /finished/, 'last run');
  await page.locator('#ws-name').waitFor();
  assert.match(await page.locator('#billing').innerText(), /billing: active/);
  assert.equal(await page.evaluate(() => localStorage.getItem('gauntlet.token')), TOKEN);
  await shot('02-benchmarks');
  noProblems();
});

test('adding a registry dataset syncs it; a harbor benchmark can be removed', async () => {
  await page.fill('#add-source', 'no-such-dataset');
  await page.click('form[aria-label="Add a benchmark"] button[type="submit"]');
  const alert = page.locator('.page-head + div [role="alert"]');
  await alert.waitFor();
  assert.match(await alert.innerText(), /no-such-dataset/);
  assert.equal(await page.locator('#add-source').getAttribute('aria-invalid'), 'true');

  // A package reference that breaks Harbor's rules is refused naming the field.
  await page.fill('#add-source', 'org/name@Not_A_Tag');
  await page.click('form[aria-label="Add a benchmark"] button[type="submit"]');
  await page.waitForFunction(() => /neither tag, revision nor digest/.test(document.querySelector('.page-head + div [role="alert"]')?.innerText || ''), null, { timeout: WAIT });

  await page.fill('#add-source', 'demo-bench@1.0');
  await page.click('form[aria-label="Add a benchmark"] button[type="submit"]');
  const row = page.locator('#benchmark-list tr[data-key="demo-bench-1-0"]');
  await row.waitFor();
  assert.match(await row.innerText(), /harbor/);
  // The list follows the sync until the benchmark is ready.
  await page.waitForFunction(() => document.querySelector('#benchmark-list tr[data-key="demo-bench-1-0"] [data-status="ready"]'), null, { timeout: WAIT });
  assert.equal((await row.locator('td').allInnerTexts())[3], '15');
  await shot('02b-benchmark-added');

  await row.locator('button', { hasText: 'Remove' }).click();
  const dialog = page.locator('dialog[open]');
  await dialog.waitFor();
  assert.match(await dialog.innerText(), /Remove demo-bench/);
  await dialog.locator('button[value="ok"]').click();
  await row.waitFor({ state: 'detached' });
  noProblems();
});

test('the demo-bench page ranks the run agents with intervals, ties and a comparison on hover', async () => {
  await page.click('#benchmark-list a[href="/benchmarks/demo-bench"]');
  await page.waitForURL(`${BASE}/benchmarks/demo-bench`);
  const rows = page.locator('#leaderboard-body tbody tr');
  await rows.first().waitFor();
  // One list: the parity run's two entrants and the full-list entrant.
  assert.equal(await rows.count(), 3);
  assert.equal(await page.locator('#leaderboard-body table').count(), 1, 'one table, not one per task set');
  const first = await rows.nth(0).locator('td').allInnerTexts();
  const second = await rows.nth(1).locator('td').allInnerTexts();
  const third = await rows.nth(2).locator('td').allInnerTexts();
  assert.equal(first[0], '1');
  assert.equal(first[1], 'oracle parity', 'the task set is a badge on the row');
  // Wilson of 8/8 tasks (pkg/stats/testdata/reference.py): an entrant
  // that passes everything keeps an interval with width.
  assert.match(first[2], /^100\.0% \(67\.6–100\.0\)$/, 'pass@1 with its interval');
  assert.equal(second[1], 'nop parity');
  assert.match(second[2], /^0\.0%/);
  assert.equal(second[0], '2', 'nop is significantly worse than oracle: no tie');
  assert.equal(third[1], 'nop-full-list (nop)', 'the full-list row has no task-set badge');
  assert.equal(third[0], '2', 'ranked by its number');
  assert.match(first[4], /^100\.0%/, 'pass^k beside pass@k');
  assert.match(first[first.length - 1], new RegExp(RUN_ID), 'the run behind the row');
  assert.equal(await page.locator('#cost-plot').count(), 0, 'no entrant reports a cost: no cost plot');
  // The full-list row is another measurement: its comparison says it was not tested.
  await rows.nth(2).hover();
  await page.locator('#tooltip:has-text("Not tested against the best")').waitFor();
  await page.mouse.move(0, 0);

  await rows.nth(1).hover();
  const tip = page.locator('#tooltip');
  await tip.waitFor({ state: 'visible' });
  // The comparison sits beside the table, never over its rows.
  const tipBox = await tip.boundingBox();
  const tableBox = await page.locator('#leaderboard-body table').boundingBox();
  const overlaps = tipBox.x < tableBox.x + tableBox.width && tipBox.x + tipBox.width > tableBox.x
    && tipBox.y < tableBox.y + tableBox.height && tipBox.y + tipBox.height > tableBox.y;
  assert.ok(!overlaps, `tooltip ${JSON.stringify(tipBox)} overlaps the table ${JSON.stringify(tableBox)}`);
  const tipText = await tip.innerText();
  assert.match(tipText, /^nop vs oracle\n/);
  assert.match(tipText, /Difference\s+−100\.0 pp/);
  assert.match(tipText, /p-value/);
  assert.match(tipText, /adjusted p/, 'the Holm-adjusted p is stated');
  assert.match(tipText, /How gauntlet scores/);
  await shot('03-leaderboard-hover');

  // Keyboard users get the same comparison on focus.
  await page.mouse.move(0, 0);
  await rows.nth(1).focus();
  await tip.waitFor({ state: 'visible' });

  await page.click('button[data-metric="time"]');
  assert.equal(await page.locator('button[data-metric="time"]').getAttribute('aria-pressed'), 'true');
  await page.waitForURL(/metric=time/);
  await rows.first().waitFor();
  assert.equal(await rows.count(), 3);
  // A metric's column header re-ranks too, with the same URL parameter.
  await page.click('#leaderboard-body th button[data-sort="pass@k"]');
  await page.waitForURL(/metric=pass%40k|metric=pass@k/);
  await page.locator('#leaderboard-body th button[data-sort="pass@k"][aria-pressed="true"]').waitFor();
  assert.equal(await page.locator('button[data-metric="pass@k"]').getAttribute('aria-pressed'), 'true');
  // pass^k ranks too.
  await page.click('button[data-metric="pass^k"]');
  await page.waitForURL(/metric=pass%5Ek|metric=pass\^k/);
  await page.locator('#leaderboard-body th button[data-sort="pass^k"][aria-pressed="true"]').waitFor();
  // Clicking a row opens the run behind its score.
  await page.locator('#leaderboard-body tbody tr').first().click();
  await page.waitForURL(`${BASE}/benchmarks/runs/${RUN_ID}`);
  await page.goBack();
  await page.waitForURL(/\/benchmarks\/demo-bench/);

  // The header: the task-count badge, the source reference and the actions menu.
  assert.equal(await page.locator('#task-count').innerText(), '15 tasks');
  assert.ok(await page.locator('#source-ref').count() === 1, 'the source reference is a copy button');
  // The Benchmark runs table under the leaderboard lists the seed run, without Stop once finished.
  const runRow = page.locator(`#benchmark-runs tr[data-id="${RUN_ID}"]`);
  await runRow.waitFor();
  assert.match(await runRow.innerText(), /finished/);
  assert.equal(await runRow.locator('button[data-stop]').count(), 0);

  const tasks = page.locator('#tasks tbody tr');
  assert.equal(await tasks.count(), 15);
  assert.match(await page.locator('#task-sets').innerText(), /parity[\s\S]*recommended/);
  assert.match(await page.locator('#requirements').innerText(), /reward ≥ 1/);
  await shot('04-benchmark-manifest');
  noProblems();
});

test('the cost vs pass@1 plot shows every entrant with its interval and the Pareto frontier', async () => {
  await page.goto(`${BASE}/benchmarks/${COST_BENCH}`);
  const plot = page.locator('#cost-plot svg');
  await plot.waitFor();
  // What the plot must show, from the API's rows through the frontier module.
  const want = await page.evaluate(async ([key, token]) => {
    const { costPoints, paretoFrontier } = await import('/js/frontier.js');
    const res = await fetch(`/v1/benchmarks/${encodeURIComponent(key)}/leaderboard`, { headers: { Authorization: `Bearer ${token}` } });
    const points = costPoints((await res.json()).rows);
    return { points: points.length, frontier: paretoFrontier(points).map((p) => p.label), estimated: points.filter((p) => p.estimated).map((p) => p.label) };
  }, [COST_BENCH, TOKEN]);
  assert.equal(want.points, 6, 'six entrants with a cost');
  assert.ok(want.frontier.length >= 1, `frontier ${want.frontier}`);
  assert.equal(want.estimated.length, 1, 'one entrant\'s cost is estimated');
  // Five metered entrants are circles; the one whose agent reported its
  // own cost is a square (asserted in the layout test below).
  assert.equal(await plot.locator('.points circle').count(), 5);
  assert.equal(await plot.locator('.points rect.self-reported').count(), 1);
  assert.equal(await plot.locator('.error-bars path').count(), 6, 'each point has its pass@1 interval');
  assert.deepEqual(await plot.locator('.points circle.front').evaluateAll((cs) => cs.map((c) => c.dataset.label)).then((l) => l.sort()),
    [...want.frontier].sort(), 'the frontier points are the ones no entrant dominates');
  assert.deepEqual(await plot.locator('.points circle.hollow').evaluateAll((cs) => cs.map((c) => c.dataset.label)), want.estimated);
  assert.equal(await plot.locator('.frontier path').count(), 1);
  // Accessible: a titled, described image; each point has its words.
  assert.equal(await plot.getAttribute('role'), 'img');
  assert.match(await plot.locator('title#cost-plot-title').textContent(), /Cost per task vs pass@1 of 6 entrants/);
  const desc = await plot.locator('desc').textContent();
  assert.match(desc, /per task, pass@1 \d+\.\d% \(95% CI/);
  assert.match(desc, /est\. per task/, 'the estimated cost says so');
  assert.match(desc, /on the Pareto frontier/);
  // The table marks the same estimated cost the way the run page does.
  const estRow = page.locator('#leaderboard-body tbody tr', { hasText: want.estimated[0] });
  // Columns: rank, agent, pass@1, pass@k, pass^k, cost/task.
  assert.match(await estRow.locator('td').nth(5).innerText(), /est\./);
  await shot('04b-cost-plot');
  noProblems();
});

test('the New Run form builds a multi-agent config that is the TOML editor\'s, with a running summary', async () => {
  await page.goto(`${BASE}/runs/new?benchmark=demo-bench`);
  await page.locator('#tasks-all').waitFor();
  await page.locator('#summary-tasks:has-text("15")').waitFor();
  await page.check('#tasks-task_set');
  await page.selectOption('#task-set', 'parity');
  await page.locator('#summary-tasks:has-text("8")').waitFor();

  await page.click('#tab-agents');
  await page.selectOption('#agent-0-harness', 'codex');
  await page.fill('#agent-0-model', 'openai/gpt-5.2');
  await page.click('#add-agent');
  await page.selectOption('#agent-1-harness', 'terminus-2');
  await page.selectOption('#agent-1-model-type', 'hosted');
  await page.fill('#agent-1-base-model', 'Qwen/Qwen3-8B');
  await page.fill('#agent-1-lora', 'step-400');
  assert.equal(await page.locator('#agent-1-model').count(), 0, 'a hosted model has no model field');
  assert.equal(await page.locator('#agent-1-key').count(), 0, 'nor a key: the platform\'s operator serves it');
  // A model-free harness (nop) runs without a model: no model fields, and
  // its model type says so.
  await page.click('#add-agent');
  await page.selectOption('#agent-2-harness', 'nop');
  assert.equal(await page.locator('#agent-2-model-type').inputValue(), '');
  assert.equal(await page.locator('#agent-2-model').count(), 0, 'a model-free agent has no model field');
  assert.deepEqual(await page.locator('#agent-1-model-type option').evaluateAll((os) => os.map((o) => o.value)),
    ['provider', 'endpoint', 'hosted'], 'a harness that needs a model has no "None"');
  assert.equal(await page.locator('input[type="password"]').count(), 0, 'no field takes a key value');
  await page.locator('#summary-agents:has-text("3")').waitFor();

  await page.click('#tab-settings');
  await page.fill('#exec-attempts_per_task', '2');
  await page.locator('#summary-attempts:has-text("48")').waitFor(); // 8 tasks × 3 agents × 2 attempts
  await shot('05-new-run-form');

  await page.click('#tab-toml');
  const toml = await page.locator('#config').inputValue();
  assert.equal(toml, [
    '[experiment]', 'benchmark = "demo-bench"', '', '[tasks]', 'task_set = "parity"', '',
    '[execution]', 'attempts_per_task = 2', 'max_concurrent_attempts = 4', 'timeout_multiplier = 1.0', 'max_retries = 0', '',
    '[[agents]]', 'harness = "codex"', '', '[agents.model]', 'type = "provider"', 'model = "openai/gpt-5.2"', '',
    '[[agents]]', 'harness = "terminus-2"', '', '[agents.model]', 'type = "hosted"', 'base_model = "Qwen/Qwen3-8B"', 'lora_model_name = "step-400"', '',
    '[[agents]]', 'harness = "nop"', '',
  ].join('\n'));
  // An edit in the TOML shows in the form, and a secret the workspace lacks is flagged with a link to create it.
  await page.locator('#config').fill(toml.replace('model = "openai/gpt-5.2"', 'model = "openai/gpt-5.2"\napi_key_secret = "FORM_MISSING_KEY"'));
  await page.locator('#missing-secrets:has-text("FORM_MISSING_KEY")').waitFor();
  assert.equal(await page.locator('#missing-secrets a').getAttribute('href'), '/secrets?new=FORM_MISSING_KEY');
  await page.click('#tab-agents');
  assert.equal(await page.locator('#agent-0-key').inputValue(), 'FORM_MISSING_KEY');
  // Bad TOML keeps the form closed until it is fixed, saying where.
  await page.click('#tab-toml');
  await page.locator('#config').fill('[execution]\nattempts_per_task = = 3\n');
  await page.locator('#toml-error:has-text("line 2")').waitFor();
  await page.click('#tab-tasks');
  assert.equal(await page.locator('#tab-toml').getAttribute('aria-selected'), 'true');
  await page.locator('#config').fill(toml);
  noProblems();
});

test('the submit page validates a config and shows each field error next to its key', async () => {
  await page.click('nav a[href="/runs/new"]');
  await page.waitForURL(`${BASE}/runs/new`);
  await page.click('#tab-toml');
  const editor = page.locator('#config');
  assert.match(await editor.inputValue(), /\[experiment\]/, 'prefilled from an example');
  const invalid = [
    '[experiment]',
    'benchmark = "demo-bench"',
    '',
    '[execution]',
    'attempts_per_task = 0',
    'max_retry = 1',
    '',
    '[[agents]]',
    'harness = "oracle"',
    '',
  ].join('\n');
  await editor.fill(invalid);
  await page.click('#validate');
  const list = page.locator('#config-problems');
  await list.waitFor();
  const items = await list.locator('li').allInnerTexts();
  const attempts = items.find((t) => t.includes('execution.attempts_per_task'));
  assert.ok(attempts, `a problem names execution.attempts_per_task: ${items.join(' | ')}`);
  assert.match(attempts, /line 5/);
  const unknown = items.find((t) => t.includes('execution.max_retry'));
  assert.ok(unknown, `a problem names the unknown key: ${items.join(' | ')}`);
  assert.match(unknown, /line 6/);
  assert.match(await page.locator('#validation-failed').innerText(), /problem/);
  const marked = await page.locator('.editor .gutter .has-error').allInnerTexts();
  assert.deepEqual(marked, ['5', '6'], 'the gutter marks the lines of both keys');
  await shot('05b-submit-invalid');

  await editor.fill([
    '[experiment]', 'benchmark = "demo-bench"', '', '[tasks]', 'task_set = "smoke"', '',
    '[[agents]]', 'harness = "codex"', '[agents.model]', 'type = "provider"', 'model = "openai/gpt-5.2"',
    'api_key_secret = "CONSOLE_TEST_KEY"', '',
  ].join('\n'));
  // The summary flags the missing record as soon as the config names it.
  await page.locator('#missing-secrets:has-text("CONSOLE_TEST_KEY")').waitFor();
  await page.click('#validate');
  await page.locator('#validation #resolved-tasks:has-text("3")').waitFor();
  await shot('06-submit-missing-secret');
  noProblems();
});

test('the run page shows status, metrics, charts, results with a drawer, logs and config', async () => {
  await page.goto(`${BASE}/runs/${RUN_ID}`);
  await page.waitForURL(`${BASE}/benchmarks/runs/${RUN_ID}`); // the old address redirects
  await page.locator('#run-name').waitFor();
  assert.match(await page.locator('.page-head .sub').first().innerText(), /finished/);
  assert.equal(await page.locator('#stop-run').count(), 0, 'no Stop button on a finished run');
  const agents = page.locator('section[aria-labelledby="agents-title"] tbody tr');
  assert.equal(await agents.count(), 2);
  assert.match(await agents.nth(0).innerText(), /^oracle\t[\s\S]*100\.0%/);
  // Every column sorts: pass@1 best first, then reversed.
  await page.click('#agents-table th button[data-sort="pass1"]');
  await page.locator('#agents-table th[aria-sort="descending"] button[data-sort="pass1"]').waitFor();
  assert.match(await agents.nth(0).innerText(), /^oracle/);
  await page.click('#agents-table th button[data-sort="pass1"]');
  await page.locator('#agents-table th[aria-sort="ascending"] button[data-sort="pass1"]').waitFor();
  assert.match(await agents.nth(0).innerText(), /^nop/);
  await page.click('#agents-table th button[data-sort="agent"]');
  await page.locator('#agents-table th[aria-sort="ascending"] button[data-sort="agent"]').waitFor();
  assert.match(await agents.nth(0).innerText(), /^nop/, 'by name: nop before oracle');
  assert.equal(await page.locator('#metrics-partial').count(), 0, 'a finished run\'s metrics are not partial');
  assert.equal(await page.locator('#pass-at-k svg circle').count(), 4, 'two agents × k = 1..2');
  assert.equal(await page.locator('#pass-hat-k svg circle').count(), 4, 'the pass^k curve too');
  // oracle (1.0) vs nop (0.0): ψ = 1, δ = 1, so n = z(0.975)² = 3.84 → 4
  // pairs, 2 tasks at the seed's 2 attempts (Connor's formula by hand).
  assert.equal(await page.locator('#power-tasks').innerText(), '2 tasks × 2 attempts');
  assert.match(await page.locator('#power').innerText(), /gauntlet plan-size --pass-a 1 --pass-b 0 --attempts 2/);
  assert.ok(await page.locator('#category-bars .bar-line').count() >= 2);
  const bar = page.locator('.run-progress [role="progressbar"]');
  assert.equal(await bar.getAttribute('aria-valuenow'), await bar.getAttribute('aria-valuemax'));
  await shot('07-run-overview');

  await page.click('#tab-results');
  const results = page.locator('#results-list tbody tr');
  await results.first().waitFor();
  assert.equal(await results.count(), 32, '2 agents × 8 parity tasks × 2 attempts');
  assert.equal(await page.locator('#results-list [data-task-check]').count(), 0, 'no check flagged a demo-bench task');
  // The agent filter takes one or more agents: one ticked halves the list,
  // both ticked is every row again.
  await page.check('#results-agent-0');
  await page.waitForURL(/agent=0(&|$)/);
  await page.waitForFunction(() => document.querySelectorAll('#results-list tbody tr').length === 16);
  await page.check('#results-agent-1');
  await page.waitForURL(/agent=0%2C1|agent=0,1/);
  await page.waitForFunction(() => document.querySelectorAll('#results-list tbody tr').length === 32);
  await page.uncheck('#results-agent-0');
  await page.uncheck('#results-agent-1');
  await page.waitForFunction(() => !/agent=/.test(window.location.search) && document.querySelectorAll('#results-list tbody tr').length === 32);
  await page.selectOption('#results-outcome', 'failed');
  await page.waitForURL(/outcome=failed/);
  await page.waitForFunction(() => [...document.querySelectorAll('#results-list tbody tr')].every((r) => r.dataset.outcome === 'failed')
    && document.querySelectorAll('#results-list tbody tr').length === 16);
  await results.first().click();
  const drawer = page.locator('#result-drawer');
  await drawer.waitFor();
  await page.locator('#result-reward').waitFor();
  assert.match(await page.locator('#result-reward').innerText(), /^0/);
  assert.match(await drawer.innerText(), /Graded output/);
  assert.ok(await page.locator('#artifact-list li').count() >= 1, 'artifact download links');
  assert.match(await page.locator('#no-trajectory').innerText(), /This agent stored no trajectory/, 'the nop/oracle store none');
  // The conversation view of a stored ATIF trajectory: each message, each
  // tool call a closed fold holding its arguments and the output paired by id.
  const conv = await page.evaluate(async () => {
    const { conversation } = await import('/js/conversation.js');
    const node = conversation({ steps: [
      { step_id: 1, source: 'user', message: 'list the files' },
      { step_id: 2, source: 'agent', message: 'running ls', tool_calls: [{ tool_call_id: 'c1', function_name: 'bash', arguments: { cmd: 'ls' } }],
        observation: { results: [{ source_call_id: 'c1', content: 'a.txt' }] }, metrics: { prompt_tokens: 10, completion_tokens: 3 } },
    ] });
    const calls = node.querySelectorAll('details.tool-call');
    return { messages: node.querySelectorAll('li.message').length, calls: calls.length, open: calls[0]?.open,
      summary: calls[0]?.querySelector('summary')?.textContent, output: calls[0]?.querySelector('.tool-output')?.textContent,
      text: node.textContent };
  });
  assert.deepEqual([conv.messages, conv.calls, conv.open, conv.summary, conv.output], [2, 1, false, 'tool call: bash', 'a.txt']);
  assert.match(conv.text, /list the files/);
  assert.match(conv.text, /"cmd": "ls"/);
  await shot('08-run-result-drawer');
  await page.keyboard.press('Escape');
  await drawer.waitFor({ state: 'detached' });

  await page.click('#tab-logs');
  const lines = page.locator('#run-logs .line');
  await lines.first().waitFor();
  assert.ok(await lines.count() > 5);
  assert.ok(await page.locator('#run-logs .lvl.info').count() > 0, 'levels are marked');
  await shot('09-run-logs');

  await page.click('#tab-config');
  await page.locator('#run-config').waitFor();
  const config = await page.locator('#run-config').innerText();
  assert.match(config, /\[experiment\]/);
  assert.match(config, /demo-bench/);
  await shot('10-run-config');

  await page.click('#download-menu');
  assert.equal(await page.locator('.menu [role="menuitem"]').count(), 5);
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.click('.menu [role="menuitem"]:has-text("Summary")'),
  ]);
  assert.match(download.suggestedFilename(), /\.zip$/);
  noProblems();
});

test('a run page compares an agent with the best, task by task, linking to the attempts', async () => {
  await page.goto(`${BASE}/benchmarks/runs/${RUN_ID}`);
  await page.locator('#compare-agent').waitFor();
  await page.selectOption('#compare-agent', { label: 'nop' });
  await page.click('#compare-best');
  await page.waitForURL(/\/compare\?a=/);
  const regressions = page.locator('#compare-regressions tbody tr');
  await regressions.first().waitFor();
  // The best is the seed's oracle: nop fails all 8 parity tasks it solves.
  assert.equal(await regressions.count(), 8);
  assert.equal(await page.locator('#compare-improvements tbody tr').count(), 0);
  assert.match(await page.locator('#compare-body').innerText(), /−100\.0 pp/);
  const href = await regressions.first().locator('a').last().getAttribute('href');
  assert.match(href, new RegExp(`/benchmarks/runs/${RUN_ID}\\?tab=results&agent=1&task=`), 'a regression links to the candidate\'s attempts');
  await shot('10c-compare');
  noProblems();
});

test('a judge-graded run shows the judge\'s use apart from the agents\', in the totals and the drawer', async () => {
  await page.goto(`${BASE}/benchmarks/runs/${JUDGE_RUN_ID}`);
  const stat = page.locator('#stat-judge');
  await stat.waitFor();
  const text = await stat.innerText();
  assert.match(text, /Judge/);
  assert.match(text, /judgemock\/gpt-5 · 1 call · in 410 · out 12/);
  assert.match(text, /\$0\.0002 est\./, 'the judge\'s cost: 410 in (400 cached) and 12 out at gpt-5 list prices');
  assert.match(await page.locator('.stat:has-text("LLM cost")').innerText(), /agents only/);
  await page.click('#tab-results');
  const row = page.locator('#results-list tbody tr');
  await row.first().waitFor();
  await row.first().click();
  await page.locator('#result-judge-tokens').waitFor();
  assert.match(await page.locator('#result-judge').innerText(), /judgemock\/gpt-5 · 1 call$/);
  assert.equal(await page.locator('#result-judge-tokens').innerText(), 'in 410 · out 12 · cache 400');
  assert.match(await page.locator('#result-reward').innerText(), /^1/, 'the judge said PASS');
  assert.ok(!(await page.content()).includes('sk-console-judge-REAL'), 'the judge key never shows');
  await shot('10b-judge-result');
  await page.keyboard.press('Escape');
  await page.locator('#result-drawer').waitFor({ state: 'detached' });
  noProblems();
});

test('a multi-step attempt shows its steps in the drawer: rewards, times, each step\'s output', async () => {
  await page.goto(`${BASE}/benchmarks/runs/${STEPS_RUN_ID}`);
  await page.click('#tab-results');
  const rows = page.locator('#results-list tbody tr');
  await rows.first().waitFor();
  assert.equal(await rows.count(), 2, 'the oracle and nop, one attempt each');
  const oracle = page.locator('#results-list tbody tr', { hasText: 'oracle' });
  await oracle.first().click();
  const steps = page.locator('#result-steps');
  await steps.waitFor();
  assert.match(await steps.locator('h3').innerText(), /Steps \(3 run\)/);
  const cells = await steps.locator('tbody tr td:first-child').allInnerTexts();
  assert.deepEqual(cells, ['scaffold', 'implement', 'document']);
  assert.deepEqual(await steps.locator('td.step-reward').allInnerTexts(), ['1', '1', '1']);
  await steps.locator('details.step-detail summary', { hasText: 'implement' }).click();
  assert.match(await steps.innerText(), /Graded output/);
  await shot('10c-multi-step-result');
  await page.keyboard.press('Escape');
  await page.locator('#result-drawer').waitFor({ state: 'detached' });
  const nop = page.locator('#results-list tbody tr', { hasText: 'nop' });
  await nop.first().click();
  await page.locator('#result-steps').waitFor();
  assert.deepEqual(await page.locator('#result-steps tbody tr td:first-child').allInnerTexts(), ['scaffold'], 'min_reward stops nop after the first step');
  await page.keyboard.press('Escape');
  await page.locator('#result-drawer').waitFor({ state: 'detached' });
  noProblems();
});

test('the runs list filters by status and links to the run', async () => {
  await page.goto(`${BASE}/runs`);
  const row = page.locator(`#run-list tr[data-id="${RUN_ID}"]`);
  await row.waitFor();
  assert.match(await row.innerText(), /finished/);
  await page.selectOption('#filter-status', 'running');
  await page.waitForURL(/status=running/);
  await page.locator('#run-list .empty').waitFor();
  await page.selectOption('#filter-status', 'finished');
  await row.waitFor();
  await shot('11-runs');
  noProblems();
});

test('a submitted run opens live, and Stop stops it', async () => {
  await page.click('nav a[href="/runs/new"]');
  await page.click('#tab-toml');
  await page.locator('#config').fill([
    '[experiment]', 'benchmark = "demo-bench"', '', '[tasks]', 'task_set = "parity"', '',
    '[execution]', 'attempts_per_task = 3', 'max_concurrent_attempts = 1', '',
    // Each attempt takes a few seconds, so the run is still going when Stop
    // is clicked (an oracle run of 24 attempts finishes in about 2 s).
    '[[agents]]', 'harness = "command"', 'command = "sleep 3"', '',
  ].join('\n'));
  await page.click('#submit');
  await page.waitForURL(/\/runs\/(?!new)[^/?]+$/);
  const stop = page.locator('#stop-run');
  await stop.waitFor();
  // Live polling moves the progress bar while the run goes.
  await page.waitForFunction(() => Number(document.querySelector('.run-progress [role="progressbar"]')?.getAttribute('aria-valuenow')) > 0,
    null, { timeout: WAIT });
  assert.equal(await page.locator('.run-progress [role="progressbar"]').getAttribute('aria-valuemax'), '24');
  // Live metrics are marked partial; the agent's duration ticks on in its
  // progress column.
  await page.locator('#metrics-partial').waitFor();
  const agentRow = page.locator('#agents-table tbody tr').first();
  const live = agentRow.locator('[data-agent-duration="live"] .duration');
  await live.waitFor();
  const before = await live.innerText();
  await page.waitForFunction((t) => {
    const el = document.querySelector('#agents-table [data-agent-duration="live"] .duration');
    return el && el.textContent !== t;
  }, before);
  await page.waitForFunction(() => /%/.test(document.querySelectorAll('#agents-table tbody tr td')[3]?.textContent || ''));
  // The download menu stays open across the live page's polls.
  const runPath = new URL(page.url()).pathname.split('/').pop();
  await page.click('#download-menu');
  await page.locator('.menu [role="menuitem"]').first().waitFor({ state: 'visible' });
  for (let polls = 0; polls < 2; polls++) {
    await page.waitForResponse((r) => new URL(r.url()).pathname === `/v1/runs/${runPath}`);
  }
  await page.waitForFunction(() => document.querySelector('.page-head .badge')?.dataset.status === 'running');
  assert.equal(await page.locator('#download-menu').getAttribute('aria-expanded'), 'true', 'the open download menu survived two polls');
  assert.ok(await page.locator('.menu [role="menuitem"]').first().isVisible(), 'its items still shown');
  await page.keyboard.press('Escape');
  await shot('12-run-live');
  await stop.click();
  await page.locator('dialog[open] button[value="ok"]').click();
  await page.waitForFunction(() => document.querySelector('.page-head .badge')?.dataset.status === 'stopped', null, { timeout: WAIT });
  assert.equal(await page.locator('#stop-run').count(), 0, 'no Stop button once stopped');
  const legend = await page.locator('.run-progress .legend').innerText();
  const cancelled = Number(/cancelled (\d+)/.exec(legend)?.[1]);
  assert.ok(cancelled > 0, `a stopped run cancels the attempts it did not start: ${legend}`);
  // The progress counts the attempts that ran, not the cancelled ones.
  const label = await page.locator('.run-progress .progress .label').innerText();
  const ran = Number(/^(\d+)\/24/.exec(label)?.[1]);
  assert.ok(ran < 24 && label.includes(`${cancelled} cancelled`), `progress of a stopped run: ${label}`);
  // The metrics of what ran stay (partial), and the agent shows its final duration.
  await page.waitForFunction(() => /^\d+\.\d%/.test(document.querySelectorAll('#agents-table tbody tr td')[3]?.textContent || ''));
  assert.match(await page.locator('#metrics-partial').getAttribute('title'), /stopped/);
  const final = page.locator('#agents-table [data-agent-duration="final"]');
  await final.waitFor();
  assert.match(await final.innerText(), /^took \d/);
  assert.equal(await page.locator('#agents-table [data-agent-duration="live"]').count(), 0);
  await shot('13-run-stopped');
  noProblems();
});

test('a run stopped while queued shows 0 of N ran and nothing to download', async () => {
  await page.goto(`${BASE}/benchmarks/runs/${UNSTARTED_RUN_ID}`);
  await page.locator('#run-name').waitFor();
  assert.equal(await page.locator('.page-head .badge').first().getAttribute('data-status'), 'stopped');
  const bar = page.locator('.run-progress [role="progressbar"]');
  assert.equal(await bar.getAttribute('aria-valuenow'), '0');
  assert.equal(await page.locator('.run-progress .progress .label').innerText(), '0/3 · 0% · 3 cancelled');
  assert.ok(await page.locator('#download-menu').isDisabled(), 'nothing to download');
  assert.match(await page.locator('#download-menu').getAttribute('title'), /no attempt ran/);
  assert.equal(await page.locator('#agents-table [data-agent-duration="none"]').innerText(), 'never started');
  assert.equal(await page.locator('#stat-duration .value').innerText(), '—');
  await shot('13b-run-stopped-while-queued');
  noProblems();
});

test('a check\'s flagged task shows with its reason and link, and its results carry the env badge', async () => {
  await page.goto(`${BASE}/benchmarks/${FLAGGED_BENCH}`);
  const row = page.locator(`#check-verdicts tr[data-task="${FLAGGED_TASK}"]`);
  await row.waitFor();
  assert.equal(await row.getAttribute('data-verdict'), 'broken');
  assert.match(await page.locator('#check-summary').innerText(), /1 task checked .*: 1 broken, 0 trivial/);
  assert.match(await row.innerText(), /env: broken[\s\S]*the oracle \(the task's own solution\) does not pass: failed/);
  // One check per version: this one is done, so the button says why it is off.
  assert.equal(await page.locator('#check-start').isDisabled(), true);
  assert.match(await page.locator('#check-start-why').innerText(), /was checked .*a new version gets a check of its own/);
  // The task's Check column shows the verdict too.
  assert.match(await page.locator('#tasks tbody tr', { hasText: FLAGGED_TASK }).first().innerText(), /broken/);

  await row.locator('a', { hasText: 'its attempts' }).click();
  await page.waitForURL(new RegExp(`/benchmarks/runs/${JUDGE_RUN_ID}\\?.*task=${FLAGGED_TASK}`));
  const results = page.locator('#results-list tbody tr');
  await results.first().waitFor();
  assert.equal(await results.count(), await page.locator('#results-list tbody tr [data-task-check="broken"]').count(), 'every result of the flagged task is marked');
  const badge = page.locator('#results-list [data-task-check="broken"]').first();
  assert.equal(await badge.innerText(), 'env: broken');
  assert.match(await badge.getAttribute('title'), /environment's fault, not the agent's/);
  await results.first().click();
  const drawer = page.locator('#result-drawer');
  await drawer.waitFor();
  try {
    await page.locator('#result-task-check').waitFor();
    assert.match(await page.locator('#result-task-check').innerText(), /env: broken[\s\S]*does not pass in its environment/);
    assert.equal(await page.locator('#result-drawer header [data-task-check="broken"]').count(), 1);
    await shot('13c-result-env-broken');
  } finally {
    await page.keyboard.press('Escape');
    await drawer.waitFor({ state: 'detached' });
  }
  noProblems();
});

test('secrets are set write-only and listed by name', async () => {
  await page.click('nav a[href="/secrets"]');
  await page.fill('#secret-name', 'CONSOLE_TEST_KEY');
  await page.fill('#secret-value', 'sk-console-test-value');
  await page.click('#secret-form button[type="submit"]');
  const row = page.locator('#secret-list tr[data-name="CONSOLE_TEST_KEY"]');
  await row.waitFor();
  assert.match(await row.innerText(), /workspace/);
  assert.equal(await page.locator('#secret-value').inputValue(), '', 'the value field is cleared');
  assert.ok(!(await page.content()).includes('sk-console-test-value'), 'the value never shows');
  await shot('14-secrets');
  noProblems();
});

test('every page fits a 375 px phone: no horizontal page scroll, the top bar on screen', async () => {
  await page.setViewportSize({ width: 375, height: 800 });
  try {
    for (const [name, url, ready] of [
      ['benchmarks', '/benchmarks', '#benchmark-list'],
      ['benchmark', '/benchmarks/demo-bench', '#leaderboard-body tbody tr'],
      ['cost-plot', `/benchmarks/${COST_BENCH}`, '#cost-plot svg'],
      ['run', `/benchmarks/runs/${RUN_ID}`, '#run-name'],
      ['new-run', '/runs/new?benchmark=demo-bench', '#summary-tasks'],
      ['runs', '/runs', '#run-list'],
      ['secrets', '/secrets', '#secret-form'],
    ]) {
      await page.goto(`${BASE}${url}`);
      await page.locator(ready).first().waitFor();
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      assert.ok(width <= 375, `${name}: the page is ${width} px wide at 375 px`);
      const signOut = await page.locator('#topbar button:has-text("Sign out")').boundingBox();
      assert.ok(signOut && signOut.x >= 0 && signOut.x + signOut.width <= 375, `${name}: Sign out is off-screen (${JSON.stringify(signOut)})`);
      if (name === 'run') {
        const tick = await page.locator('#pass-at-k svg .axis text').first().boundingBox();
        assert.ok(tick && tick.height >= 9, `run: pass@k tick labels are ${tick && tick.height} px tall at 375 px`);
      }
      if (name === 'cost-plot') {
        // Drawn at its own width: inside the page, its labels full size.
        await page.waitForFunction(() => {
          const fig = document.getElementById('cost-plot');
          return fig && Math.abs(Number(fig.querySelector('svg').dataset.width) - Math.max(260, Math.floor(fig.getBoundingClientRect().width))) <= 1;
        });
        const box = await page.locator('#cost-plot svg').boundingBox();
        assert.ok(box.x >= 0 && box.x + box.width <= 375, `cost plot ${JSON.stringify(box)} leaves the 375 px page`);
        const tick = await page.locator('#cost-plot svg .axis text').first().boundingBox();
        assert.ok(tick && tick.height >= 9, `cost plot tick labels are ${tick && tick.height} px tall at 375 px`);
      }
      await shot(`15-narrow-${name}`);
    }
  } finally {
    await page.setViewportSize({ width: 1280, height: 900 });
  }
  noProblems();
});

// layoutProblems lists, for the page as it is, what breaks the layout rules
// at its width: a page wider than the window, a table cell whose content is
// cut, a table wider than its frame without a visible way to scroll it, and
// (fit) the named tables that must fit their frame outright.
async function layoutProblems(width, fit) {
  // The frames mark themselves overflowing from a ResizeObserver: wait
  // until every frame agrees with its table.
  await page.waitForFunction(() => [...document.querySelectorAll('.table-wrap')].every((w) => {
    const t = w.querySelector('table');
    return !t || (t.scrollWidth > w.clientWidth + 1) === w.classList.contains('overflowing');
  }));
  return page.evaluate(({ width, fit }) => {
    const out = [];
    const pageWidth = document.documentElement.scrollWidth;
    if (pageWidth > width) out.push(`the page is ${pageWidth} px wide at ${width} px`);
    for (const w of document.querySelectorAll('.table-wrap')) {
      const t = w.querySelector('table');
      if (!t || !w.offsetParent) continue;
      const name = w.closest('[id]')?.id || t.querySelector('th')?.innerText || 'a table';
      for (const c of t.querySelectorAll('th, td')) {
        if (c.offsetParent && c.scrollWidth > c.clientWidth + 1) out.push(`${name}: cell "${c.innerText.slice(0, 30)}" is cut (${c.scrollWidth} > ${c.clientWidth})`);
      }
      if (t.scrollWidth <= w.clientWidth + 1) continue;
      if (fit.some((sel) => w.closest(sel) || w.querySelector(sel))) out.push(`${name}: ${t.scrollWidth} px wide in a ${w.clientWidth} px frame; it must fit (columns ${[...t.querySelectorAll('th')].map((th) => `${th.innerText.replace(/\s+/g, ' ')} ${Math.round(th.getBoundingClientRect().width)}`).join(', ')})`);
      const css = getComputedStyle(w);
      const hint = w.querySelector('.scroll-hint');
      // (Headless chromium hides scrollbars, so the shadow and the hint
      // are what this can check.)
      if (!['auto', 'scroll'].includes(css.overflowX) || !hint || !hint.offsetHeight || css.boxShadow === 'none') {
        out.push(`${name}: wider than its frame with no visible scroll (overflow ${css.overflowX}, hint ${hint?.offsetHeight}, shadow ${css.boxShadow})`);
      }
    }
    return out;
  }, { width, fit });
}

test('at 1280 and 375 px tables fit or scroll visibly, nothing is cut, and the charts are labelled', async () => {
  try {
    for (const width of [1280, 375]) {
      await page.setViewportSize({ width, height: 900 });
      // At 1280 px the tables that matter fit outright; on a phone every
      // table folds its rows so that every column is on screen.
      const all = width < 640 ? ['.table-wrap'] : [];
      for (const [name, url, ready, fit] of [
        ['benchmarks', '/benchmarks', '#benchmark-list tbody tr', ['#benchmark-list']],
        ['leaderboard', '/benchmarks/demo-bench', '#leaderboard-body tbody tr', ['#leaderboard-body']],
        ['cost-plot', `/benchmarks/${COST_BENCH}`, '#cost-plot svg', ['#leaderboard-body']],
        ['run', `/benchmarks/runs/${RUN_ID}`, '#category-bars', ['[data-agent]']],
        ['runs', '/runs', '#run-list tbody tr', []],
      ]) {
        await page.goto(`${BASE}${url}`);
        await page.locator(ready).first().waitFor();
        assert.deepEqual(await layoutProblems(width, [...fit, ...all]), [], `${name} at ${width} px`);
        if (name === 'run') {
          // Every category bar names its agent; nop's 0% bars show a stub;
          // the legend is in the chart's own card.
          const bars = await page.evaluate(() => [...document.querySelectorAll('#category-bars .bar-line')].map((l) => ({
            agent: l.querySelector('.bar-agent')?.innerText || '', value: l.querySelector('.bar-value').innerText,
            fill: l.querySelector('.bar-fill')?.getBoundingClientRect().width ?? -1,
          })));
          assert.equal(bars.length, 8, 'two agents × four categories');
          for (const b of bars) {
            assert.match(b.agent, /^(oracle|nop)$/, `a bar names its agent: ${JSON.stringify(b)}`);
            assert.ok(b.fill >= 2, `bar ${JSON.stringify(b)} is invisible`);
          }
          assert.ok(bars.some((b) => b.value === '0%'), 'nop has 0% bars');
          const legend = await page.evaluate(() => {
            const l = document.getElementById('category-legend');
            return l && l.closest('.card') === document.getElementById('category-bars').closest('.card') ? l.innerText : null;
          });
          assert.match(legend || '', /oracle[\s\S]*nop|nop[\s\S]*oracle/, 'the category chart has its own legend');
          if (width === 1280) {
            // The stat cards keep their values on one line, uncut.
            const cut = await page.evaluate(() => [...document.querySelectorAll('.run-stats .stat .value')]
              .filter((v) => v.scrollWidth > v.clientWidth + 1 || v.getClientRects().length !== 1 || v.offsetHeight > 1.6 * parseFloat(getComputedStyle(v).lineHeight))
              .map((v) => v.innerText));
            assert.deepEqual(cut, [], 'stat values wrap or are cut');
          }
        }
        if (name === 'cost-plot') {
          // The entrant whose cost its agent reported is marked in the
          // table and drawn apart, never on the metered frontier.
          assert.ok(await page.locator('#leaderboard-body .tag.self-reported').count() >= 1, 'a self-reported cost is marked');
          assert.equal(await page.locator('#cost-plot rect.self-reported').count(), 1, 'one self-reported point, a square');
          assert.match(await page.locator('#cost-plot-self-reported').innerText(), /reported by the agent itself, not metered/);
          const label = await page.locator('#cost-plot rect.self-reported').getAttribute('data-label');
          assert.equal(await page.locator(`#cost-plot circle[data-label="${label}"]`).count(), 0, 'it is no circle of the frontier');
        }
        await shot(`16-${width}-${name}`);
      }
    }
  } finally {
    await page.setViewportSize({ width: 1280, height: 900 });
  }
  noProblems();
});

test('Check environments runs the oracle and nop on demo-bench and shows the verdicts', async () => {
  await page.goto(`${BASE}/benchmarks/demo-bench`);
  await page.locator('#check-none').waitFor();
  assert.match(await page.locator('#check-none').innerText(), /30 attempts in all/);
  const button = page.locator('#check-start');
  assert.equal(await button.isDisabled(), false);
  await button.click();
  // While its run goes the button is off with the reason, and the page
  // follows the progress; then the verdicts replace it. The check is 30
  // real attempts: it gets what is left of the test's time.
  const verdicts = page.locator('#check-verdicts');
  await page.locator('#check-progress, #check-verdicts').first().waitFor();
  if (await page.locator('#check-progress').count()) {
    assert.equal(await button.isDisabled(), true);
    assert.match(await page.locator('#check-start-why').innerText(), /A check of this version is running/);
    assert.match(await page.locator('#check-progress').innerText(), /Checking 15 tasks/);
  }
  await verdicts.waitFor({ timeout: Number(process.env.GAUNTLET_WAIT_MS) || WAIT });
  assert.match(await page.locator('#check-summary').innerText(), /15 tasks checked .*: 0 broken, 0 trivial/);
  assert.equal(await page.locator('#check-verdicts tbody tr').count(), 0, 'no task flagged: every oracle passes, no nop does');
  assert.equal(await page.locator('#check-start').isDisabled(), true);
  // The finished check redraws the tasks' verdicts.
  await page.waitForFunction(() => [...document.querySelectorAll('#tasks tbody tr')].every((r) => /\bok\b/.test(r.lastElementChild.textContent)));
  await shot('16-environment-check');
  noProblems();
});

test('a token the API rejects returns to sign-in', async () => {
  await page.evaluate(() => localStorage.setItem('gauntlet.token', 'gt_revoked'));
  await page.goto(`${BASE}/runs`);
  await page.waitForURL(/\/signin\?expired=1/);
  assert.match(await page.locator('.alert.warn').innerText(), /did not accept/);
  assert.equal(await page.evaluate(() => localStorage.getItem('gauntlet.token')), null);
  noProblems();
});
