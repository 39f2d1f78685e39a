import { JsonlAppender, writeJsonlAtomic } from '../common/jsonl';
import { writeRunJson } from '../run-files';
import type { RunObserver } from './observers';
import type { RunDirPaths } from './run-dir';

/**
 * The run folder's files as an observer: each finished question's trace and then its row are
 * appended (fsynced) to `traces.jsonl` and `results.jsonl` — the trace first, so that a row marks
 * a question done — and at the end `metrics.json` is written. A finished run's files are then
 * rewritten from the rows the session kept in memory, in evaluation order with one line per
 * question, so that an interrupted and resumed run leaves the same files as an uninterrupted one
 * (nothing is read back).
 */
export function runFilesObserver(paths: Pick<RunDirPaths, 'results' | 'traces' | 'metrics'>): RunObserver {
  let results: JsonlAppender | undefined;
  let traces: JsonlAppender | undefined;
  const close = () => {
    results?.close();
    traces?.close();
  };
  return {
    name: 'run files',
    onStart() {
      results = new JsonlAppender(paths.results);
      traces = new JsonlAppender(paths.traces);
    },
    onQuestion(row, trace) {
      if (trace) traces!.append(trace);
      results!.append(row);
    },
    onEnd(end) {
      close();
      if (end.status === 'CRASHED') return;
      if (end.status === 'FINISHED') {
        writeJsonlAtomic(paths.results, end.results);
        writeJsonlAtomic(paths.traces, end.traces);
      }
      writeRunJson(paths.metrics, 'metrics', end.metrics);
    },
  };
}
