import { AmbiqaError } from '../../errors';

export const summary = '(sweep: not implemented yet)';

export async function run(_argv: string[]): Promise<number> {
  throw new AmbiqaError('`ambiqa sweep` is not implemented yet');
}
