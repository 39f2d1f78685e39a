/** Notebook helpers: display (tslab), records and lazy danfojs DataFrames, kernel registration. */
export * from './display';
export * from './records';
export * from './frame';
export * from './judges';
export * from './report';
export { registerKernel, executeNotebook, jupyterEnv, jupyterPrefix, KERNEL_NAME } from './kernel';
