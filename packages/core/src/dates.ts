/** The dates the books accept: an accounting record before 1900 or after 9999 is a typing mistake. */
export const FIRST_DATE = '1900-01-01';
export const LAST_DATE = '9999-12-31';

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** True for a real calendar date written YYYY-MM-DD from FIRST_DATE to LAST_DATE (2026-02-30 is not one). */
export function isIsoDate(value: string): boolean {
  const m = ISO_DATE.exec(value);
  if (!m || value < FIRST_DATE) return false;
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return d.toISOString().slice(0, 10) === value;
}

/**
 * True for a real calendar date written YYYY-MM-DD in the years Postgres' `date` holds as written, 0001 to 9999
 * (2026-02-30 and 2023-02-29 are not dates).
 */
export function isCalendarDate(value: string): boolean {
  const m = ISO_DATE.exec(value);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (y < 1) return false;
  // setUTCFullYear, not Date.UTC: Date.UTC reads the years 0 to 99 as 1900 to 1999.
  const date = new Date(0);
  date.setUTCFullYear(y, mo - 1, d);
  return date.getUTCFullYear() === y && date.getUTCMonth() === mo - 1 && date.getUTCDate() === d;
}

const ISO_TIMESTAMP =
  /^(\d{4}-\d{2}-\d{2})[Tt ]([01]\d|2[0-3]):([0-5]\d):([0-5]\d)(?:\.\d{1,9})?(?:[Zz]|[+-](0\d|1[0-5]):([0-5]\d))$/;

/**
 * True for an RFC 3339 date-time that Postgres can hold as a timestamptz: a real calendar date from year 0001 to
 * 9999 and a UTC offset within ±15:59 (Postgres refuses larger offsets and the year 0000, which RFC 3339 allows).
 */
export function isIsoTimestamp(value: string): boolean {
  const m = ISO_TIMESTAMP.exec(value);
  return m !== null && isCalendarDate(m[1] as string);
}
