/**
 * `buildReport(dir)` for notebooks and the library entry: the report pipeline (src/report/build.ts)
 * with the method catalog of every registered pipeline, built here because the report layer may
 * not import the pipelines. A pipeline registered in the notebook before the call is in it.
 * The same for `buildBundle`.
 */
import { methodCatalog } from '../pipelines/registry';
import type { MethodCatalog } from '../plots/methods';
import { buildReport as buildReportWith, type BuildReportOptions, type BuiltReport } from '../report/build';
import { buildBundle as buildBundleWith, type BundleOptions, type BuiltBundle } from '../report/bundle';

export function buildReport(dir: string, options: Omit<BuildReportOptions, 'methods'> & { methods?: MethodCatalog } = {}): BuiltReport {
  return buildReportWith(dir, { ...options, methods: options.methods ?? methodCatalog() });
}

/**
 * `buildBundle(paths, { out })` for notebooks and the library entry: a study's runs, sweeps and
 * comparisons as one static site (src/report/bundle.ts), with the method catalog of every
 * registered pipeline.
 */
export function buildBundle(paths: readonly string[], options: Omit<BundleOptions, 'methods'> & { methods?: MethodCatalog }): Promise<BuiltBundle> {
  return buildBundleWith(paths, { ...options, methods: options.methods ?? methodCatalog() });
}
