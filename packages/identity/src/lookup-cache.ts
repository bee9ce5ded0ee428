/**
 * A small per-process cache of lookups that every request repeats (an API key and the organization it names),
 * each entry kept for at most `ttlMs`. A change this process makes calls `clear()`; a change made elsewhere (another
 * process, the CLI, manual SQL) is seen once the entry expires.
 *
 * `clear()` also starts a new generation: a lookup that began before it stores nothing, so a read that raced a
 * change cannot put the old value back.
 */
export class LookupCache<T> {
  readonly #entries = new Map<string, { value: T; expiresAt: number }>();
  #generation = 0;

  constructor(
    readonly ttlMs: number,
    readonly maxEntries = 10_000,
  ) {}

  /** Taken before a lookup and handed back to `set`. */
  get generation(): number {
    return this.#generation;
  }

  get(key: string, now = Date.now()): T | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt > now) return entry.value;
    this.#entries.delete(key);
    return undefined;
  }

  /** Keeps `value` unless the cache is off or was cleared since `generation` was taken. */
  set(key: string, value: T, generation: number, now = Date.now()): void {
    if (this.ttlMs <= 0 || generation !== this.#generation) return;
    this.#entries.delete(key);
    if (this.#entries.size >= this.maxEntries) {
      // Entries are kept in the order they were set: the first is the oldest.
      const oldest = this.#entries.keys().next();
      if (!oldest.done) this.#entries.delete(oldest.value);
    }
    this.#entries.set(key, { value, expiresAt: now + this.ttlMs });
  }

  clear(): void {
    this.#entries.clear();
    this.#generation++;
  }
}
