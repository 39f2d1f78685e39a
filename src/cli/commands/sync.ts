import { AmbiqaError } from '../../errors';

export const summary = '(sync: not implemented yet)';

export async function run(_argv: string[]): Promise<number> {
  throw new AmbiqaError('`ambiqa sync` is not implemented yet');
}
