// DOM building without innerHTML: every text goes through textContent, so
// nothing the API returns is ever parsed as markup.

const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * h builds an element. attrs: class, style (object), dataset (object),
 * on<Event> handlers, boolean attributes (true/false), anything else as an
 * attribute; null and undefined attributes are skipped. Children may be
 * nodes, strings, numbers, arrays, or null/false (skipped).
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  applyAttrs(el, attrs);
  append(el, children);
  return el;
}

/** svg builds an SVG element; attributes are set verbatim except style (an object) and class. */
export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2).toLowerCase(), v);
    else if (k === 'style' && typeof v === 'object') Object.assign(el.style, v);
    else if (k === 'class') el.setAttribute('class', Array.isArray(v) ? v.filter(Boolean).join(' ') : v);
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function applyAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined) continue;
    if (k === 'class') el.className = Array.isArray(v) ? v.filter(Boolean).join(' ') : v;
    else if (k === 'style') Object.assign(el.style, v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2).toLowerCase(), v);
    else if (k === 'value') el.value = v;
    else if (v === true) el.setAttribute(k, '');
    else if (v === false) continue;
    else el.setAttribute(k, String(v));
  }
}

/** append adds children (see h) to el. */
export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** replace empties el and appends children. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** link is an in-app link the router handles. */
export function link(href, ...children) {
  return h('a', { href }, ...children);
}

/** qs builds a query string from an object, skipping empty values. */
export function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v === '' || v === null || v === undefined) continue;
    u.set(k, String(v));
  }
  const s = u.toString();
  return s ? `?${s}` : '';
}

let idCounter = 0;
/** uid returns a document-unique id with the prefix. */
export function uid(prefix = 'g') {
  idCounter += 1;
  return `${prefix}-${idCounter}`;
}
