#!/usr/bin/env node
/* eslint-env node */
// Writes locales/en/plugin__virt-advisor-plugin.json from the strings the plugin translates:
// every t('...') literal under src/, the %plugin__virt-advisor-plugin~...% names of
// console-extensions.json, and the API's enum values the pages translate by value.
// With --check it writes nothing and fails when the file is not up to date.
const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..');
const namespace = 'plugin__virt-advisor-plugin';
const localeFile = path.join(root, 'locales', 'en', `${namespace}.json`);

// Values of the API the pages pass to t() as they are.
const enumValues = [
  // phases
  'Pending', 'Drafting', 'ReviewRequired', 'InProgress', 'Completed', 'CompletedWithErrors',
  'CompletedWithUpgrade', 'Drifted', 'Failed', 'PrerequisiteFailed', 'Ignored', 'Reverted',
  // actions
  'DryRun', 'Apply', 'Ignore',
  // item states
  'Skipped',
  // item actions
  'Release', 'Restore', 'Delete',
  // impacts
  'Low', 'Medium', 'High',
];

const sourceFiles = (dir) =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      return e.name === '__tests__' ? [] : sourceFiles(p);
    }
    return /\.(ts|tsx)$/.test(e.name) ? [p] : [];
  });

// A t( call whose first argument is a string literal, possibly on the next line.
const literal = /\bt\(\s*(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")/g;

const keys = () => {
  const found = new Set(enumValues);
  for (const file of sourceFiles(path.join(root, 'src'))) {
    const text = fs.readFileSync(file, 'utf8');
    for (const m of text.matchAll(literal)) {
      found.add((m[1] ?? m[2]).replace(/\\(.)/g, '$1'));
    }
  }
  const extensions = fs.readFileSync(path.join(root, 'console-extensions.json'), 'utf8');
  for (const m of extensions.matchAll(new RegExp(`%${namespace}~([^%]+)%`, 'g'))) {
    found.add(m[1]);
  }
  return [...found].sort();
};

const render = () =>
  `${JSON.stringify(Object.fromEntries(keys().map((k) => [k, k])), null, 2)}\n`;

if (require.main === module) {
  const want = render();
  if (process.argv.includes('--check')) {
    const have = fs.existsSync(localeFile) ? fs.readFileSync(localeFile, 'utf8') : '';
    if (have !== want) {
      console.error(`${path.relative(root, localeFile)} is not up to date: run npm run i18n`);
      process.exit(1);
    }
  } else {
    fs.mkdirSync(path.dirname(localeFile), { recursive: true });
    fs.writeFileSync(localeFile, want);
  }
}

module.exports = { render, localeFile };
