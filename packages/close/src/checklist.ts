import { createHash } from 'node:crypto';
import { recordsWithAttachments } from '@firm/attachments';
import { largeRowsInPeriod, registersReconciledThrough, rowsAwaitingReview } from '@firm/banking';
import type { Executor } from '@firm/db';
import {
  documentsEnteredAfterReconciliation,
  missingRecurringBills,
  type OpenDocument,
  openDocuments,
  possibleDuplicateDocuments,
} from '@firm/documents';
import { accountPeriodFigures, draftEntriesDated, isSuspenseAccountName, scheduledEntriesBehind } from '@firm/ledger';
import { type FirmRuleSettings, firmRuleSettings } from './settings';

export type Severity = 'blocking' | 'advisory';

/** What a checklist item points at: the records that are its evidence. */
export interface EvidenceRef {
  type: string;
  id: string;
}

/** One problem the books show for a close's period, computed again on every read. */
export interface ChecklistItem {
  /** Stable while the same problem holds: its rule and its evidence ids. A sign-off is kept under it. */
  key: string;
  kind: string;
  severity: Severity;
  message: string;
  evidence: EvidenceRef[];
}

/** The period a checklist is computed for. */
export interface ClosePeriod {
  firmId: string;
  organizationId: string;
  periodStart: string;
  periodEnd: string;
}

/** A number a firm may tune for a rule: whole and at least `min`. */
export interface ThresholdSpec {
  default: number;
  min: number;
  description: string;
}

type Found = Omit<ChecklistItem, 'key' | 'kind' | 'severity'>;

/** A rule of the checklist: its kind, its severity, its thresholds and what it finds. */
export interface CloseRule {
  kind: string;
  severity: Severity;
  title: string;
  /** What it finds and why it has its severity; the README's catalogue says the same. */
  description: string;
  thresholds: Record<string, ThresholdSpec>;
  /** False: the rule runs only for firms that turn it on (advisory rules only). */
  enabledByDefault?: boolean;
  find: (books: BookReads, thresholds: Record<string, number>) => Promise<Found[]>;
}

/** An item's key: its kind and a digest of its evidence ids, in a fixed order. */
export function itemKey(kind: string, evidence: EvidenceRef[]): string {
  const ids = evidence.map((e) => `${e.type}:${e.id}`).sort();
  return `${kind}:${createHash('sha256').update(ids.join('\n')).digest('hex').slice(0, 32)}`;
}

/** The first day of the month `n` months before `date`'s month. */
function monthsBefore(date: string, n: number): string {
  const d = new Date(`${date.slice(0, 7)}-01T00:00:00Z`);
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - n, 1)).toISOString().slice(0, 10);
}

const money = (cents: number) =>
  `${cents < 0 ? '-' : ''}${(Math.abs(cents) / 100).toLocaleString('en-US', { minimumFractionDigits: 2 })}`;
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The calendar months a period touches: 1 for a month, 3 for a quarter. */
function monthsSpanned(start: string, end: string): number {
  const index = (date: string) => Number(date.slice(0, 4)) * 12 + Number(date.slice(5, 7));
  return index(end) - index(start) + 1;
}

/** The trailing periods the spike rule averages over. */
const TRAILING_PERIODS = 3;

/**
 * The books' reads a checklist needs, each made at most once per computation however many rules share it (the
 * account figures serve three rules, the open documents three, the registers two). In sequence on the caller's
 * executor, so it runs inside a transaction as well as on a pool.
 */
export class BookReads {
  private readonly cache = new Map<string, Promise<unknown>>();
  constructor(
    readonly db: Executor,
    readonly period: ClosePeriod,
  ) {}

  private once<T>(key: string, read: () => Promise<T>): Promise<T> {
    let found = this.cache.get(key) as Promise<T> | undefined;
    if (!found) {
      found = read();
      this.cache.set(key, found);
    }
    return found;
  }

  /**
   * Every account's balance at the period end, its period's net, and the net of the `TRAILING_PERIODS` periods of
   * the period's length (in calendar months) before it.
   */
  accounts() {
    const { organizationId, periodStart, periodEnd } = this.period;
    return this.once('accounts', () =>
      accountPeriodFigures(this.db, organizationId, {
        periodStart,
        periodEnd,
        trailingStart: monthsBefore(periodStart, TRAILING_PERIODS * monthsSpanned(periodStart, periodEnd)),
      }),
    );
  }

  registers() {
    return this.once('registers', () => registersReconciledThrough(this.db, this.period.organizationId));
  }

  open(side: 'receivable' | 'payable'): Promise<OpenDocument[]> {
    return this.once(`open:${side}`, () =>
      openDocuments(this.db, this.period.organizationId, side, this.period.periodEnd),
    );
  }
}

const overdue = (side: 'receivable' | 'payable', kind: 'invoice' | 'bill') =>
  async function find(books: BookReads, t: Record<string, number>): Promise<Found[]> {
    const days = t.days as number;
    return (await books.open(side))
      .filter((d) => d.type === kind && d.openCents > 0 && d.daysPastDue > days)
      .map((d) => ({
        message: `${kind === 'invoice' ? 'Invoice' : 'Bill'} ${d.number ?? d.documentId} has ${money(d.openCents)} open, ${d.daysPastDue} days past due on ${books.period.periodEnd}`,
        evidence: [{ type: 'Document', id: d.documentId }],
      }));
  };

/** The rules, in the order their items are listed. */
export const CLOSE_RULES: CloseRule[] = [
  {
    kind: 'bank_account_unreconciled',
    severity: 'blocking',
    title: 'Bank and card accounts reconciled through the period end',
    description:
      'A bank or card register whose last finished reconciliation ends before the period end (or that was never ' +
      'reconciled). Blocking: the period cannot be trusted until the statement agrees with the books.',
    thresholds: {},
    async find(books) {
      const end = books.period.periodEnd;
      return (await books.registers())
        .filter((r) => r.reconciledThrough === null || r.reconciledThrough < end)
        .map((r) => ({
          message:
            r.reconciledThrough === null
              ? `${r.name} has never been reconciled`
              : `${r.name} is reconciled through ${r.reconciledThrough}, not through ${end}`,
          evidence: [{ type: 'BankAccount', id: r.bankAccountId }],
        }));
    },
  },
  {
    kind: 'bank_rows_unreviewed',
    severity: 'blocking',
    title: 'Bank rows dated in the period reviewed',
    description:
      'A bank or card register with rows dated in the period that wait for review or are still pending at the ' +
      'bank; the evidence is the register and its rows. Blocking: these movements are not in the books yet.',
    thresholds: {},
    async find(books) {
      const { organizationId, periodStart, periodEnd } = books.period;
      const rows = await rowsAwaitingReview(books.db, organizationId, periodStart, periodEnd);
      const names = new Map((await books.registers()).map((r) => [r.bankAccountId, r.name]));
      const byRegister = new Map<string, typeof rows>();
      for (const row of rows) {
        const waiting = byRegister.get(row.bankAccountId);
        if (waiting) waiting.push(row);
        else byRegister.set(row.bankAccountId, [row]);
      }
      return [...byRegister].map(([bankAccountId, waiting]) => {
        const pending = waiting.filter((r) => r.pending).length;
        return {
          message:
            `${names.get(bankAccountId) ?? bankAccountId} has ${plural(waiting.length, 'row')} dated in the period ` +
            `waiting for review${pending > 0 ? ` (${pending} pending at the bank)` : ''}`,
          evidence: [
            { type: 'BankAccount', id: bankAccountId },
            ...waiting.map((r) => ({ type: 'BankTransaction', id: r.id })),
          ],
        };
      });
    },
  },
  {
    kind: 'suspense_balance',
    severity: 'blocking',
    title: 'Suspense, uncategorized and "ask my accountant" accounts cleared',
    description:
      'An account whose name says suspense, uncategorized (or uncategorised) or "ask my accountant" with a ' +
      'non-zero balance at the period end. Blocking: its lines belong in other accounts.',
    thresholds: {},
    async find(books) {
      return (await books.accounts())
        .filter((a) => isSuspenseAccountName(a.name) && a.balanceCents !== 0)
        .map((a) => ({
          message: `${a.code} ${a.name} holds ${money(a.balanceCents)} (debit-positive) at ${books.period.periodEnd}`,
          evidence: [{ type: 'Account', id: a.id }],
        }));
    },
  },
  {
    kind: 'balance_wrong_side',
    severity: 'blocking',
    title: 'Balances on their normal side',
    description:
      'At the period end, a bank account overdrawn (a credit balance), receivables in credit or payables in debit. ' +
      'Blocking: usually a misposted payment or a transfer booked the wrong way; sign it off when it is real.',
    thresholds: {},
    async find(books) {
      const wrong = { bank: 'is overdrawn', accounts_receivable: 'is in credit', accounts_payable: 'is in debit' };
      return (await books.accounts())
        .filter(
          (a) =>
            ((a.subtype === 'bank' || a.subtype === 'accounts_receivable') && a.balanceCents < 0) ||
            (a.subtype === 'accounts_payable' && a.balanceCents > 0),
        )
        .map((a) => ({
          message: `${a.code} ${a.name} ${wrong[a.subtype as keyof typeof wrong]} by ${money(Math.abs(a.balanceCents))} at ${books.period.periodEnd}`,
          evidence: [{ type: 'Account', id: a.id }],
        }));
    },
  },
  {
    kind: 'draft_entries',
    severity: 'blocking',
    title: 'No draft entries dated in the period',
    description:
      'A journal entry dated in the period still in draft. Blocking: post it or delete it before the period closes.',
    thresholds: {},
    async find(books) {
      const { organizationId, periodStart, periodEnd } = books.period;
      return (await draftEntriesDated(books.db, organizationId, periodStart, periodEnd)).map((e) => ({
        message: `A draft entry dated ${e.entryDate}${e.memo ? ` (${e.memo})` : ''} is not posted`,
        evidence: [{ type: 'JournalEntry', id: e.id }],
      }));
    },
  },
  {
    kind: 'scheduled_entry_missed',
    severity: 'blocking',
    title: 'Scheduled entries ran for the period',
    description:
      'A scheduled entry whose occurrence in the period failed, or an active one whose next occurrence falls on or ' +
      'before the period end and has not run. Blocking: the accrual, depreciation or rent it posts is missing.',
    thresholds: {},
    async find(books) {
      const { organizationId, periodStart, periodEnd } = books.period;
      return (await scheduledEntriesBehind(books.db, organizationId, periodStart, periodEnd)).map((s) => ({
        message:
          s.state === 'failed'
            ? `Scheduled entry "${s.name}" failed for ${s.occurrence}${s.errorCode ? ` (${s.errorCode})` : ''}`
            : `Scheduled entry "${s.name}" has not run for ${s.occurrence}`,
        evidence: [{ type: 'ScheduledEntry', id: s.scheduleId }],
      }));
    },
  },
  {
    kind: 'receivables_overdue',
    severity: 'advisory',
    title: 'Receivables overdue',
    description:
      'An invoice with an open balance more than `days` days past due at the period end (open as of that date). ' +
      'Advisory: collect it, or consider an allowance or a write-off.',
    thresholds: { days: { default: 90, min: 0, description: 'Days past due at the period end' } },
    find: overdue('receivable', 'invoice'),
  },
  {
    kind: 'payables_overdue',
    severity: 'advisory',
    title: 'Payables overdue',
    description:
      'A bill with an open balance more than `days` days past due at the period end. Advisory: a bill that old ' +
      'is often paid already (recorded elsewhere) or disputed.',
    thresholds: { days: { default: 90, min: 0, description: 'Days past due at the period end' } },
    find: overdue('payable', 'bill'),
  },
  {
    kind: 'unapplied_credits',
    severity: 'advisory',
    title: 'Customer payments and vendor credits applied',
    description:
      'A customer payment or vendor credit dated through the period end with an amount not applied to any ' +
      'invoice or bill as of that date. Advisory: apply it, or refund it.',
    thresholds: {},
    async find(books) {
      const [receivable, payable] = [await books.open('receivable'), await books.open('payable')];
      return [
        ...receivable.filter((d) => d.type === 'customer_payment'),
        ...payable.filter((d) => d.type === 'vendor_credit'),
      ].map((d) => ({
        message: `${d.type === 'customer_payment' ? 'Customer payment' : 'Vendor credit'} ${d.number ?? d.documentId} of ${d.date} has ${money(Math.abs(d.openCents))} unapplied`,
        evidence: [{ type: 'Document', id: d.documentId }],
      }));
    },
  },
  {
    kind: 'recurring_bill_missing',
    severity: 'advisory',
    title: 'Recurring charges received',
    description:
      'A vendor billed in each of the `months` calendar months before the period and not in the period: rent, a ' +
      'subscription or a utility bill that has not arrived or was not entered. Advisory. The evidence is its last bill.',
    thresholds: { months: { default: 3, min: 1, description: 'Consecutive prior months the vendor billed' } },
    async find(books, t) {
      const { organizationId, periodStart, periodEnd } = books.period;
      return (await missingRecurringBills(books.db, organizationId, periodStart, periodEnd, t.months as number)).map(
        (v) => ({
          message: `${v.contactName} billed every month before the period (last on ${v.lastBillDate}) but not in it`,
          evidence: [
            { type: 'Contact', id: v.contactId },
            { type: 'Document', id: v.lastBillId },
          ],
        }),
      );
    },
  },
  {
    kind: 'possible_duplicate',
    severity: 'advisory',
    title: 'Possible duplicate invoices and bills',
    description:
      'Two live invoices (or bills) of the same contact and total dated at most `days` days apart, one of them in ' +
      'the period. Advisory: void the copy, or sign it off when both are real.',
    thresholds: { days: { default: 3, min: 0, description: 'Days apart' } },
    async find(books, t) {
      const { organizationId, periodStart, periodEnd } = books.period;
      const pairs = await possibleDuplicateDocuments(
        books.db,
        organizationId,
        periodStart,
        periodEnd,
        t.days as number,
      );
      return pairs.map((p) => ({
        message: `${p.contactName}: two ${p.type}s of ${money(p.totalCents)} dated ${p.dates[0]} and ${p.dates[1]}`,
        evidence: p.documentIds.map((id) => ({ type: 'Document', id })),
      }));
    },
  },
  {
    kind: 'expense_spike',
    severity: 'advisory',
    title: 'Expenses in line with the trailing three months',
    description:
      'An expense account whose period total differs from its average over the three periods of the same length ' +
      '(in calendar months; for a month, the three months) before it by more than `percent` per cent of that ' +
      'average and by at least `amountCents`. Advisory: a misposting, an accrual missing or doubled, or a real ' +
      'change to explain.',
    thresholds: {
      percent: { default: 50, min: 0, description: 'Share of the trailing average, in per cent' },
      amountCents: { default: 50_000, min: 0, description: 'Smallest difference, in cents' },
    },
    async find(books, t) {
      return (await books.accounts())
        .filter((a) => a.type === 'expense')
        .flatMap((a) => {
          const average = Math.round(a.trailingCents / TRAILING_PERIODS);
          const span = monthsSpanned(books.period.periodStart, books.period.periodEnd);
          const diff = a.periodCents - average;
          if (Math.abs(diff) < (t.amountCents as number)) return [];
          if (Math.abs(diff) * 100 <= (t.percent as number) * Math.abs(average)) return [];
          return [
            {
              message: `${a.code} ${a.name}: ${money(a.periodCents)} in the period against ${span === 1 ? 'a three-month average' : 'an average over the three periods before'} of ${money(average)}`,
              evidence: [{ type: 'Account', id: a.id }],
            },
          ];
        });
    },
  },
  {
    kind: 'receipts_missing',
    severity: 'advisory',
    enabledByDefault: false,
    title: 'Large bank and card rows have their receipts',
    description:
      'A bank or card register with rows dated in the period that move at least minCents either way (not excluded) ' +
      'and have no attachment, neither on the row nor on the journal entry it was posted as; the evidence is the ' +
      'register and those rows. Advisory and off unless the firm turns it on: attach the receipt, or sign it off.',
    thresholds: {
      minCents: {
        default: 7500,
        min: 1,
        description: 'Rows moving at least this many cents either way need a receipt.',
      },
    },
    async find(books, { minCents }) {
      const { organizationId, periodStart, periodEnd } = books.period;
      const rows = await largeRowsInPeriod(books.db, organizationId, periodStart, periodEnd, minCents as number);
      if (rows.length === 0) return [];
      const covered = await recordsWithAttachments(
        books.db,
        organizationId,
        rows.flatMap((r) => [
          { entityType: 'bank_transaction' as const, entityId: r.id },
          ...(r.journalEntryId ? [{ entityType: 'journal_entry' as const, entityId: r.journalEntryId }] : []),
        ]),
      );
      const missing = rows.filter(
        (r) =>
          !covered.has(`bank_transaction:${r.id}`) &&
          !(r.journalEntryId && covered.has(`journal_entry:${r.journalEntryId}`)),
      );
      const names = new Map((await books.registers()).map((r) => [r.bankAccountId, r.name]));
      const byRegister = new Map<string, typeof missing>();
      for (const row of missing) byRegister.set(row.bankAccountId, [...(byRegister.get(row.bankAccountId) ?? []), row]);
      return [...byRegister].map(([bankAccountId, list]) => ({
        message:
          `${names.get(bankAccountId) ?? bankAccountId} has ${plural(list.length, 'row')} of at least ` +
          `${money(minCents as number)} dated in the period without a receipt`,
        evidence: [
          { type: 'BankAccount', id: bankAccountId },
          ...list.map((r) => ({ type: 'BankTransaction', id: r.id })),
        ],
      }));
    },
  },
  {
    kind: 'entered_after_reconciliation',
    severity: 'advisory',
    title: 'Nothing entered into reconciled statements',
    description:
      'A payment, receipt or other document moving money through a bank or card account, dated in the period on ' +
      'or before that account’s last reconciled statement end, but entered after that reconciliation was finished: ' +
      'the reconciliation did not include it. Advisory: undo and redo the reconciliation, or move the document.',
    thresholds: {},
    async find(books) {
      const { organizationId, periodStart, periodEnd } = books.period;
      const reconciled = (await books.registers()).flatMap((r) =>
        r.reconciledThrough && r.reconciledAt && r.reconciledThrough >= periodStart
          ? [{ accountId: r.accountId, through: r.reconciledThrough, at: r.reconciledAt }]
          : [],
      );
      const names = new Map((await books.registers()).map((r) => [r.accountId, r.name]));
      const docs = await documentsEnteredAfterReconciliation(
        books.db,
        organizationId,
        periodStart,
        periodEnd,
        reconciled,
      );
      return docs.map((d) => ({
        message: `${d.type} ${d.number ?? d.id} dated ${d.date} was entered after ${names.get(d.accountId)} was reconciled`,
        evidence: [{ type: 'Document', id: d.id }],
      }));
    },
  },
];

/** The rule of a kind, or undefined. */
export const closeRuleOf = (kind: string): CloseRule | undefined => CLOSE_RULES.find((r) => r.kind === kind);

/**
 * The checklist of a period: every enabled rule's items, each with its key. The firm's rule settings are read
 * when not given (a board computing many companies of one firm reads them once and passes them).
 */
export async function computeChecklist(
  db: Executor,
  period: ClosePeriod,
  settings?: FirmRuleSettings,
): Promise<ChecklistItem[]> {
  const own = settings ?? (await firmRuleSettings(db, period.firmId));
  const books = new BookReads(db, period);
  const items: ChecklistItem[] = [];
  for (const rule of CLOSE_RULES) {
    const setting = own.get(rule.kind);
    if (rule.severity === 'advisory' && (setting?.enabled ?? rule.enabledByDefault ?? true) === false) continue;
    const thresholds = Object.fromEntries(
      Object.entries(rule.thresholds).map(([name, spec]) => [name, setting?.thresholds[name] ?? spec.default]),
    );
    for (const found of await rule.find(books, thresholds)) {
      items.push({ key: itemKey(rule.kind, found.evidence), kind: rule.kind, severity: rule.severity, ...found });
    }
  }
  return items;
}
