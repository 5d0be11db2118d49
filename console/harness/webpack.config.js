/* eslint-env node */
// Builds the harness's host page into harness/dist. Like the console, it provides the modules
// the console shares with its plugins: react, react-dom, react-router, react-i18next,
// @openshift/dynamic-plugin-sdk, the PatternFly dynamic modules, and
// @openshift-console/dynamic-plugin-sdk (here harness/src/sdk.ts, backed by the API server).
const fs = require('fs');
const path = require('path');
const { container } = require('webpack');
const CopyWebpackPlugin = require('copy-webpack-plugin');

const root = path.resolve(__dirname, '..');
const version = (pkg) => require(path.join(root, 'node_modules', pkg, 'package.json')).version;

// The PatternFly dynamic modules, each shared under its own path as the console shares them.
const patternflyDynamicModules = ['@patternfly/react-core', '@patternfly/react-icons', '@patternfly/react-table'].reduce(
  (shared, pkg) => {
    const map = JSON.parse(fs.readFileSync(path.join(root, 'node_modules', pkg, 'dist', 'dynamic-modules.json'), 'utf8'));
    for (const modulePath of new Set(Object.values(map))) {
      // An absolute import makes webpack provide the module whether or not the host uses it.
      shared[`${pkg}/${modulePath}`] = {
        import: path.join(root, 'node_modules', pkg, modulePath),
        shareKey: `${pkg}/${modulePath}`,
        version: version(pkg),
        requiredVersion: false,
      };
    }
    return shared;
  },
  {},
);

const singleton = (pkg) => ({ singleton: true, eager: true, version: version(pkg), requiredVersion: false });

module.exports = {
  mode: 'development',
  context: __dirname,
  entry: { main: './src/main.tsx' },
  output: {
    path: path.resolve(__dirname, 'dist'),
    publicPath: '/harness/',
    filename: '[name].js',
    chunkFilename: '[name]-chunk.js',
  },
  resolve: { extensions: ['.ts', '.tsx', '.js', '.jsx'] },
  module: {
    rules: [
      {
        test: /\.tsx?$/,
        exclude: /node_modules/,
        use: [{ loader: 'ts-loader', options: { configFile: path.join(root, 'tsconfig.json'), transpileOnly: true } }],
      },
      { test: /\.css$/, use: ['style-loader', 'css-loader'] },
      {
        test: /\.(woff2?|ttf|eot|otf|svg|png|jpg|gif)$/,
        type: 'asset/resource',
        generator: { filename: 'assets/[name][ext]' },
      },
      { test: /\.m?js/, resolve: { fullySpecified: false } },
    ],
  },
  plugins: [
    new container.ModuleFederationPlugin({
      name: 'harness',
      shared: {
        react: singleton('react'),
        'react-dom': singleton('react-dom'),
        'react-router': singleton('react-router'),
        'react-i18next': singleton('react-i18next'),
        '@openshift/dynamic-plugin-sdk': singleton('@openshift/dynamic-plugin-sdk'),
        '@openshift-console/dynamic-plugin-sdk': {
          import: path.resolve(__dirname, 'src', 'sdk.ts'),
          shareKey: '@openshift-console/dynamic-plugin-sdk',
          singleton: true,
          eager: true,
          version: version('@openshift-console/dynamic-plugin-sdk'),
          requiredVersion: false,
        },
        ...patternflyDynamicModules,
      },
    }),
    new CopyWebpackPlugin({ patterns: [{ from: path.join(__dirname, 'index.html'), to: 'index.html' }] }),
  ],
  devtool: false,
  performance: { hints: false },
};
