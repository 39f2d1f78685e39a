/** Figure builders (pure: traces/results in, plotly spec out) and their export. */
export * from './types';
export * from './kde';
export * from './correctness';
export * from './consistency';
export * from './coverage';
export * from './ablation';
export * from './cost';
export * from './runs';
export * from './judges';
export { plotlyText, truncate, wrapForHover } from './text';
export * from './compare';
export * from './trials';
