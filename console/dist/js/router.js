// A small history-API router: routes are path patterns with :params; each
// render gets an AbortSignal and cleanup hooks that end when the user
// navigates away (polling loops stop, requests are cancelled).

import { hideTooltip } from './components.js';

const routes = [];
let current = null; // { controller, cleanups }
let fallback = null;

/** route registers a page for a pattern such as "/runs/:id". */
export function route(pattern, render, options = {}) {
  const keys = [];
  const re = new RegExp(`^${pattern.replace(/\/:([a-z]+)/gi, (_, k) => { keys.push(k); return '/([^/]+)'; })}/?$`);
  routes.push({ pattern, re, keys, render, options });
}

/** notFound sets the page for unknown paths. */
export function notFound(render) { fallback = render; }

function match(pathname) {
  for (const r of routes) {
    const m = r.re.exec(pathname);
    if (!m) continue;
    const params = {};
    r.keys.forEach((k, i) => { params[k] = decodeURIComponent(m[i + 1]); });
    return { route: r, params };
  }
  return null;
}

let beforeRender = () => true;
/** guard sets a function called before each render with the matched route; returning false cancels it. */
export function guard(fn) { beforeRender = fn; }

/** navigate goes to an in-app URL. */
export function navigate(url, { replace = false } = {}) {
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  return render();
}

/** setQuery rewrites the current URL's query without rendering again. */
export function setQuery(params) {
  const u = new URL(window.location.href);
  for (const [k, v] of Object.entries(params)) {
    if (v === '' || v === null || v === undefined) u.searchParams.delete(k);
    else u.searchParams.set(k, String(v));
  }
  history.replaceState(null, '', u.pathname + u.search + u.hash);
}

/** render shows the page for the current location. */
export async function render() {
  if (current) {
    current.controller.abort();
    for (const fn of current.cleanups) {
      try { fn(); } catch (err) { console.error('page cleanup failed', err); }
    }
  }
  hideTooltip();
  const controller = new AbortController();
  const cleanups = [];
  current = { controller, cleanups };
  const { pathname, search } = window.location;
  const m = match(pathname);
  const page = m ? m.route : { render: fallback, options: {} };
  if (!beforeRender(page, pathname + search)) return;
  const main = document.getElementById('main');
  main.replaceChildren();
  main.setAttribute('aria-busy', 'true');
  const ctx = {
    main,
    params: m ? m.params : {},
    query: new URLSearchParams(search),
    signal: controller.signal,
    onCleanup: (fn) => cleanups.push(fn),
    /** alive reports whether this page is still the one shown. */
    alive: () => !controller.signal.aborted,
  };
  try {
    await page.render(ctx);
  } catch (err) {
    if (err.name !== 'AbortError') throw err;
  } finally {
    if (!controller.signal.aborted) main.removeAttribute('aria-busy');
  }
}

/** start handles in-app link clicks and back/forward, then renders. */
export function start() {
  document.addEventListener('click', (e) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    const a = e.target.closest('a[href]');
    if (!a || a.target || a.hasAttribute('download') || a.dataset.external !== undefined) return;
    const url = new URL(a.href, window.location.href);
    if (url.origin !== window.location.origin || url.pathname.startsWith('/v1/')) return;
    if (url.hash && url.pathname === window.location.pathname && url.search === window.location.search) return;
    e.preventDefault();
    navigate(url.pathname + url.search + url.hash);
  });
  window.addEventListener('popstate', () => render());
  return render();
}
