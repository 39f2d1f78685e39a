#!/usr/bin/env node
// The `ambiqa` command. Runs the TypeScript sources directly through tsx, so that there is no
// build step to forget and a stack trace points at the file you can open.
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { register } from 'tsx/esm/api';

// Library code finds the project through AMBIQA_ROOT (it cannot use import.meta under tslab).
process.env.AMBIQA_ROOT ??= resolve(dirname(fileURLToPath(import.meta.url)), '..');

register();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
