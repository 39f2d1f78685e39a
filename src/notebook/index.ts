/** Notebook helpers: display (tslab), records and lazy danfojs DataFrames, kernel registration. */
// Registers every built-in method's analysis and figures, which the displays find through their registries.
import '../pipelines/registry';
export * from './display';
export * from './records';
export * from './frame';
export * from './judges';
export { registerKernel, executeNotebook, jupyterEnv, jupyterPrefix, KERNEL_NAME } from './kernel';
