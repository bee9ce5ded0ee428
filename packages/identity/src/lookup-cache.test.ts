import { describe, expect, it } from 'vitest';
import { LookupCache } from './lookup-cache';

describe('LookupCache', () => {
  it('keeps an entry for its time to live, then forgets it', () => {
    const cache = new LookupCache<string>(1000);
    cache.set('k', 'v', cache.generation, 10_000);
    expect(cache.get('k', 10_999)).toBe('v');
    expect(cache.get('k', 11_000)).toBeUndefined();
    expect(cache.get('k', 10_500)).toBeUndefined();
  });

  it('stores nothing from a lookup that began before a clear', () => {
    const cache = new LookupCache<string>(1000);
    const before = cache.generation;
    cache.clear();
    cache.set('k', 'stale', before, 0);
    expect(cache.get('k', 1)).toBeUndefined();
    cache.set('k', 'fresh', cache.generation, 0);
    expect(cache.get('k', 1)).toBe('fresh');
  });

  it('keeps nothing with a time to live of 0', () => {
    const cache = new LookupCache<string>(0);
    cache.set('k', 'v', cache.generation, 0);
    expect(cache.get('k', 0)).toBeUndefined();
  });

  it('drops its oldest entry rather than grow past its bound', () => {
    const cache = new LookupCache<number>(1000, 3);
    for (let i = 0; i < 4; i++) cache.set(`k${i}`, i, cache.generation, 0);
    expect(cache.get('k0', 1)).toBeUndefined();
    expect([cache.get('k1', 1), cache.get('k2', 1), cache.get('k3', 1)]).toEqual([1, 2, 3]);
    cache.set('k1', 10, cache.generation, 2);
    cache.set('k4', 4, cache.generation, 2);
    expect(cache.get('k2', 3)).toBeUndefined();
    expect([cache.get('k1', 3), cache.get('k3', 3), cache.get('k4', 3)]).toEqual([10, 3, 4]);
  });
});
