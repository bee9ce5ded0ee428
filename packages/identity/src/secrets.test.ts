import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hashPassword, verifyPassword } from './passwords';
import { generateSecret, hashSecret, isWellFormedSecret } from './secrets';

describe('prefixed secrets', () => {
  it('are well formed, long and distinct', () => {
    const a = generateSecret('dk_live_');
    const b = generateSecret('dk_live_');
    expect(a).toMatch(/^dk_live_[0-9A-Za-z]{38}$/);
    expect(a).not.toBe(b);
    expect(isWellFormedSecret('dk_live_', a)).toBe(true);
    expect(isWellFormedSecret('mcp_at_', a)).toBe(false);
  });

  it('reject any single-character change through the checksum', () => {
    const key = generateSecret('dk_live_');
    const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
    fc.assert(
      fc.property(fc.integer({ min: 8, max: key.length - 1 }), fc.constantFrom(...alphabet), (i, ch) => {
        fc.pre(key[i] !== ch);
        const typo = key.slice(0, i) + ch + key.slice(i + 1);
        return !isWellFormedSecret('dk_live_', typo);
      }),
      { numRuns: 500 },
    );
  });

  it('reject truncated, extended and non-base62 keys', () => {
    const key = generateSecret('dk_live_');
    expect(isWellFormedSecret('dk_live_', key.slice(0, -1))).toBe(false);
    expect(isWellFormedSecret('dk_live_', `${key}A`)).toBe(false);
    expect(isWellFormedSecret('dk_live_', `${key.slice(0, -2)}-_`)).toBe(false);
  });

  it('hash to a stable SHA-256 that is not the key', () => {
    const key = generateSecret('dk_live_');
    expect(hashSecret(key)).toBe(hashSecret(key));
    expect(hashSecret(key)).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('passwords', () => {
  it('hash with scrypt and verify', async () => {
    const stored = await hashPassword('hunter2 is not a password');
    expect(stored).toMatch(/^scrypt\$32768\$8\$1\$/);
    expect(await verifyPassword('hunter2 is not a password', stored)).toBe(true);
    expect(await verifyPassword('hunter3 is not a password', stored)).toBe(false);
    expect(await verifyPassword('x', 'bcrypt$whatever')).toBe(false);
  });

  it('salt every hash', async () => {
    expect(await hashPassword('same')).not.toBe(await hashPassword('same'));
  });
});
