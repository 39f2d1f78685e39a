import { AmbiqaError } from '../../errors';

export const summary = '(setup: not implemented yet)';

export async function run(_argv: string[]): Promise<number> {
  throw new AmbiqaError('`ambiqa setup` is not implemented yet');
}
