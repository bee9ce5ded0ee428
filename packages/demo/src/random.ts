/**
 * A small seeded pseudo-random generator (mulberry32), so that the demo's history is the same on every run with the
 * same clock: no figure of the demo depends on Math.random.
 */
export interface Random {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [min, max], both included. */
  int(min: number, max: number): number;
  /** `cents` moved by up to `spread` (0.1 = ±10%), rounded to whole dollars. */
  around(cents: number, spread: number): number;
  /** True with probability `p`. */
  chance(p: number): boolean;
}

export function mulberry32(seed: number): Random {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  return {
    next,
    int,
    around: (cents, spread) => Math.round((cents * (1 + (next() * 2 - 1) * spread)) / 100) * 100,
    chance: (p) => next() < p,
  };
}
