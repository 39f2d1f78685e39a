/**
 * The tslab module of the running kernel. Its display functions keep per-cell state, so they must
 * come from the same copy as the kernel: the one the kernel spec names (`AMBIQA_TSLAB`, the tslab
 * package `ambiqa setup` installed into the tool folder), else the notebook set as ambiqa locates
 * it (src/config/tools.ts), else the project's own tslab if it installed one.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { projectRoot } from '../config/paths';
import { locateTool } from '../config/tools';

export function requireTslab(id: 'tslab' | 'tslab/dist/jupyter'): unknown {
  const dir = process.env.AMBIQA_TSLAB ?? locateTool('notebook')?.packageDir;
  if (dir) return createRequire(join(dir, 'package.json'))(id === 'tslab' ? dir : join(dir, 'dist', 'jupyter'));
  return createRequire(join(projectRoot, 'package.json'))(id);
}
