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
