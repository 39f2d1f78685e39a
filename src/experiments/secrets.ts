import { REDACTED, redactDeep } from '../common/secrets';

/**
 * Secrets never reach `config.yaml`, MLflow params or artifacts. src/common/secrets.ts decides
 * what a secret is (secret-named keys, known secret values such as the API key the provider
 * read, URL passwords); this applies it to a whole nested config before it is written anywhere.
 */
export { REDACTED };

export function redactConfig<T>(value: T): T {
  return redactDeep(value, { maskSecretKeys: true });
}
