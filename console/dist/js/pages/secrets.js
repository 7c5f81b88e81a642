// Secrets: the workspace's and the user's secret records (names only), set
// a value (write-only: it is never shown again), delete a record.

import { api } from '../api.js';
import { h, replace } from '../dom.js';
import { confirmDialog, errorBox, loading, table, toast } from '../components.js';
import { ago, dateTime } from '../format.js';

const NAME_RE = /^[A-Z][A-Z0-9_]*$/;
// Prefixes the platform's runner sets in every sandbox (pkg/secret.ReservedPrefixes).
const RESERVED = ['GAUNTLET_', '_OSMOSIS_', 'DAYTONA_', 'SKYPILOT_'];

/** renderSecrets renders /secrets. */
export async function renderSecrets(ctx) {
  document.title = 'Secrets · gauntlet';
  const listBox = h('div', { id: 'secret-list' }, loading('Loading secrets'));
  const formStatus = h('div', { 'aria-live': 'polite' });
  replace(ctx.main,
    h('div', { class: 'page-head' },
      h('div', { class: 'titles' },
        h('h1', {}, 'Secrets'),
        h('div', { class: 'sub' }, 'Run configs name secret records; a sandbox receives only the ones its agent or verifier names, as environment variables. Values are write-only.'))),
    h('div', { class: 'grid-2 secrets-layout' },
      h('section', { 'aria-labelledby': 'secrets-title' }, h('h2', { id: 'secrets-title', class: 'visually-hidden' }, 'Secret records'), listBox),
      h('section', { class: 'card', 'aria-labelledby': 'set-secret-title' },
        h('div', { class: 'card-head' }, h('h2', { id: 'set-secret-title' }, 'Set a secret')),
        h('div', { class: 'card-body' }, setForm(formStatus, () => refresh(), ctx.query.get('new') || ''), formStatus))));

  const refresh = async () => {
    try {
      const res = await api.secrets({ signal: ctx.signal });
      replace(listBox, secretTable(res.secrets || [], refresh));
    } catch (err) {
      if (err.name === 'AbortError') throw err;
      replace(listBox, errorBox(err, 'Could not load secrets'));
    }
  };
  await refresh();
}

function setForm(status, refresh, prefill) {
  // ?new=NAME (the New Run form's "Create it" link) prefills the name.
  const name = h('input', { type: 'text', id: 'secret-name', name: 'name', value: prefill, placeholder: 'OPENAI_API_KEY', autocomplete: 'off', spellcheck: 'false', required: true, 'aria-describedby': 'secret-name-hint' });
  const value = h('input', { type: 'password', id: 'secret-value', name: 'value', autocomplete: 'new-password', required: true, 'aria-describedby': 'secret-value-hint' });
  const scope = h('select', { id: 'secret-scope', name: 'scope' },
    h('option', { value: 'workspace' }, 'workspace: every member\'s runs can use it'),
    h('option', { value: 'personal' }, 'personal: only your runs, visible only to you'));
  const nameError = h('div', { class: 'error', id: 'secret-name-error' });
  const button = h('button', { type: 'submit', class: 'primary' }, 'Save secret');
  const form = h('form', { class: 'form-stack', id: 'secret-form', novalidate: true },
    h('div', { class: 'field' }, h('label', { for: 'secret-name' }, 'Name'), name,
      h('div', { class: 'hint', id: 'secret-name-hint' }, 'An environment variable name: capitals, digits and _.'), nameError),
    h('div', { class: 'field' }, h('label', { for: 'secret-value' }, 'Value'), value,
      h('div', { class: 'hint', id: 'secret-value-hint' }, 'Stored encrypted; no page, API answer, log or download shows it again.')),
    h('div', { class: 'field' }, h('label', { for: 'secret-scope' }, 'Scope'), scope),
    h('div', {}, button));
  name.addEventListener('input', () => { name.value = name.value.toUpperCase(); });
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    replace(status);
    nameError.textContent = '';
    name.removeAttribute('aria-invalid');
    const n = name.value.trim();
    if (!NAME_RE.test(n) || n.length > 128) {
      name.setAttribute('aria-invalid', 'true');
      nameError.textContent = 'Use capitals, digits and underscores, starting with a capital (at most 128).';
      name.focus();
      return;
    }
    const reserved = RESERVED.find((p) => n.startsWith(p));
    if (reserved) {
      name.setAttribute('aria-invalid', 'true');
      nameError.textContent = `Names starting with ${reserved} are reserved: the platform's runner sets them.`;
      name.focus();
      return;
    }
    if (!value.value) {
      value.setAttribute('aria-invalid', 'true');
      status.append(h('div', { class: 'alert bad', role: 'alert' }, 'Enter the value to store.'));
      value.focus();
      return;
    }
    button.disabled = true;
    try {
      const rec = await api.putSecret(n, scope.value, value.value);
      value.value = '';
      value.removeAttribute('aria-invalid');
      toast(`Saved ${rec.scope} secret ${rec.name}.`, 'ok');
      await refresh();
    } catch (err) {
      status.append(errorBox(err, `Could not save ${n}`));
    } finally {
      button.disabled = false;
    }
  });
  return form;
}

function secretTable(list, refresh) {
  return table([
    { label: 'Name', cell: (s) => h('code', {}, s.name) },
    { label: 'Scope', cell: (s) => h('span', { class: `tag ${s.scope === 'workspace' ? 'accent' : ''}` }, s.scope) },
    { label: 'Set by', cell: (s) => s.set_by || '—' },
    { label: 'When', cell: (s) => h('span', { title: dateTime(s.set_at) }, ago(s.set_at)) },
    { label: 'Value', cell: () => h('span', { class: 'muted', 'aria-label': 'hidden' }, '••••••••') },
    { label: '', cell: (s) => h('button', {
      type: 'button', class: 'small danger', 'aria-label': `Delete ${s.scope} secret ${s.name}`, onclick: async () => {
        const ok = await confirmDialog({
          title: `Delete ${s.name}?`,
          body: `Runs that name ${s.name} will be rejected until it is set again.`,
          confirmLabel: 'Delete', danger: true,
        });
        if (!ok) return;
        try {
          await api.deleteSecret(s.name, s.scope);
          toast(`Deleted ${s.name}.`, 'ok');
        } catch (err) {
          toast(`Could not delete ${s.name}: ${err.message}`, 'bad');
        }
        await refresh();
      },
    }, 'Delete') },
  ], list, { empty: 'No secrets yet. Set one, then name it in a run config (api_key_secret = "NAME").', rowAttrs: (s) => ({ dataset: { name: s.name, scope: s.scope } }) });
}
