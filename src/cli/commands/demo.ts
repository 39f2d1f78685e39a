import { AmbiqaError } from '../../errors';

export const summary = '(demo: not implemented yet)';

export async function run(_argv: string[]): Promise<number> {
  throw new AmbiqaError('`ambiqa demo` is not implemented yet');
}
