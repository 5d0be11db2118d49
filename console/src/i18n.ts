import { useTranslation } from 'react-i18next';

// The plugin's i18n namespace: the console loads locales/<lng>/plugin__<plugin name>.json.
export const i18nNamespace = 'plugin__virt-advisor-plugin';

export const usePluginTranslation = () => useTranslation(i18nNamespace);
