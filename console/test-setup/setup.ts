import '@testing-library/jest-dom';
import { configure } from '@testing-library/react';
import i18n from 'i18next';
import { initReactI18next } from 'react-i18next';
import en from '../locales/en/plugin__virt-advisor-plugin.json';

// The console's pages name their parts with data-test attributes.
configure({ testIdAttribute: 'data-test' });

// Translations as the console sets them up (keys are the English strings, "~" separates the
// namespace), from the plugin's real locales file. A string without a translation fails the
// test that renders it.
const missing: string[] = [];

i18n.use(initReactI18next).init({
  lng: 'en',
  fallbackLng: false,
  ns: ['plugin__virt-advisor-plugin'],
  defaultNS: 'plugin__virt-advisor-plugin',
  resources: { en: { 'plugin__virt-advisor-plugin': en } },
  nsSeparator: '~',
  keySeparator: false,
  interpolation: { escapeValue: false },
  showSupportNotice: false,
  saveMissing: true,
  missingKeyHandler: (_lngs, _ns, key) => {
    missing.push(key);
  },
});

afterEach(() => {
  const keys = missing.splice(0);
  expect({ untranslated: keys }).toEqual({ untranslated: [] });
});
