import { DomainError, type ErrorDetail } from '@firm/core';
import { addDays, fiscalYearStart, isIsoDate } from './dates';

export const FREQUENCIES = ['weekly', 'monthly', 'quarterly', 'yearly'] as const;
export type Frequency = (typeof FREQUENCIES)[number];
export const WEEKEND_RULES = ['none', 'previous_business_day', 'next_business_day'] as const;
export type WeekendRule = (typeof WEEKEND_RULES)[number];

/**
 * When a scheduled entry runs. Weekly: every `interval` weeks on `dayOfWeek` (1 Monday .. 7 Sunday), from the first
 * such day on or after `startDate`. Monthly, quarterly, yearly: every `interval` months, quarters or years counted
 * from `startDate`'s month, on `dayOfMonth` (1-31; 0 for the last day; a day the month lacks is its last day). An
 * occurrence is a nominal date; `weekendRule` moves the entry date of one that falls on a Saturday or Sunday.
 */
export interface Schedule {
  frequency: Frequency;
  interval: number;
  dayOfMonth: number | null;
  dayOfWeek: number | null;
  weekendRule: WeekendRule;
  startDate: string;
  endDate: string | null;
}

const DAY_MS = 86_400_000;
const toDay = (date: string) => Date.parse(`${date}T00:00:00Z`) / DAY_MS;
const fromDay = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10);
/** ISO weekday: 1 Monday .. 7 Sunday. */
const isoWeekday = (date: string) => ((new Date(`${date}T00:00:00Z`).getUTCDay() + 6) % 7) + 1;
const daysInMonth = (year: number, month0: number) => new Date(Date.UTC(year, month0 + 1, 0)).getUTCDate();
const MONTHS: Record<Exclude<Frequency, 'weekly'>, number> = { monthly: 1, quarterly: 3, yearly: 12 };

/** The schedule's first occurrence on or after `from`, or null when none is left before its end. */
export function occurrenceOnOrAfter(s: Schedule, from: string): string | null {
  const target = from > s.startDate ? from : s.startDate;
  let found: string;
  if (s.frequency === 'weekly') {
    const start = toDay(s.startDate);
    const first = start + (((s.dayOfWeek as number) - isoWeekday(s.startDate) + 7) % 7);
    const step = 7 * s.interval;
    const k = Math.max(0, Math.ceil((toDay(target) - first) / step));
    found = fromDay(first + k * step);
  } else {
    const step = MONTHS[s.frequency] * s.interval;
    const [y0, m0] = s.startDate.split('-').map(Number) as [number, number];
    const [ty, tm] = target.split('-').map(Number) as [number, number];
    const base = y0 * 12 + (m0 - 1);
    let k = Math.max(0, Math.floor((ty * 12 + (tm - 1) - base) / step));
    for (;;) {
      const index = base + k * step;
      const year = Math.floor(index / 12);
      const month0 = index % 12;
      const last = daysInMonth(year, month0);
      const day = s.dayOfMonth === 0 || (s.dayOfMonth as number) > last ? last : (s.dayOfMonth as number);
      const date = `${String(year).padStart(4, '0')}-${String(month0 + 1).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
      if (date >= target) {
        found = date;
        break;
      }
      k++;
    }
  }
  return s.endDate !== null && found > s.endDate ? null : found;
}

/** The occurrence after `occurrence`, or null. */
export const occurrenceAfter = (s: Schedule, occurrence: string): string | null =>
  occurrenceOnOrAfter(s, addDays(occurrence, 1));

/** The date an occurrence's entry is posted on: moved off a weekend by the rule (public holidays are not known). */
export function entryDateOf(occurrence: string, rule: WeekendRule): string {
  const weekday = isoWeekday(occurrence);
  if (rule === 'none' || weekday < 6) return occurrence;
  if (rule === 'previous_business_day') return addDays(occurrence, weekday === 6 ? -1 : -2);
  return addDays(occurrence, weekday === 6 ? 2 : 1);
}

/**
 * The earliest start a schedule may be given on `today`: the first day of the organization's previous fiscal year.
 * That year is still open while its accounts are being finished (accruals and depreciation are often set up then,
 * from its first month); the years before it are reported and filed, and a schedule reaching into them would post
 * years of entries at once. So a new schedule's backlog is under two years: at most 24 monthly or 104 weekly
 * occurrences.
 */
export function earliestStartDate(today: string, fiscalYearStartMonth: number): string {
  const start = fiscalYearStart(today, fiscalYearStartMonth);
  return `${String(Number(start.slice(0, 4)) - 1).padStart(4, '0')}${start.slice(4)}`;
}

/**
 * Checks a schedule, naming every field that is wrong: a frequency and weekend rule it knows, an interval of 1-120,
 * `dayOfWeek` (and no `dayOfMonth`) for a weekly one, `dayOfMonth` (and no `dayOfWeek`) for the others, dates that
 * exist, a start not before `earliestStart` when one is given, and an end not before the start.
 */
export function checkSchedule(
  s: Partial<Record<keyof Schedule, unknown>>,
  options: { earliestStart?: string } = {},
): Schedule {
  const details: ErrorDetail[] = [];
  const bad = (field: string, message: string) => details.push({ field: `schedule.${field}`, message });
  if (!FREQUENCIES.includes(s.frequency as Frequency)) bad('frequency', `must be one of ${FREQUENCIES.join(', ')}`);
  const interval = s.interval ?? 1;
  if (!Number.isInteger(interval) || (interval as number) < 1 || (interval as number) > 120)
    bad('interval', 'must be a whole number from 1 to 120');
  const rule = s.weekendRule ?? 'none';
  if (!WEEKEND_RULES.includes(rule as WeekendRule)) bad('weekendRule', `must be one of ${WEEKEND_RULES.join(', ')}`);
  const weekly = s.frequency === 'weekly';
  const dayOfWeek = s.dayOfWeek ?? null;
  const dayOfMonth = s.dayOfMonth ?? null;
  if (weekly) {
    if (dayOfMonth !== null) bad('dayOfMonth', 'a weekly schedule runs on a dayOfWeek, not a dayOfMonth');
    if (!Number.isInteger(dayOfWeek) || (dayOfWeek as number) < 1 || (dayOfWeek as number) > 7)
      bad('dayOfWeek', 'is required for a weekly schedule: 1 (Monday) to 7 (Sunday)');
  } else if (FREQUENCIES.includes(s.frequency as Frequency)) {
    if (dayOfWeek !== null) bad('dayOfWeek', `a ${String(s.frequency)} schedule runs on a dayOfMonth, not a dayOfWeek`);
    if (!Number.isInteger(dayOfMonth) || (dayOfMonth as number) < 0 || (dayOfMonth as number) > 31)
      bad('dayOfMonth', 'is required: 1 to 31, or 0 for the last day of the month');
  }
  if (typeof s.startDate !== 'string' || !isIsoDate(s.startDate)) bad('startDate', 'must be a YYYY-MM-DD date');
  else if (options.earliestStart !== undefined && s.startDate < options.earliestStart)
    bad('startDate', `may not be before ${options.earliestStart}, the first day of the previous fiscal year`);
  const endDate = s.endDate ?? null;
  if (endDate !== null && (typeof endDate !== 'string' || !isIsoDate(endDate)))
    bad('endDate', 'must be a YYYY-MM-DD date or null');
  else if (endDate !== null && typeof s.startDate === 'string' && endDate < s.startDate)
    bad('endDate', 'is before startDate');
  if (details.length > 0) throw new DomainError('VALIDATION_ERROR', 'the schedule is not valid', details);
  return {
    frequency: s.frequency as Frequency,
    interval: interval as number,
    dayOfMonth: weekly ? null : (dayOfMonth as number),
    dayOfWeek: weekly ? (dayOfWeek as number) : null,
    weekendRule: rule as WeekendRule,
    startDate: s.startDate as string,
    endDate: endDate as string | null,
  };
}
