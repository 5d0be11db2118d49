/* eslint-env node */
// Unit tests of the plugin's pages (React Testing Library, jsdom). The console's SDK runs
// only inside the console, so tests replace it with test-setup/dynamic-plugin-sdk.ts;
// translations are the real locales file through i18next.
module.exports = {
  testEnvironment: 'jsdom',
  roots: ['<rootDir>/src'],
  testMatch: ['**/__tests__/**/*.test.ts?(x)'],
  moduleNameMapper: {
    '^@openshift-console/dynamic-plugin-sdk$': '<rootDir>/test-setup/dynamic-plugin-sdk.ts',
    '\\.css$': '<rootDir>/test-setup/style.ts',
  },
  transform: {
    '^.+\\.tsx?$': [
      'ts-jest',
      { tsconfig: { module: 'commonjs', jsx: 'react-jsx', esModuleInterop: true, isolatedModules: true } },
    ],
  },
  setupFiles: ['<rootDir>/test-setup/globals.ts'],
  setupFilesAfterEnv: ['<rootDir>/test-setup/setup.ts'],
};
