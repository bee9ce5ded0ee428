import { type DomainError, isDomainError } from './errors';

/** The DomainError a promise is refused with; anything else (a resolution, another error) fails the test. */
export async function refusal(p: Promise<unknown>): Promise<DomainError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  if (!isDomainError(err)) throw new Error(`expected a refusal, got ${String(err)}`);
  return err;
}
