import { existsSync, readFileSync } from 'node:fs';
import YAML from 'yaml';
import { AmbiqaError } from '../errors';

/**
 * Reads a YAML file that must hold a mapping (configs, resolved run configs, sweep files), with
 * one-line errors naming the file: missing, not YAML (first line of the parser's message), or
 * not a mapping. `what` says what the mapping should contain, for the last of these.
 */
export function readYamlMapping(file: string, options: { what?: string; missingHint?: string } = {}): Record<string, unknown> {
  if (!existsSync(file)) throw new AmbiqaError(`config file not found: ${file}`, options.missingHint);
  let raw: unknown;
  try {
    raw = YAML.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new AmbiqaError(`${file}: not valid YAML: ${(error as Error).message.split('\n')[0]}`, 'fix the YAML syntax');
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new AmbiqaError(`${file}: must be a YAML mapping${options.what ? ` with ${options.what}` : ''}`);
  }
  return raw as Record<string, unknown>;
}
