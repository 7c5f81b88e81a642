// Sign-in: paste the API token; it is checked against GET /v1/workspace and
// kept in localStorage.

import { api, auth, ApiError } from '../api.js';
import { h, replace } from '../dom.js';
import { navigate } from '../router.js';
import { errorBox } from '../components.js';
import { workspace } from '../workspace.js';

/** renderSignIn renders the sign-in page. */
export async function renderSignIn({ main, query }) {
  document.title = 'Sign in · gauntlet';
  const next = safeNext(query.get('next'));
  const status = h('div', { 'aria-live': 'polite' });
  if (query.get('expired')) {
    status.append(h('div', { class: 'alert warn' }, 'The API did not accept the stored token any more. Sign in again.'));
  }
  const input = h('input', {
    type: 'password', id: 'token', name: 'token', autocomplete: 'off', spellcheck: 'false', required: true,
    placeholder: 'gt_…', 'aria-describedby': 'token-hint',
  });
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Sign in');
  const form = h('form', { class: 'card-body', novalidate: true },
    h('h1', {}, h('img', { src: '/favicon.svg', alt: '' }), 'Sign in to gauntlet'),
    h('div', { class: 'field' },
      h('label', { for: 'token' }, 'API token'),
      input,
      h('div', { class: 'hint', id: 'token-hint' }, 'The token is kept in this browser only and sent as ',
        h('code', {}, 'Authorization: Bearer'), ' with every API request.')),
    status,
    h('div', {}, submit),
    h('div', { class: 'small' },
      h('strong', {}, 'Where is my token?'),
      h('ol', {},
        h('li', {}, h('code', {}, 'gauntlet local'), ' prints it when it starts and writes it to ', h('code', {}, '<data dir>/token'), '.'),
        h('li', {}, 'In the cloud, your workspace administrator issues it.'))));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const token = input.value.trim();
    replace(status);
    if (!token) {
      input.setAttribute('aria-invalid', 'true');
      status.append(h('div', { class: 'alert bad', role: 'alert' }, 'Paste the API token first.'));
      input.focus();
      return;
    }
    submit.disabled = true;
    auth.set(token);
    try {
      workspace.set(await api.workspace());
      navigate(next, { replace: true });
    } catch (err) {
      auth.clear();
      input.setAttribute('aria-invalid', 'true');
      const rejected = err instanceof ApiError && err.status === 401;
      status.append(rejected
        ? h('div', { class: 'alert bad', role: 'alert' }, h('div', { class: 'title' }, 'Token rejected'),
          `${sentence(err.message)} Paste the token this server printed when it started.`)
        : errorBox(err, 'Could not sign in'));
      submit.disabled = false;
      input.focus();
    }
  });
  replace(main, h('div', { class: 'signin card' }, form));
  input.focus();
}

// safeNext keeps redirects inside the console.
function safeNext(next) {
  if (!next || !next.startsWith('/') || next.startsWith('//') || next.startsWith('/signin')) return '/benchmarks';
  return next;
}

// sentence capitalizes a message and ends it with a full stop.
function sentence(msg) {
  const s = msg.charAt(0).toUpperCase() + msg.slice(1);
  return /[.!?]$/.test(s) ? s : `${s}.`;
}
