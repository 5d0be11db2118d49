/* eslint-env node */
// Builds the console plugin: ConsoleRemotePlugin writes plugin-manifest.json and the entry
// script (plugin-entry.js) into dist/, which the plugin's web server serves as they are.
const path = require('path');
const CopyWebpackPlugin = require('copy-webpack-plugin');
const { ConsoleRemotePlugin } = require('@openshift-console/dynamic-plugin-sdk-webpack');

const production = process.env.NODE_ENV === 'production';

module.exports = {
  mode: production ? 'production' : 'development',
  // No entry points of its own: the remote container's entry is ConsoleRemotePlugin's.
  entry: {},
  context: path.resolve(__dirname, 'src'),
  output: {
    path: path.resolve(__dirname, 'dist'),
    filename: production ? '[name]-bundle-[contenthash].min.js' : '[name]-bundle.js',
    chunkFilename: production ? '[name]-chunk-[chunkhash].min.js' : '[name]-chunk.js',
  },
  resolve: {
    extensions: ['.ts', '.tsx', '.js', '.jsx'],
  },
  module: {
    rules: [
      {
        test: /\.tsx?$/,
        exclude: /node_modules/,
        use: [
          {
            loader: 'ts-loader',
            // tsc --noEmit (npm run typecheck) checks the types; the build only transpiles.
            options: { configFile: path.resolve(__dirname, 'tsconfig.json'), transpileOnly: true },
          },
        ],
      },
      {
        test: /\.css$/,
        use: ['style-loader', 'css-loader'],
      },
      {
        test: /\.m?js/,
        resolve: { fullySpecified: false },
      },
    ],
  },
  plugins: [
    new ConsoleRemotePlugin(),
    // The console serves a plugin's translations from its locales/ folder.
    new CopyWebpackPlugin({
      patterns: [{ from: path.resolve(__dirname, 'locales'), to: 'locales' }],
    }),
  ],
  devtool: production ? false : 'source-map',
  optimization: {
    chunkIds: production ? 'deterministic' : 'named',
    minimize: production,
  },
  performance: { hints: false },
};
