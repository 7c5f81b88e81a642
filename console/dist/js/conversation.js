// Conversation view of an ATIF trajectory (pkg/atif): one entry per step,
// message by message; each tool call is a fold holding its arguments and the
// output the observation paired with it, so a long run stays scannable.
import { h } from './dom.js';
import { count } from './format.js';

/** conversation renders trajectory.steps; null input is the caller's case. */
export function conversation(traj) {
  const steps = Array.isArray(traj?.steps) ? traj.steps : [];
  if (!steps.length) return h('p', { class: 'muted', id: 'conversation-empty' }, 'The trajectory has no steps.');
  return h('ol', { class: 'conversation', id: 'conversation' }, steps.map(step));
}

function step(s) {
  const results = s.observation?.results || [];
  const calls = s.tool_calls || [];
  // Outputs name the call they answer; any that do not are shown after the calls.
  const answered = new Set();
  const callNodes = calls.map((c) => {
    const outs = results.filter((r) => r.source_call_id && r.source_call_id === c.tool_call_id);
    outs.forEach((r) => answered.add(r));
    return h('details', { class: 'fold tool-call' },
      h('summary', {}, `tool call: ${c.function_name || '(unnamed)'}`),
      h('div', { class: 'sub' }, 'arguments'),
      h('pre', { class: 'block' }, pretty(c.arguments)),
      outs.length ? [h('div', { class: 'sub' }, 'output'), outs.map((r) => h('pre', { class: 'block tool-output' }, r.content || ''))]
        : h('div', { class: 'sub muted' }, 'no output recorded'));
  });
  const loose = results.filter((r) => !answered.has(r));
  const m = s.metrics;
  return h('li', { class: `message source-${s.source || 'unknown'}` },
    h('div', { class: 'message-head' }, h('strong', {}, s.source || 'unknown'), ` · step ${s.step_id ?? ''}`,
      m ? h('span', { class: 'sub' }, ` · ${count(m.prompt_tokens)} in / ${count(m.completion_tokens)} out`) : null),
    s.reasoning_content ? h('details', { class: 'fold' }, h('summary', {}, 'reasoning'), h('pre', { class: 'block' }, s.reasoning_content)) : null,
    s.message ? h('pre', { class: 'block message-text' }, s.message) : null,
    callNodes,
    loose.length ? h('details', { class: 'fold tool-call' }, h('summary', {}, `observation (${count(loose.length)})`),
      loose.map((r) => h('pre', { class: 'block tool-output' }, r.content || ''))) : null);
}

function pretty(args) {
  if (args === undefined || args === null) return '';
  if (typeof args === 'string') return args;
  return JSON.stringify(args, null, 2);
}
