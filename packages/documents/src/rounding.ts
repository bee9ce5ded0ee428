import { DomainError } from '@firm/core';

/** Quantities carry at most four decimals; they are held as integers of 1/10000. */
export const QUANTITY_SCALE = 10_000;

/** Rounds numerator / denominator (denominator > 0) to the nearest integer, ties to the even one. */
export function divideHalfEven(numerator: bigint, denominator: bigint): bigint {
  const negative = numerator < 0n;
  const n = negative ? -numerator : numerator;
  let q = n / denominator;
  const twice = (n % denominator) * 2n;
  if (twice > denominator || (twice === denominator && q % 2n === 1n)) q += 1n;
  return negative ? -q : q;
}

/**
 * The quantity in 1/10000 units, or a VALIDATION_ERROR when it has more than four decimals or is not positive.
 * The decimals are read from the shortest decimal that round-trips to the number (what the caller wrote), not
 * from quantity × 10000, which binary floating point puts off a whole number for large quantities
 * (1655225.4366 × 10000 = 16552254366.000002).
 */
export function scaledQuantity(quantity: number, field: string): bigint {
  const digits = Number.isFinite(quantity) && quantity > 0 ? /^(\d+)(?:\.(\d{1,4}))?$/.exec(String(quantity)) : null;
  if (!digits) {
    throw new DomainError('VALIDATION_ERROR', `${field} must be greater than zero with at most four decimals`, [
      { field, message: 'must be greater than zero with at most four decimals' },
    ]);
  }
  return BigInt(digits[1] as string) * BigInt(QUANTITY_SCALE) + BigInt((digits[2] ?? '').padEnd(4, '0'));
}

/** A line's amount: quantity × unit price, rounded half-even to the cent, per line. */
export function lineAmountCents(quantity: number, unitPriceCents: number, field = 'quantity'): number {
  const amount = divideHalfEven(scaledQuantity(quantity, field) * BigInt(unitPriceCents), BigInt(QUANTITY_SCALE));
  return checkSafe(amount, field);
}

/** A line's tax: amount × rate (basis points), rounded half-even to the cent, per line. */
export function lineTaxCents(amountCents: number, rateBps: number): number {
  return checkSafe(divideHalfEven(BigInt(amountCents) * BigInt(rateBps), 10_000n), 'taxRateId');
}

function checkSafe(value: bigint, field: string): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new DomainError('VALIDATION_ERROR', `${field} gives an amount too large to represent exactly`, [
      { field, message: 'amount too large' },
    ]);
  }
  return Number(value);
}

/** The quantity as stored (numeric(18,4)) and as the API returns it. */
export function quantityText(quantity: number): string {
  const scaled = scaledQuantity(quantity, 'quantity');
  const scale = BigInt(QUANTITY_SCALE);
  return `${scaled / scale}.${(scaled % scale).toString().padStart(4, '0')}`;
}
