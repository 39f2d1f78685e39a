import { AmbiqaError } from '../../errors';

export const summary = '(merge: not implemented yet)';

export async function run(_argv: string[]): Promise<number> {
  throw new AmbiqaError('`ambiqa merge` is not implemented yet');
}
