/**
 * `buildReport(dir)` for notebooks and the library entry: the report pipeline (src/report/build.ts)
 * with the method catalog of every registered pipeline, built here because the report layer may
 * not import the pipelines. A pipeline registered in the notebook before the call is in it.
 */
import { methodCatalog } from '../pipelines/registry';
import type { MethodCatalog } from '../plots/methods';
import { buildReport as buildReportWith, type BuildReportOptions, type BuiltReport } from '../report/build';

export function buildReport(dir: string, options: Omit<BuildReportOptions, 'methods'> & { methods?: MethodCatalog } = {}): BuiltReport {
  return buildReportWith(dir, { ...options, methods: options.methods ?? methodCatalog() });
}
