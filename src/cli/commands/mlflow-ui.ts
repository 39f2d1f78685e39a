import { AmbiqaError } from '../../errors';

export const summary = '(mlflow-ui: not implemented yet)';

export async function run(_argv: string[]): Promise<number> {
  throw new AmbiqaError('`ambiqa mlflow-ui` is not implemented yet');
}
