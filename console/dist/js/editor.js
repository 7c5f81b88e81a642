// A plain-textarea code editor with line numbers and problem markers: a
// mirror layer behind the transparent textarea highlights each line with a
// problem and prints the problem after the line's text.

import { h, replace } from './dom.js';

/**
 * createEditor returns {el, textarea, value, setValue, setProblems, goto}.
 * setProblems takes [{line, message}] (1-based lines).
 */
export function createEditor({ id, label, value = '', onInput }) {
  const gutter = h('div', { class: 'gutter', 'aria-hidden': 'true' });
  const mirror = h('div', { class: 'mirror', 'aria-hidden': 'true' });
  const textarea = h('textarea', {
    id, spellcheck: 'false', autocapitalize: 'off', autocomplete: 'off', wrap: 'off',
    'aria-label': label, 'aria-describedby': `${id}-problems`,
  });
  textarea.value = value;
  const el = h('div', { class: 'editor' }, gutter, h('div', { class: 'surface' }, mirror, textarea));
  let problems = [];

  const paint = () => {
    const lines = textarea.value.split('\n');
    const byLine = new Map();
    for (const p of problems) {
      if (p.line) (byLine.get(p.line) || byLine.set(p.line, []).get(p.line)).push(p.message);
    }
    replace(gutter, lines.map((_, i) => h('div', {
      class: byLine.has(i + 1) ? 'has-error' : null,
      title: byLine.has(i + 1) ? byLine.get(i + 1).join('\n') : null,
    }, String(i + 1))));
    replace(mirror, lines.map((text, i) => {
      const notes = byLine.get(i + 1);
      return h('div', { class: notes ? 'has-error' : null },
        text,
        notes ? h('span', { class: 'note' }, `← ${notes.join(' · ')}`) : null);
    }));
    syncScroll();
  };
  const syncScroll = () => {
    gutter.scrollTop = textarea.scrollTop;
    mirror.scrollTop = textarea.scrollTop;
    mirror.scrollLeft = textarea.scrollLeft;
  };
  textarea.addEventListener('scroll', syncScroll);
  textarea.addEventListener('input', () => {
    paint();
    if (onInput) onInput(textarea.value);
  });
  textarea.addEventListener('keydown', (e) => {
    if (e.key === 'Tab' && !e.shiftKey && !e.ctrlKey && !e.metaKey) {
      // Two spaces, not a focus change; Escape then Tab leaves the editor.
      if (textarea.dataset.escaped === '1') return;
      e.preventDefault();
      textarea.setRangeText('  ', textarea.selectionStart, textarea.selectionEnd, 'end');
      textarea.dispatchEvent(new Event('input'));
    }
    textarea.dataset.escaped = e.key === 'Escape' ? '1' : '';
  });
  paint();

  return {
    el,
    textarea,
    value: () => textarea.value,
    setValue(v) {
      textarea.value = v;
      paint();
    },
    setProblems(list) {
      problems = list;
      paint();
    },
    /** goto selects line n and scrolls it into view. */
    goto(n) {
      const lines = textarea.value.split('\n');
      let start = 0;
      for (let i = 0; i < n - 1 && i < lines.length; i += 1) start += lines[i].length + 1;
      const end = start + (lines[n - 1]?.length ?? 0);
      textarea.focus();
      textarea.setSelectionRange(start, end);
      const lineHeight = parseFloat(getComputedStyle(textarea).lineHeight) || 20;
      textarea.scrollTop = Math.max(0, (n - 3) * lineHeight);
      syncScroll();
    },
  };
}
