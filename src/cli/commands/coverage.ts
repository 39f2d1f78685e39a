import { AmbiqaError } from '../../errors';

export const summary = '(coverage: not implemented yet)';

export async function run(_argv: string[]): Promise<number> {
  throw new AmbiqaError('`ambiqa coverage` is not implemented yet');
}
