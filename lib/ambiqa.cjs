// The package entry for `require('ambiqa')` (tslab notebooks compile to CommonJS) and for tools
// that read `main`. ambiqa ships its TypeScript sources, with no build step: tsx compiles them
// on load, as it does for the `ambiqa` command.
'use strict';
const { resolve } = require('node:path');

// Library code finds the project (models, caches, artifacts) through AMBIQA_ROOT.
process.env.AMBIQA_ROOT = process.env.AMBIQA_ROOT || resolve(__dirname, '..');
require('tsx/cjs/api').register();
module.exports = require('../src/index.ts');
