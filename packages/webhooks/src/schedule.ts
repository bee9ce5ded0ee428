/**
 * When failed attempts are retried: the delay after the n-th failed attempt is the n-th entry, with
 * ±20% jitter so that receivers coming back from an outage are not hit by every sender at once.
 * Fourteen attempts over about three days (3 d 3 h 42 m without jitter); after the last one the
 * delivery is marked failed.
 */
export const RETRY_DELAYS_SECONDS: readonly number[] = [
  30,
  2 * 60,
  10 * 60,
  30 * 60,
  60 * 60,
  2 * 3600,
  4 * 3600,
  8 * 3600,
  12 * 3600,
  12 * 3600,
  12 * 3600,
  12 * 3600,
  12 * 3600,
];

export const MAX_ATTEMPTS = RETRY_DELAYS_SECONDS.length + 1;

/** A subscription whose endpoint has failed every attempt for this long is disabled. */
export const DISABLE_AFTER_FAILING_MS = 3 * 24 * 3600 * 1000;

const JITTER = 0.2;

/**
 * When to try again after `attempts` failed attempts, or null when the delivery has had its last.
 * `random` returns a number in [0, 1); 0.5 means no jitter.
 */
export function nextAttemptAt(attempts: number, now: Date, random: () => number): Date | null {
  const base = RETRY_DELAYS_SECONDS[attempts - 1];
  if (base === undefined) return null;
  const factor = 1 - JITTER + 2 * JITTER * random();
  return new Date(now.getTime() + Math.round(base * factor * 1000));
}
