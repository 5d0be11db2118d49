import * as fs from 'fs';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { render, localeFile } = require('../../scripts/locales.js');

describe('locales/en/plugin__virt-advisor-plugin.json', () => {
  it('holds exactly the strings the plugin translates (npm run i18n writes it)', () => {
    expect(fs.readFileSync(localeFile, 'utf8')).toBe(render());
  });
});
