/**
 * The layers of src/ and which way imports may run (`npm run lint:deps`, run by .ci/run).
 *
 * Data flows one way: CLI → experiments → pipelines → (llm, retrieval) → trace → metrics →
 * tracking / plots / report. Imports follow the code's dependencies, which are not quite the
 * data's arrows (metrics read traces, so metrics import trace, not the other way), so each
 * domain lists the domains it may import; everything else is an upward (or sideways) import
 * and fails the check. Type-only imports count: a type from a higher layer couples just as much.
 *
 *   cli                         the commands
 *   index.ts, notebook          the public entry and tslab helpers
 *   experiments                 config, runner, sweep, merge: puts the parts together
 *   pipelines | report          methods (from llm, retrieval, trace; their analysis and figures from
 *                               metrics and plots); the HTML report (from plots)
 *   plots                       figures from run files
 *   tracking                    MLflow client, OTel export of traces
 *   metrics                     scores from run files, traces and data
 *   run-files                   the shapes of results.jsonl, traces.jsonl, metrics.json, …
 *   trace                       the trace every pipeline writes
 *   llm | retrieval             the model contract; corpora and retrievers
 *   setup                       fetching models (used by cli and experiments only)
 *   datasets, text              loaders; Porter and Python-compatible string helpers
 *   common, config, errors.ts   helpers, paths, the model manifest and catalog, AmbiqaError
 */
const bottom = ['common', 'config', 'errors'];

/** domain → the domains (besides itself and the bottom) it may import. */
const allowed = {
  common: [],
  config: [],
  errors: [],
  text: [],
  datasets: ['text'],
  setup: [],
  llm: ['text'],
  retrieval: ['text', 'datasets'],
  trace: ['llm', 'retrieval'],
  'run-files': ['trace', 'llm', 'retrieval'],
  metrics: ['run-files', 'trace', 'llm', 'retrieval', 'datasets', 'text'],
  tracking: ['metrics', 'run-files', 'trace', 'llm', 'retrieval', 'datasets', 'text'],
  plots: ['tracking', 'metrics', 'run-files', 'trace', 'llm', 'retrieval', 'datasets', 'text'],
  report: ['plots', 'tracking', 'metrics', 'run-files', 'trace', 'llm', 'retrieval', 'datasets', 'text'],
  // A method's folder also holds its analysis and figures (its registry entry's `method`), so it
  // may import the layers its traces flow into; they find it through their registries.
  pipelines: ['plots', 'metrics', 'run-files', 'trace', 'llm', 'retrieval', 'datasets', 'text'],
  experiments: ['pipelines', 'report', 'plots', 'tracking', 'metrics', 'run-files', 'trace', 'llm', 'retrieval', 'datasets', 'text', 'setup'],
  notebook: ['experiments', 'pipelines', 'report', 'plots', 'tracking', 'metrics', 'run-files', 'trace', 'llm', 'retrieval', 'datasets', 'text'],
  index: ['notebook', 'experiments', 'pipelines', 'report', 'plots', 'tracking', 'metrics', 'run-files', 'trace', 'llm', 'retrieval', 'datasets', 'text'],
  cli: ['notebook', 'experiments', 'pipelines', 'report', 'plots', 'tracking', 'metrics', 'run-files', 'trace', 'llm', 'retrieval', 'datasets', 'text', 'setup'],
};

/** The path pattern of a domain: a folder under src/, or one of the two top-level files. */
function domainPath(name) {
  if (name === 'errors') return '^src/errors\\.ts$';
  if (name === 'index') return '^src/index\\.ts$';
  return `^src/${name}/`;
}

const layerRules = Object.entries(allowed).map(([from, may]) => ({
  name: `layer-${from}`,
  comment: `${from} may import only ${[...may, ...bottom].join(', ')} (see .dependency-cruiser.cjs)`,
  severity: 'error',
  from: { path: domainPath(from) },
  to: {
    path: '^src/',
    pathNot: [from, ...may, ...bottom].map(domainPath),
  },
}));

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: 'no-circular',
      comment:
        'an import cycle means a contract takes a type from an implementation: move the type into the contract (types.ts, score.ts) so the implementation imports it, never the other way',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'src-not-to-tests',
      comment: 'library code must not import tests, benchmarks or scripts',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(test|bench|scripts)/' },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'an import that resolves to nothing is a typo or a missing dependency',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.mjs', '.cjs', '.json', '.d.ts'],
    },
    exclude: { path: '\\.(png|ipynb)$' },
  },
};
