import { isDomainError } from '@firm/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { divideHalfEven, lineAmountCents, lineTaxCents, quantityText } from './rounding';

describe('half-even rounding per line', () => {
  it.each([
    [1.5, 1, 2],
    [2.5, 1, 2],
    [0.5, 1, 0],
    [0.0001, 5000, 0],
    [0.0003, 5000, 2],
    [0.0001, 15000, 2],
    [3, 333, 999],
    [1.25, 1001, 1251],
  ])('%s × %s cents = %s cents', (quantity, price, expected) => {
    expect(lineAmountCents(quantity, price)).toBe(expected);
  });

  it('rounds tax half-even: 8.25 % of 1000 cents is 82.5 -> 82, of 1010 is 83.325 -> 83', () => {
    expect(lineTaxCents(1000, 825)).toBe(82);
    expect(lineTaxCents(1010, 825)).toBe(83);
    expect(lineTaxCents(1030, 825)).toBe(85);
    expect(lineTaxCents(200, 2500)).toBe(50);
  });

  it('refuses more than four decimals and non-positive quantities', () => {
    for (const q of [0.00001, 0, -1, Number.NaN]) {
      let err: unknown;
      try {
        lineAmountCents(q, 100);
      } catch (e) {
        err = e;
      }
      expect(isDomainError(err) && err.code).toBe('VALIDATION_ERROR');
    }
  });

  it('is within half a cent of the exact product and ties go to even', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: -(10n ** 15n), max: 10n ** 15n }),
        fc.bigInt({ min: 1n, max: 10n ** 6n }),
        (n, d) => {
          const q = divideHalfEven(n, d);
          const diff2 = (q * d - n) * 2n;
          const absDiff2 = diff2 < 0n ? -diff2 : diff2;
          expect(absDiff2 <= d).toBe(true);
          if (absDiff2 === d) expect(q % 2n).toBe(0n);
        },
      ),
    );
  });

  it('takes every quantity of at most four decimals up to the maximum, however it rounds in binary', () => {
    // 1655225.4366 × 10000 is 16552254366.000002 in binary floating point.
    expect(lineAmountCents(1_655_225.4366, 10_000)).toBe(16_552_254_366);
    expect(quantityText(1_655_225.4366)).toBe('1655225.4366');
    expect(lineAmountCents(432_494_527.072, 1)).toBe(432_494_527);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10_000_000_000_000 }), (scaled) => {
        const quantity = Number((scaled / 10_000).toFixed(4));
        expect(lineAmountCents(quantity, 10_000)).toBe(scaled);
        expect(quantityText(quantity)).toBe(
          `${Math.floor(scaled / 10_000)}.${String(scaled % 10_000).padStart(4, '0')}`,
        );
      }),
      { numRuns: 2_000 },
    );
  });

  it('refuses five decimals on large quantities too', () => {
    for (const q of [1_655_225.43661, 999_999_999.00001, 1e-7]) {
      expect(() => lineAmountCents(q, 1)).toThrow(/four decimals/);
    }
  });
});
