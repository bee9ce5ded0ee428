import { describe, expect, it } from 'vitest';
import { isUuid, newId } from './ids';

describe('newId', () => {
  it('makes version-7 UUIDs that sort in the order they were made, even within one millisecond', () => {
    const ids = Array.from({ length: 5000 }, () => newId());
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    for (const id of ids) {
      expect(isUuid(id)).toBe(true);
      expect(id[14]).toBe('7');
      expect('89ab').toContain(id[19]);
    }
    // Its first twelve hex digits are the millisecond it was made.
    const ms = parseInt((ids[0] as string).replace(/-/g, '').slice(0, 12), 16);
    expect(Math.abs(ms - Date.now())).toBeLessThan(60_000);
  });
});
