import { AmbiqaError } from '../../errors';

export const summary = '(score: not implemented yet)';

export async function run(_argv: string[]): Promise<number> {
  throw new AmbiqaError('`ambiqa score` is not implemented yet');
}
