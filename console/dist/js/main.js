// Console entry point: the shell (top bar with workspace and billing), the
// routes, and sign-out on 401.

import { auth, UNAUTHORIZED_EVENT } from './api.js';
import { h, replace, link } from './dom.js';
import { route, notFound, guard, navigate, start } from './router.js';
import { renderSignIn } from './pages/signin.js';
import { renderBenchmarks } from './pages/benchmarks.js';
import { renderBenchmark } from './pages/benchmark.js';
import { renderRuns } from './pages/runs.js';
import { renderSubmit } from './pages/submit.js';
import { renderRun } from './pages/run.js';
import { renderSecrets } from './pages/secrets.js';
import { renderCompare } from './pages/compare.js';
import { workspace } from './workspace.js';

route('/signin', renderSignIn, { public: true });
route('/', () => navigate('/benchmarks', { replace: true }));
route('/benchmarks', renderBenchmarks, { nav: 'benchmarks' });
// A run lives under its benchmark's section, as the product describes it;
// /runs/<id> (the old address) redirects there, query and all.
route('/benchmarks/runs/:id', renderRun, { nav: 'runs' });
route('/benchmarks/:key', renderBenchmark, { nav: 'benchmarks' });
route('/runs', renderRuns, { nav: 'runs' });
route('/runs/new', renderSubmit, { nav: 'submit' });
route('/runs/:id', ({ params }) => navigate(`/benchmarks/runs/${encodeURIComponent(params.id)}${window.location.search}`, { replace: true }));
route('/secrets', renderSecrets, { nav: 'secrets' });
route('/compare', renderCompare, { nav: 'runs' });
notFound(async ({ main }) => {
  document.title = 'Not found · gauntlet';
  replace(main, h('div', { class: 'empty' },
    h('h1', {}, 'Page not found'),
    h('p', {}, 'No console page lives at ', h('code', {}, window.location.pathname), '.'),
    h('p', {}, link('/benchmarks', 'Go to benchmarks'))));
});

guard((page, url) => {
  const topbar = document.getElementById('topbar');
  if (page.options.public) {
    topbar.hidden = true;
    replace(document.getElementById('banner'));
    return true;
  }
  if (!auth.token()) {
    navigate(`/signin?next=${encodeURIComponent(url)}`, { replace: true });
    return false;
  }
  renderShell(page.options.nav);
  return true;
});

const NAV = [
  ['benchmarks', '/benchmarks', 'Benchmarks'],
  ['runs', '/runs', 'Runs'],
  ['submit', '/runs/new', 'New run'],
  ['secrets', '/secrets', 'Secrets'],
];

function renderShell(active) {
  const topbar = document.getElementById('topbar');
  topbar.hidden = false;
  if (!topbar.firstChild) {
    replace(topbar,
      h('a', { class: 'brand', href: '/benchmarks' }, h('img', { src: '/favicon.svg', alt: '' }), 'gauntlet'),
      h('nav', { class: 'nav', 'aria-label': 'Main' }, NAV.map(([key, href, label]) => h('a', { href, dataset: { nav: key } }, label))),
      h('div', { class: 'spacer' }),
      h('div', { class: 'ws', id: 'ws' }),
      h('button', { type: 'button', class: 'small', onclick: signOut }, 'Sign out'));
    workspace.subscribe(renderWorkspace);
  }
  for (const a of topbar.querySelectorAll('.nav a')) {
    if (a.dataset.nav === active) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  workspace.load();
}

function renderWorkspace(ws) {
  const box = document.getElementById('ws');
  const banner = document.getElementById('banner');
  if (!box) return;
  if (!ws) {
    replace(box);
    replace(banner);
    return;
  }
  const billing = ws.billing || {};
  const tone = billing.can_submit ? 'ok' : 'bad';
  replace(box,
    h('span', { class: 'ws-name', id: 'ws-name', title: `workspace ${ws.id}` }, ws.name || ws.id),
    h('span', { class: `badge ${tone}`, id: 'billing', title: billing.problem || (billing.plan ? `plan ${billing.plan}` : null) },
      `billing: ${billing.status || 'unknown'}`),
    ws.user?.name || ws.user?.id ? h('span', { class: 'muted', title: 'signed-in user' }, ws.user.name || ws.user.id) : null);
  if (billing.can_submit === false) {
    replace(banner, h('div', { class: 'banner bad', role: 'status' },
      h('strong', {}, 'Runs cannot be submitted.'), h('span', {}, billing.problem || 'This workspace has no valid billing.')));
  } else {
    replace(banner);
  }
}

function signOut() {
  auth.clear();
  workspace.clear();
  navigate('/signin');
}

window.addEventListener(UNAUTHORIZED_EVENT, () => {
  if (window.location.pathname === '/signin') return;
  auth.clear();
  workspace.clear();
  const next = window.location.pathname + window.location.search;
  navigate(`/signin?expired=1&next=${encodeURIComponent(next)}`, { replace: true });
});

start();
