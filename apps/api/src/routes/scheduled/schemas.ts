import { Type } from 'typebox';
import { DataOf, IsoDate, Timestamp, Uuid } from '../../schemas';
import { CompanyJournalLine } from '../posting/schemas';

const strict = { additionalProperties: false } as const;
const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

const ScheduleFields = {
  frequency: Type.Enum(['weekly', 'monthly', 'quarterly', 'yearly']),
  interval: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 120, description: 'Every n weeks, months, quarters or years (default 1).' }),
  ),
  dayOfMonth: Type.Optional(
    Type.Union([Type.Integer({ minimum: 0, maximum: 31 }), Type.Null()], {
      description:
        'Monthly, quarterly and yearly schedules (required there, refused on a weekly one): 1-31, or 0 for the last ' +
        'day of the month; a day the month lacks is its last day.',
    }),
  ),
  dayOfWeek: Type.Optional(
    Type.Union([Type.Integer({ minimum: 1, maximum: 7 }), Type.Null()], {
      description: 'Weekly schedules (required there, refused on the others): 1 Monday to 7 Sunday.',
    }),
  ),
  weekendRule: Type.Optional(
    Type.Enum(['none', 'previous_business_day', 'next_business_day'], {
      description:
        'An occurrence on a Saturday or Sunday is posted on its date (none, the default), the Friday before or ' +
        'the Monday after.',
    }),
  ),
  startDate: IsoDate(
    'The first day the schedule may run; months and quarters are counted from its month. When set (on creation, or ' +
      'changed), not before the first day of the previous fiscal year of the organization (400 VALIDATION_ERROR ' +
      'naming schedule.startDate), and the first occurrence it leads to must post after the books-closed date (422 ' +
      'PERIOD_CLOSED naming schedule.startDate).',
  ),
  endDate: Type.Optional(
    Type.Union([IsoDate(), Type.Null()], { description: 'The last day it may run (inclusive); null: no end.' }),
  ),
};

/**
 * Which day goes with which frequency, as the ledger's checkSchedule judges it: a weekly schedule runs on a dayOfWeek
 * and has no dayOfMonth, the others the other way round (null counts as not given). Stated as JSON Schema conditionals
 * for generated clients and fuzzers; the route has the ledger judge a schedule first, so a refusal names the field in
 * the ledger's words rather than the conditional that failed.
 */
const WEEKLY = { properties: { frequency: { const: 'weekly' } }, required: ['frequency'] };
const NO_DAY_OF_MONTH = { properties: { dayOfMonth: { type: 'null' } } };
const NO_DAY_OF_WEEK = { properties: { dayOfWeek: { type: 'null' } } };
const DAY_BY_FREQUENCY = {
  if: WEEKLY,
  then: { required: ['dayOfWeek'], properties: { ...NO_DAY_OF_MONTH.properties, dayOfWeek: { type: 'integer' } } },
  else: { required: ['dayOfMonth'], properties: { ...NO_DAY_OF_WEEK.properties, dayOfMonth: { type: 'integer' } } },
};
/** A change is merged over the template, so only what the change itself combines can be stated. */
const CHANGED_DAY_BY_FREQUENCY = {
  if: WEEKLY,
  then: NO_DAY_OF_MONTH,
  else: { if: { required: ['frequency'] }, then: NO_DAY_OF_WEEK },
};

export const ScheduleSchema = Type.Object(ScheduleFields, { ...strict, ...DAY_BY_FREQUENCY, title: 'Schedule' });
const ScheduleChange = Type.Partial(Type.Object(ScheduleFields), { ...strict, ...CHANGED_DAY_BY_FREQUENCY });

const Lines = Type.Array(CompanyJournalLine, {
  minItems: 2,
  maxItems: 500,
  description: 'Debits must equal credits; each account an active account of the organization.',
});

export const CreateScheduledEntryBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    memo: Type.Optional(Nullable(Type.String({ maxLength: 1000 }))),
    reference: Type.Optional(Nullable(Type.String({ maxLength: 100 }))),
    lines: Lines,
    schedule: ScheduleSchema,
  },
  { ...strict, title: 'ScheduledJournalEntryInput' },
);

export const UpdateScheduledEntryBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    memo: Type.Optional(Nullable(Type.String({ maxLength: 1000 }))),
    reference: Type.Optional(Nullable(Type.String({ maxLength: 100 }))),
    lines: Type.Optional(Lines),
    schedule: Type.Optional(ScheduleChange),
  },
  { ...strict, minProperties: 1, description: 'The fields given replace the current ones; the schedule is merged.' },
);

const Run = Type.Object({
  occurrence: IsoDate('The nominal date of the occurrence.'),
  entryDate: IsoDate('The date the entry carries (after the weekend rule).'),
  status: Type.Enum(['posted', 'failed']),
  journalEntryId: Type.Union([Type.String(), Type.Null()]),
  attempts: Type.Integer(),
  error: Type.Union([Type.Object({ code: Type.String(), message: Type.String() }), Type.Null()]),
  at: Timestamp(),
});

export const ScheduledEntrySchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    memo: Type.Union([Type.String(), Type.Null()]),
    reference: Type.Union([Type.String(), Type.Null()]),
    lines: Type.Array(
      Type.Object({
        accountId: Type.String(),
        description: Type.Optional(Type.String()),
        debitCents: Type.Optional(Type.Integer()),
        creditCents: Type.Optional(Type.Integer()),
      }),
    ),
    schedule: Type.Object({
      frequency: Type.String(),
      interval: Type.Integer(),
      dayOfMonth: Type.Union([Type.Integer(), Type.Null()]),
      dayOfWeek: Type.Union([Type.Integer(), Type.Null()]),
      weekendRule: Type.String(),
      startDate: Type.String(),
      endDate: Type.Union([Type.String(), Type.Null()]),
    }),
    status: Type.Enum(['active', 'paused', 'ended'], {
      description: 'active: runs when due; paused: runs nothing until resumed; ended: no occurrence is left.',
    }),
    nextRun: Type.Union([
      Type.Object({
        occurrence: Type.String(),
        entryDate: Type.String(),
        notBefore: Type.Union([Timestamp(), Type.Null()], {
          description: 'Set after a failure: the retry is not tried before then.',
        }),
      }),
      Type.Null(),
    ]),
    lastError: Type.Union([
      Type.Object({ code: Type.String(), message: Type.String(), occurrence: Type.String(), at: Type.String() }),
      Type.Null(),
    ]),
    failures: Type.Integer({ description: 'Failed attempts of the waiting occurrence.' }),
    version: Type.Integer(),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
    history: Type.Array(Run, { description: 'The latest runs (up to 24), newest first; empty in lists.' }),
  },
  { title: 'ScheduledJournalEntry' },
);

export const ScheduledEntryOne = DataOf(ScheduledEntrySchema);
export const ScheduledEntryList = DataOf(Type.Array(ScheduledEntrySchema));
export const ScheduledEntryParams = Type.Object({ id: Uuid() });
