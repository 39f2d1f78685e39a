import { AmbiqaError } from '../../errors';

export const summary = '(notebook: not implemented yet)';

export async function run(_argv: string[]): Promise<number> {
  throw new AmbiqaError('`ambiqa notebook` is not implemented yet');
}
