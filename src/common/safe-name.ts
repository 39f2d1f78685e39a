import { AmbiqaError } from '../errors';

/**
 * Names that come from outside (an MLflow server's run names and tags, a dataset's ids, a lock
 * file's fields, a command-line value) become folder and file names only through this module.
 * A name from a server such as `../../../home/me/victim` joined to a run folder writes outside
 * it; one with a newline or a terminal escape sequence breaks a log line or the user's terminal.
 *
 * The rule is narrow on purpose (a whitelist, not a list of bad characters): one path segment of
 * letters, digits and `._=,+-`, starting with a letter or digit (so never `.`, `..` or a hidden
 * file), at most `MAX_NAME_LENGTH` characters (a file system allows 255 bytes; suffixes such as
 * `.shard-3of8` and `.partial-…` are added to names).
 */
export const MAX_NAME_LENGTH = 128;
const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._=,+-]*$/;

/** Whether `name` may be used as one path segment as it is. */
export function isSafeName(name: unknown): name is string {
  return typeof name === 'string' && name.length <= MAX_NAME_LENGTH && SAFE_NAME.test(name);
}

/**
 * `name` when it is a safe path segment; otherwise an AmbiqaError in one line naming `what`
 * (e.g. `MLflow run abc123's runName`) and showing the name with control characters escaped.
 */
export function safeName(name: unknown, what: string, hint?: string): string {
  if (isSafeName(name)) return name;
  const shown = typeof name === 'string' ? quoteForDisplay(name, 80) : String(name);
  throw new AmbiqaError(
    `${what} ${shown} cannot name a file or folder: it must be letters, digits and ._=,+- (starting with a letter or digit), at most ${MAX_NAME_LENGTH} characters`,
    hint,
  );
}

/**
 * Text from outside (a lock file's host or command, a server's reply) made safe to print on one
 * terminal line: C0 and C1 control characters, DEL and the Unicode line and bidi controls become
 * `\xNN` / `\uNNNN` escapes (so an escape sequence shows as text instead of acting on the
 * terminal), and text longer than `max` characters is cut with `…`.
 */
export function escapeControl(text: string, max = 200): string {
  const cut = text.length > max ? `${text.slice(0, max)}…` : text;
  return cut.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, (c) => {
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** `text` in double quotes with control characters escaped: for names in messages. */
export function quoteForDisplay(text: string, max = 200): string {
  return `"${escapeControl(text, max).replace(/"/g, '\\"')}"`;
}
