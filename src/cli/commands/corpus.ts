import { AmbiqaError } from '../../errors';

export const summary = '(corpus: not implemented yet)';

export async function run(_argv: string[]): Promise<number> {
  throw new AmbiqaError('`ambiqa corpus` is not implemented yet');
}
