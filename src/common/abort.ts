/**
 * Abort plumbing shared by the retry core, the LLM limiter and the MLflow client.
 *
 * A run hands one AbortSignal to every model call. Adding an 'abort' listener per waiting call
 * would make Node print `MaxListenersExceededWarning` as soon as more than ten calls wait (a
 * queue behind the limiter, a burst of retries sleeping at once). So every waiter registers here
 * instead: one real listener per signal, fanning out to a set of callbacks.
 */
const waiters = new WeakMap<AbortSignal, Set<() => void>>();

/** Run `callback` once when `signal` aborts; returns a function that unregisters it. */
export function onAbort(signal: AbortSignal, callback: () => void): () => void {
  let existing = waiters.get(signal);
  if (!existing) {
    const created = new Set<() => void>();
    existing = created;
    waiters.set(signal, created);
    signal.addEventListener(
      'abort',
      () => {
        waiters.delete(signal);
        for (const f of [...created]) f();
      },
      { once: true },
    );
  }
  const set = existing;
  const entry = () => callback();
  set.add(entry);
  return () => {
    set.delete(entry);
  };
}

export function throwIfAborted(signal?: AbortSignal): void {
  if (signal?.aborted) throw signal.reason ?? new DOMException('aborted', 'AbortError');
}

/** One signal that fires when any of `signals` fires; `dispose` detaches it from them. */
export function anySignal(signals: Array<AbortSignal | undefined>): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const detach: Array<() => void> = [];
  for (const s of signals) {
    if (!s) continue;
    if (s.aborted) {
      controller.abort(s.reason);
      break;
    }
    detach.push(onAbort(s, () => controller.abort(s.reason)));
  }
  return {
    signal: controller.signal,
    dispose: () => {
      for (const f of detach) f();
    },
  };
}

/**
 * Settle with `promise`, or reject with the signal's reason as soon as it aborts: a task that
 * ignores its signal (a hung socket in a library that does not listen) must not hang the caller.
 */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const detach = onAbort(signal, () => reject(signal.reason));
    promise.then(
      (v) => {
        detach();
        resolve(v);
      },
      (err) => {
        detach();
        reject(err);
      },
    );
  });
}

/** Wait `ms`, or reject with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    let detach = () => {};
    const timer = setTimeout(() => {
      detach();
      resolve();
    }, ms);
    if (signal) {
      detach = onAbort(signal, () => {
        clearTimeout(timer);
        reject(signal.reason);
      });
    }
  });
}
