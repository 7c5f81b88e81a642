// Finding the line of a run-config key: maps the API's field paths
// ("execution.attempts_per_task", "agents[1].model.type",
// 'agents[0].model.extra_headers["a b"]') to the line of the TOML text that
// sets them, so each problem shows next to its key. This is a line scanner
// for the shapes run configs use (tables, arrays of tables, dotted and
// quoted keys, inline tables), not a TOML parser: the server parses.

/** splitPath splits a field path into segments; array indices stay attached ("agents[1]"). */
export function splitPath(path) {
  const out = [];
  let i = 0;
  let cur = '';
  while (i < path.length) {
    const c = path[i];
    if (c === '.') {
      if (cur) out.push(cur);
      cur = '';
      i += 1;
    } else if (c === '[' && path[i + 1] === '"') {
      if (cur) out.push(cur);
      const end = path.indexOf('"]', i + 2);
      out.push(path.slice(i + 2, end < 0 ? path.length : end));
      cur = '';
      i = end < 0 ? path.length : end + 2;
    } else if (c === '[') {
      const end = path.indexOf(']', i);
      cur += path.slice(i, end < 0 ? path.length : end + 1);
      i = end < 0 ? path.length : end + 1;
    } else {
      cur += c;
      i += 1;
    }
  }
  if (cur) out.push(cur);
  return out;
}

// splitKey splits a TOML dotted key ("a.b", '"x y".z') into bare segments.
function splitKey(key) {
  const out = [];
  const re = /\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|([A-Za-z0-9_-]+))\s*(?:\.|$)/y;
  let m;
  while (re.lastIndex < key.length && (m = re.exec(key))) {
    out.push(m[1] ?? m[2] ?? m[3]);
  }
  return out;
}

// stripComment removes a trailing # comment outside of strings.
function stripComment(line) {
  let quote = '';
  for (let i = 0; i < line.length; i += 1) {
    const c = line[i];
    if (quote) {
      if (c === '\\' && quote === '"') i += 1;
      else if (c === quote) quote = '';
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '#') return line.slice(0, i);
  }
  return line;
}

/**
 * keyLines scans TOML text and returns a Map from canonical path (segments
 * joined by "\u0000", array elements as "agents[0]") to its 1-based line.
 */
export function keyLines(text) {
  const lines = text.split('\n');
  const found = new Map();
  const arrays = new Map(); // array-of-tables path (no indices) → current index
  let prefix = [];
  const put = (segs, line) => {
    const k = segs.join('\u0000');
    if (!found.has(k)) found.set(k, line);
  };
  // resolve adds current array indices to a header's segments.
  const resolve = (segs) => {
    const out = [];
    const plain = [];
    for (const s of segs) {
      plain.push(s);
      const idx = arrays.get(plain.join('\u0000'));
      out.push(idx === undefined ? s : `${s}[${idx}]`);
    }
    return out;
  };
  lines.forEach((raw, i) => {
    const line = stripComment(raw).trim();
    const n = i + 1;
    if (!line) return;
    let m = /^\[\[\s*(.+?)\s*\]\]$/.exec(line);
    if (m) {
      const segs = splitKey(m[1]);
      const plainKey = segs.join('\u0000');
      const idx = arrays.has(plainKey) ? arrays.get(plainKey) + 1 : 0;
      // Entering a new element resets the indices of arrays nested in it.
      for (const k of [...arrays.keys()]) if (k.startsWith(`${plainKey}\u0000`)) arrays.delete(k);
      arrays.set(plainKey, idx);
      prefix = resolve(segs);
      put(prefix, n);
      if (idx === 0) put(segs, n); // "agents" itself points at the first element
      return;
    }
    m = /^\[\s*(.+?)\s*\]$/.exec(line);
    if (m) {
      prefix = resolve(splitKey(m[1]));
      put(prefix, n);
      return;
    }
    m = /^((?:"(?:[^"\\]|\\.)*"|'[^']*'|[A-Za-z0-9_.\s-])+?)\s*=\s*(.*)$/.exec(line);
    if (!m) return;
    const keySegs = [...prefix, ...splitKey(m[1])];
    put(keySegs, n);
    const inline = /^\{(.*)\}\s*$/.exec(m[2]);
    if (inline) {
      const re = /(?:^|,)\s*("(?:[^"\\]|\\.)*"|'[^']*'|[A-Za-z0-9_-]+)\s*=/g;
      let im;
      while ((im = re.exec(inline[1]))) put([...keySegs, ...splitKey(im[1])], n);
    }
  });
  return found;
}

/**
 * lineOf returns the 1-based line that sets field in text, falling back to
 * the nearest enclosing table or key, or to the line a syntax error names;
 * null when nothing matches.
 */
export function lineOf(text, field, message = '', lines = keyLines(text)) {
  if (!field) {
    const m = /line (\d+)/.exec(message);
    return m ? Number(m[1]) : null;
  }
  const segs = splitPath(field);
  while (segs.length) {
    const hit = lines.get(segs.join('\u0000'));
    if (hit) return hit;
    const last = segs[segs.length - 1];
    const bare = /^(.*)\[\d+\]$/.exec(last);
    if (bare) segs[segs.length - 1] = bare[1]; // agents[3] → agents
    else segs.pop();
  }
  return null;
}
