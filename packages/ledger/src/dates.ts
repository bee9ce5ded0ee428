import { DomainError, FIRST_DATE, isIsoDate, LAST_DATE } from '@firm/core';

export { isIsoDate };

export function checkDate(value: string, field: string): string {
  if (!isIsoDate(value)) {
    throw new DomainError(
      'VALIDATION_ERROR',
      `${field} must be a calendar date written YYYY-MM-DD, from ${FIRST_DATE} to ${LAST_DATE}`,
      [{ field, message: `not a YYYY-MM-DD date from ${FIRST_DATE} to ${LAST_DATE}` }],
    );
  }
  return value;
}

/** Both dates valid, and the start (when there is one) not after the end. */
export function checkDateRange(startDate: string | null, endDate: string): void {
  if (startDate !== null) checkDate(startDate, 'startDate');
  checkDate(endDate, 'endDate');
  if (startDate !== null && startDate > endDate) {
    throw new DomainError('VALIDATION_ERROR', 'startDate is after endDate', [
      { field: 'startDate', message: 'after endDate' },
    ]);
  }
}

/** Today's date in UTC, the default end of reports and balances. */
export const todayUtc = (): string => new Date().toISOString().slice(0, 10);

export function addDays(date: string, days: number): string {
  return new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);
}

/** First day of the fiscal year that contains `date`, for a year starting in `startMonth` (1-12). */
export function fiscalYearStart(date: string, startMonth: number): string {
  const year = Number(date.slice(0, 4));
  const month = Number(date.slice(5, 7));
  const startYear = month >= startMonth ? year : year - 1;
  return `${String(startYear).padStart(4, '0')}-${String(startMonth).padStart(2, '0')}-01`;
}
