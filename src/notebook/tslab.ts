/**
 * The tslab module of the running kernel. Its display functions keep per-cell state, so they must
 * come from the same copy as the kernel: the project's (`<project>/node_modules/tslab`, what the
 * registered kernel starts), else the one ambiqa's package resolves (the same copy when npm
 * hoisted it, which it does unless two versions are installed).
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { packageRoot, projectRoot } from '../config/paths';

export function requireTslab(id: 'tslab' | 'tslab/dist/jupyter'): unknown {
  try {
    return createRequire(join(projectRoot, 'package.json'))(id);
  } catch (error) {
    if ((error as { code?: string }).code !== 'MODULE_NOT_FOUND') throw error;
    return createRequire(join(packageRoot, 'package.json'))(id);
  }
}
