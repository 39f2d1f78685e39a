/**
 * An error meant for a person: `message` says what went wrong and names the file, field or
 * option; `hint` says how to fix it. The CLI prints both without a stack trace.
 */
export class AmbiqaError extends Error {
  constructor(
    message: string,
    readonly hint?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'AmbiqaError';
  }
}

/** Render any thrown value the way the CLI shows it: one clear message, the fix, no stack. */
export function describeError(error: unknown): string {
  if (error instanceof AmbiqaError) {
    return error.hint ? `${error.message}\n  fix: ${error.hint}` : error.message;
  }
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}
