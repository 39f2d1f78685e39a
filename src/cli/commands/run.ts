import { AmbiqaError } from '../../errors';

export const summary = '(run: not implemented yet)';

export async function run(_argv: string[]): Promise<number> {
  throw new AmbiqaError('`ambiqa run` is not implemented yet');
}
