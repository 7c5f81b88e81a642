// The signed-in workspace (name, user, billing), loaded once per sign-in and
// refreshed when a submission meets 402 BILLING_REQUIRED.

import { api } from './api.js';

let value = null;
let pending = null;
const listeners = new Set();

function publish() {
  for (const fn of listeners) fn(value);
}

export const workspace = {
  /** get returns the loaded workspace, or null. */
  get: () => value,
  /** subscribe calls fn with the workspace now and on every change. */
  subscribe(fn) {
    listeners.add(fn);
    fn(value);
    return () => listeners.delete(fn);
  },
  /** load fetches the workspace unless it is loaded; refresh forces it. */
  load({ refresh = false } = {}) {
    if (value && !refresh) return Promise.resolve(value);
    if (pending) return pending;
    pending = api.workspace()
      .then((ws) => { value = ws; publish(); return ws; })
      .catch(() => null)
      .finally(() => { pending = null; });
    return pending;
  },
  /** set stores a workspace the caller fetched (sign-in). */
  set(ws) {
    value = ws;
    publish();
  },
  /** clear forgets the workspace (sign-out). */
  clear() {
    value = null;
    publish();
  },
};

/** userLabel names a user id: the signed-in user by name, others by id. */
export function userLabel(id) {
  const me = value?.user;
  if (me && id === me.id) return me.name ? `${me.name} (you)` : 'you';
  return id;
}
