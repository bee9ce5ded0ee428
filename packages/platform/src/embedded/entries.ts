import { isUuid } from '@firm/core';
import { type Executor, type Tx } from '@firm/db';
import {
  accountSubtypes,
  type DebitCreditLine,
  type EntryRow,
  entryDebitsCentsOf,
  entryLinesOf,
  type LineRow,
  postedEntriesAtOffset,
  postedEntryFrom,
  type PostingInput,
  postTransaction,
  todayUtc,
  voidEntry,
} from '@firm/ledger';
import { sql } from 'drizzle-orm';
import type { PlatformContext, PlatformRecord, WriteResult } from '../types';
import {
  amountOf,
  centsOf,
  checkSyncToken,
  dateOf,
  envelope,
  invalid,
  journalOf,
  ledgerContextOf,
  linesOf,
  objectOf,
  offsetOf,
  type Payload,
  pageOf,
  recordNotFound,
  refOf,
  textOf,
  type Version,
  versionsOf,
} from './common';
import type { EntityHandler } from './handler';
import { versioned } from './query';

interface Loaded {
  row: EntryRow;
  lines: LineRow[];
  subtypes: Map<string, string>;
  version: Version | undefined;
}

interface EntryShape {
  entity: string;
  sources: readonly EntryRow['source'][];
  present(e: Loaded): Record<string, unknown>;
  /** The posting a create payload asks for. */
  input(payload: Payload): PostingInput;
}

const debit = (l: LineRow) => (l.amountCents > 0 ? l.amountCents : 0);
const credit = (l: LineRow) => (l.amountCents < 0 ? -l.amountCents : 0);
const total = (lines: LineRow[]) => lines.reduce((s, l) => s + debit(l), 0);
const common = (payload: Payload) => ({
  date: dateOf(payload, 'TxnDate') ?? todayUtc(),
  memo: textOf(payload, 'PrivateNote') ?? null,
  reference: textOf(payload, 'DocNumber') ?? null,
});
const header = (e: Loaded) => ({
  TxnDate: e.row.entryDate,
  ...(e.row.reference ? { DocNumber: e.row.reference } : {}),
  ...(e.row.memo ? { PrivateNote: e.row.memo } : {}),
  TotalAmt: amountOf(total(e.lines)),
});

function requiredLines(payload: Payload): Payload[] {
  const lines = linesOf(payload);
  if (!lines || lines.length === 0) throw invalid('Line', 'needs at least one line');
  return lines;
}

function detailOf(line: Payload, at: string, detailType: string): Payload {
  if (textOf(line, 'DetailType') !== detailType) throw invalid(`${at}.DetailType`, `must be ${detailType}`);
  const detail = objectOf(line, detailType);
  if (!detail) throw invalid(`${at}.${detailType}`, 'is required');
  return detail;
}

/** Category lines (`AccountBasedExpenseLineDetail`, `DepositLineDetail`): an account and an amount each. */
function categoryLines(payload: Payload, detailType: string) {
  return requiredLines(payload).map((line, i) => {
    const at = `Line[${i}]`;
    const accountId = refOf(detailOf(line, at, detailType), 'AccountRef');
    if (!accountId) throw invalid(`${at}.${detailType}.AccountRef`, 'is required');
    return {
      accountId,
      description: textOf(line, 'Description') ?? null,
      amountCents: centsOf(line.Amount, `${at}.Amount`),
    };
  });
}

const SHAPES: readonly EntryShape[] = [
  {
    entity: 'JournalEntry',
    sources: ['journal_entry', 'manual'],
    present: (e) => ({
      ...header(e),
      Adjustment: false,
      Line: e.lines.map((l) => ({
        Id: String(l.lineNo),
        ...(l.description ? { Description: l.description } : {}),
        Amount: amountOf(Math.abs(l.amountCents)),
        DetailType: 'JournalEntryLineDetail',
        JournalEntryLineDetail: {
          PostingType: l.amountCents > 0 ? 'Debit' : 'Credit',
          AccountRef: { value: l.accountId },
        },
      })),
    }),
    input(payload) {
      const lines: DebitCreditLine[] = requiredLines(payload).map((line, i) => {
        const at = `Line[${i}]`;
        const detail = detailOf(line, at, 'JournalEntryLineDetail');
        const postingType = textOf(detail, 'PostingType');
        if (postingType !== 'Debit' && postingType !== 'Credit') {
          throw invalid(`${at}.JournalEntryLineDetail.PostingType`, 'must be Debit or Credit');
        }
        const accountId = refOf(detail, 'AccountRef');
        if (!accountId) throw invalid(`${at}.JournalEntryLineDetail.AccountRef`, 'is required');
        const cents = centsOf(line.Amount, `${at}.Amount`);
        return {
          accountId,
          description: textOf(line, 'Description') ?? null,
          ...(postingType === 'Debit' ? { debitCents: cents } : { creditCents: cents }),
        };
      });
      return { kind: 'journal_entry', ...common(payload), lines };
    },
  },
  {
    entity: 'Purchase',
    sources: ['purchase'],
    present: (e) => {
      const source = e.lines.find((l) => l.amountCents < 0);
      return {
        ...header(e),
        PaymentType: e.subtypes.get(source?.accountId ?? '') === 'credit_card' ? 'CreditCard' : 'Cash',
        ...(source ? { AccountRef: { value: source.accountId } } : {}),
        ...(e.row.payeeName ? { EntityRef: { name: e.row.payeeName } } : {}),
        Line: e.lines
          .filter((l) => l.amountCents > 0)
          .map((l, i) => ({
            Id: String(i + 1),
            ...(l.description ? { Description: l.description } : {}),
            Amount: amountOf(debit(l)),
            DetailType: 'AccountBasedExpenseLineDetail',
            AccountBasedExpenseLineDetail: { AccountRef: { value: l.accountId } },
          })),
      };
    },
    input(payload) {
      const sourceAccountId = refOf(payload, 'AccountRef');
      if (!sourceAccountId) throw invalid('AccountRef', 'is required: the bank or card account paid from');
      const payee = objectOf(payload, 'EntityRef');
      return {
        kind: 'purchase',
        ...common(payload),
        payeeName: payee ? (textOf(payee, 'name') ?? null) : null,
        sourceAccountId,
        lines: categoryLines(payload, 'AccountBasedExpenseLineDetail'),
      };
    },
  },
  {
    entity: 'Deposit',
    sources: ['deposit'],
    present: (e) => {
      const into = e.lines.find((l) => l.amountCents > 0);
      return {
        ...header(e),
        ...(into ? { DepositToAccountRef: { value: into.accountId } } : {}),
        Line: e.lines
          .filter((l) => l.amountCents < 0)
          .map((l, i) => ({
            Id: String(i + 1),
            LineNum: i + 1,
            ...(l.description ? { Description: l.description } : {}),
            Amount: amountOf(credit(l)),
            DetailType: 'DepositLineDetail',
            DepositLineDetail: { AccountRef: { value: l.accountId } },
          })),
      };
    },
    input(payload) {
      const destinationAccountId = refOf(payload, 'DepositToAccountRef');
      if (!destinationAccountId) throw invalid('DepositToAccountRef', 'is required');
      return {
        kind: 'deposit',
        ...common(payload),
        destinationAccountId,
        lines: categoryLines(payload, 'DepositLineDetail'),
      };
    },
  },
  {
    entity: 'Transfer',
    sources: ['transfer'],
    present: (e) => {
      const from = e.lines.find((l) => l.amountCents < 0);
      const to = e.lines.find((l) => l.amountCents > 0);
      return {
        TxnDate: e.row.entryDate,
        ...(e.row.memo ? { PrivateNote: e.row.memo } : {}),
        ...(from ? { FromAccountRef: { value: from.accountId } } : {}),
        ...(to ? { ToAccountRef: { value: to.accountId } } : {}),
        Amount: amountOf(total(e.lines)),
      };
    },
    input(payload) {
      const fromAccountId = refOf(payload, 'FromAccountRef');
      if (!fromAccountId) throw invalid('FromAccountRef', 'is required');
      const toAccountId = refOf(payload, 'ToAccountRef');
      if (!toAccountId) throw invalid('ToAccountRef', 'is required');
      return {
        kind: 'transfer',
        ...common(payload),
        fromAccountId,
        toAccountId,
        amountCents: centsOf(payload.Amount, 'Amount'),
      };
    },
  },
];

function entryHandler(shape: EntryShape): EntityHandler {
  async function presentAll(db: Executor, ctx: PlatformContext, rows: EntryRow[]): Promise<PlatformRecord[]> {
    if (rows.length === 0) return [];
    const ids = rows.map((r) => r.id);
    const lines = await entryLinesOf(db, ctx.organizationId, ids);
    const accountIds = [...new Set([...lines.values()].flat().map((l) => l.accountId))];
    const subtypes = await accountSubtypes(db, ctx.organizationId, accountIds);
    const versions = await versionsOf(db, ctx.organizationId, ids);
    return rows.map((row) => {
      const loaded = { row, lines: lines.get(row.id) ?? [], subtypes, version: versions.get(row.id) };
      return { ...envelope(row.id, row.createdAt, loaded.version), ...shape.present(loaded) } as PlatformRecord;
    });
  }

  async function getOne(db: Executor, ctx: PlatformContext, id: string): Promise<PlatformRecord> {
    if (!isUuid(id)) throw recordNotFound(shape.entity);
    const row = await postedEntryFrom(db, ctx.organizationId, shape.sources, id);
    const [record] = await presentAll(db, ctx, row ? [row] : []);
    if (!record) throw recordNotFound(shape.entity);
    return record;
  }

  async function journalOfEntry(tx: Tx, ctx: PlatformContext, id: string) {
    const lines = (await entryLinesOf(tx, ctx.organizationId, [id])).get(id) ?? [];
    return journalOf(
      lines.map((l) => ({
        accountId: l.accountId,
        description: l.description,
        debitCents: debit(l),
        creditCents: credit(l),
      })),
    );
  }

  return {
    table: 'journal_entries',
    operations: ['read', 'create', 'delete'],
    query: {
      from: versioned('journal_entries'),
      where: (organizationId) =>
        sql`t.organization_id = ${organizationId} and t.status::text = 'posted' and t.source::text in (${sql.join(
          shape.sources.map((s) => sql`${s}`),
          sql`, `,
        )})`,
      fields: {
        DocNumber: { sql: sql`t.reference`, type: 'text' },
        TxnDate: { sql: sql`t.entry_date`, type: 'date' },
        TotalAmt: {
          sql: sql`${entryDebitsCentsOf(sql`t.organization_id`, sql`t.id`)} / 100.0`,
          type: 'number',
        },
      },
    },
    async list(db, ctx, options) {
      const { rows, total } = await postedEntriesAtOffset(
        db,
        ctx.organizationId,
        shape.sources,
        offsetOf(options),
        options.maxResults,
      );
      return pageOf(await presentAll(db, ctx, rows), options, total);
    },
    get: getOne,
    async create(tx, ctx, payload): Promise<WriteResult> {
      const receipt = await postTransaction(tx, ledgerContextOf(ctx), ctx.organizationId, shape.input(payload));
      return {
        record: await getOne(tx, ctx, receipt.journalEntryId),
        syncTokenBefore: null,
        journal: await journalOfEntry(tx, ctx, receipt.journalEntryId),
      };
    },
    async delete(tx, ctx, id, syncToken): Promise<WriteResult> {
      const current = await getOne(tx, ctx, id);
      const before = await checkSyncToken(
        tx,
        'journal_entries',
        ctx.organizationId,
        id,
        syncToken,
        () => getOne(tx, ctx, id),
        shape.entity,
      );
      await voidEntry(tx, ledgerContextOf(ctx), ctx.organizationId, id, 'deleted through the agent gateway');
      const versions = await versionsOf(tx, ctx.organizationId, [id]);
      return {
        record: {
          ...envelope(id, new Date(current.MetaData.CreateTime), versions.get(id)),
          status: 'Deleted',
        },
        syncTokenBefore: before,
        journal: [],
      };
    },
  };
}

export const entryHandlers = new Map(SHAPES.map((s) => [s.entity, entryHandler(s)]));
