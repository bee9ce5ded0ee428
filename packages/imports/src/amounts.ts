/** The largest amount a line may carry, as the ledger's postings allow: cents that a JavaScript number holds exactly. */
export const MAX_CENTS = Number.MAX_SAFE_INTEGER;

const DECIMAL = /^(-)?(\d+)(?:\.(\d*))?$/;

/**
 * A decimal string as whole cents, exactly (no floating point): `12`, `12.5`, `12.50`, `-3.07`, with `,` as a
 * thousands separator when it groups digits by three. More than two decimal places is refused, not rounded.
 */
export function parseCents(text: string): { cents: number } | { error: string } {
  const raw = text.trim();
  if (raw === '') return { error: 'is empty' };
  const plain = /^-?\d{1,3}(,\d{3})+(\.\d*)?$/.test(raw) ? raw.replaceAll(',', '') : raw;
  const m = DECIMAL.exec(plain);
  if (!m) return { error: `"${raw}" is not a decimal number` };
  const [, minus, whole, fraction = ''] = m;
  if (fraction.length > 2) return { error: `"${raw}" has more than 2 decimal places` };
  const cents = BigInt(whole as string) * 100n + BigInt(fraction.padEnd(2, '0') || '0');
  if (cents > BigInt(MAX_CENTS)) return { error: `"${raw}" is too large` };
  const value = Number(cents);
  return { cents: minus && value !== 0 ? -value : value };
}

/** Cents as a decimal string, for messages: 12345 → "123.45". */
export function formatCents(cents: number): string {
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  return `${sign}${Math.trunc(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
}

const ISO_DATE = /^(\d{4})[-/.](\d{2})[-/.](\d{2})$/;

/** A calendar date as YYYY-MM-DD (also written with `/` or `.`), or why not. */
export function parseDate(text: string): { date: string } | { error: string } {
  const raw = text.trim();
  if (raw === '') return { error: 'is empty' };
  const m = ISO_DATE.exec(raw);
  if (!m) return { error: `"${raw}" is not a date (YYYY-MM-DD)` };
  const [, y, mo, d] = m as unknown as [string, string, string, string];
  const date = `${y}-${mo}-${d}`;
  const parsed = new Date(`${date}T00:00:00Z`);
  if (Number.isNaN(parsed.getTime()) || parsed.toISOString().slice(0, 10) !== date || y === '0000') {
    return { error: `"${raw}" is not a date on the calendar` };
  }
  return { date };
}
