import { AmbiqaError } from '../../errors';

export const summary = '(report: not implemented yet)';

export async function run(_argv: string[]): Promise<number> {
  throw new AmbiqaError('`ambiqa report` is not implemented yet');
}
