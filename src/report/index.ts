/** The report domain: loaders, figure choice, HTML rendering, the build pipeline, MLflow upload. */
export * from './load';
export * from './figures';
export * from './render';
export * from './gold';
export * from './build';
export * from './mlflow';
export * from './run-figures';
