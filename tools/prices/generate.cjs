// Generates pkg/prices/genai-prices.json from the pinned npm package
// @pydantic/genai-prices (see package.json): its price table is a JS object
// literal inside dist/index.cjs, not a data file, so this evaluates the
// module's source with a return of the two top-level constants it keeps the
// table in (E: providers, X: units). Run by `make prices`.
'use strict';
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');

const pkgDir = path.join(__dirname, 'node_modules', '@pydantic', 'genai-prices');
const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
const want = JSON.parse(fs.readFileSync(path.join(__dirname, 'package.json'), 'utf8')).dependencies['@pydantic/genai-prices'];
if (pkg.version !== want) {
  throw new Error(`installed @pydantic/genai-prices ${pkg.version}, package.json pins ${want}: run npm ci in tools/prices`);
}
const src = fs.readFileSync(path.join(pkgDir, 'dist', 'index.cjs'), 'utf8');
let table;
try {
  table = new Function('exports', 'require', `${src};\nreturn {providers: E, units: X};`)({}, require);
} catch (e) {
  throw new Error(`@pydantic/genai-prices ${pkg.version}: price table not found where 0.1.8 keeps it (constants E and X of dist/index.cjs): ${e.message}`);
}
if (!Array.isArray(table.providers) || !table.providers.every((p) => p.id && Array.isArray(p.models))) {
  throw new Error('constant E of dist/index.cjs is not the provider table');
}
// The package's own lookup must see the same table.
const lib = require(path.join(pkgDir, 'dist', 'index.cjs'));
for (const p of table.providers) {
  if (JSON.stringify(lib.findProvider({ providerId: p.id })) !== JSON.stringify(p)) {
    throw new Error(`provider ${p.id}: findProvider disagrees with constant E`);
  }
}

// The publication date of the pinned version, from the registry's record.
let published = process.env.GENAI_PRICES_PUBLISHED || '';
if (!published) {
  const times = JSON.parse(execFileSync('npm', ['view', '@pydantic/genai-prices', 'time', '--json'], { encoding: 'utf8' }));
  published = (times[pkg.version] || '').slice(0, 10);
}
if (!/^\d{4}-\d{2}-\d{2}$/.test(published)) {
  throw new Error(`no publication date for @pydantic/genai-prices ${pkg.version}`);
}

const pick = (o, keys) => Object.fromEntries(keys.filter((k) => o[k] !== undefined).map((k) => [k, o[k]]));
const providers = table.providers.map((p) => ({
  ...pick(p, ['id', 'name', 'api_pattern', 'provider_match', 'model_match', 'fallback_model_providers']),
  models: p.models.map((m) => pick(m, ['id', 'name', 'match', 'context_window', 'deprecated', 'prices'])),
}));
const units = Object.fromEntries(
  Object.entries(table.units).map(([k, u]) => [k, pick(u, ['dimensions', 'per', 'price_key'])]),
);

// One model per line keeps diffs between versions readable.
const lines = [];
lines.push('{');
lines.push(`"source": ${JSON.stringify('npm ' + pkg.name)},`);
lines.push(`"version": ${JSON.stringify(pkg.version)},`);
lines.push(`"published": ${JSON.stringify(published)},`);
lines.push(`"units": ${JSON.stringify(units)},`);
lines.push('"providers": [');
providers.forEach((p, i) => {
  const { models, ...head } = p;
  lines.push(`${JSON.stringify(head).slice(0, -1)},"models":[`);
  models.forEach((m, j) => lines.push(JSON.stringify(m) + (j < models.length - 1 ? ',' : '')));
  lines.push(']}' + (i < providers.length - 1 ? ',' : ''));
});
lines.push(']');
lines.push('}');
const out = process.argv[2] || path.join(__dirname, '..', '..', 'pkg', 'prices', 'genai-prices.json');
fs.writeFileSync(out + '.tmp', lines.join('\n') + '\n');
JSON.parse(fs.readFileSync(out + '.tmp', 'utf8'));
fs.renameSync(out + '.tmp', out);
const n = providers.reduce((a, p) => a + p.models.length, 0);
console.log(`wrote ${out}: ${pkg.name} ${pkg.version} (${published}), ${providers.length} providers, ${n} models`);
