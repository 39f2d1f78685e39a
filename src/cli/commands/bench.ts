import { AmbiqaError } from '../../errors';

export const summary = '(bench: not implemented yet)';

export async function run(_argv: string[]): Promise<number> {
  throw new AmbiqaError('`ambiqa bench` is not implemented yet');
}
