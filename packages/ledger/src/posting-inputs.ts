import { DomainError, isBalanceSheetType } from '@firm/core';
import {
  checkCents,
  checkLineCount,
  type DebitCreditLine,
  type PostableAccount,
  type PostingLine,
  signedLine,
} from './lines';

interface PostingCommon {
  date: string;
  memo?: string | null | undefined;
  reference?: string | null | undefined;
  payeeName?: string | null | undefined;
}

/** A category line of a purchase, deposit or bill payment: which account, and how much. */
export interface AmountLine {
  accountId: string;
  description?: string | null | undefined;
  amountCents: number;
}

/**
 * What a posting route asks for, one shape per kind. Every kind becomes balanced lines through
 * `postingLines` and then takes the one posting path, `postTransaction`.
 */
export type PostingInput =
  /** Balanced lines as given. */
  | (PostingCommon & { kind: 'journal_entry'; lines: DebitCreditLine[] })
  /** Money out of `sourceAccountId` (bank or card, credited) into each line's account (debited). */
  | (PostingCommon & { kind: 'purchase'; sourceAccountId: string; lines: AmountLine[] })
  /** Like a purchase: money out of `sourceAccountId` into, typically, accounts payable. */
  | (PostingCommon & { kind: 'bill_payment'; sourceAccountId: string; lines: AmountLine[] })
  /** The mirror of a purchase: `destinationAccountId` debited, each line's account credited. */
  | (PostingCommon & { kind: 'deposit'; destinationAccountId: string; lines: AmountLine[] })
  /** `amountCents` moved from one balance-sheet account to another. */
  | (PostingCommon & { kind: 'transfer'; fromAccountId: string; toAccountId: string; amountCents: number })
  /** A sales or purchase document's entry (packages/documents): balanced lines built from the document. */
  | (PostingCommon & { kind: DocumentEntryKind; lines: DebitCreditLine[] })
  /** A bank transaction's own entry (packages/banking): its bank line against the accounts it was classified to. */
  | (PostingCommon & { kind: 'bank_transaction'; lines: DebitCreditLine[] })
  /** A company's opening balances (opening-balances.ts): one balanced entry, one line per account. */
  | (PostingCommon & { kind: 'opening_balance'; lines: DebitCreditLine[] });

/** The documents that post an entry of their own; each is also a `journal_entries.source`. */
export const DOCUMENT_ENTRY_KINDS = [
  'invoice',
  'customer_payment',
  'sales_receipt',
  'credit_memo',
  'refund_receipt',
  'bill',
  'vendor_credit',
] as const;

export type DocumentEntryKind = (typeof DOCUMENT_ENTRY_KINDS)[number];

export type PostingKind = PostingInput['kind'];

function categoryLines(lines: AmountLine[], sign: 1 | -1): PostingLine[] {
  checkLineCount(lines, 1);
  return lines.map((line, i) => ({
    accountId: line.accountId,
    description: line.description ?? null,
    amountCents: sign * checkCents(line.amountCents, `lines[${i}].amountCents`),
    field: `lines[${i}].accountId`,
  }));
}

const total = (lines: PostingLine[]) => lines.reduce((sum, l) => sum + Math.abs(l.amountCents), 0);

/** Debit each category line, credit the source account with the total. */
export function purchaseLines(input: {
  sourceAccountId: string;
  memo?: string | null;
  lines: AmountLine[];
}): PostingLine[] {
  const debits = categoryLines(input.lines, 1);
  return [
    ...debits,
    {
      accountId: input.sourceAccountId,
      description: input.memo ?? null,
      amountCents: -total(debits),
      field: 'sourceAccountId',
    },
  ];
}

/** Debit the destination account with the total, credit each category line. */
export function depositLines(input: {
  destinationAccountId: string;
  memo?: string | null;
  lines: AmountLine[];
}): PostingLine[] {
  const credits = categoryLines(input.lines, -1);
  return [
    {
      accountId: input.destinationAccountId,
      description: input.memo ?? null,
      amountCents: total(credits),
      field: 'destinationAccountId',
    },
    ...credits,
  ];
}

/** Debit the account the money arrives in, credit the one it leaves. */
export function transferLines(input: {
  fromAccountId: string;
  toAccountId: string;
  amountCents: number;
  memo?: string | null;
}): PostingLine[] {
  const amount = checkCents(input.amountCents, 'amountCents');
  if (input.fromAccountId === input.toAccountId) {
    throw new DomainError('INVALID_TRANSFER', 'a transfer needs two different accounts', [
      { field: 'toAccountId', message: 'same as fromAccountId' },
    ]);
  }
  const description = input.memo ?? null;
  return [
    { accountId: input.toAccountId, description, amountCents: amount, field: 'toAccountId' },
    { accountId: input.fromAccountId, description, amountCents: -amount, field: 'fromAccountId' },
  ];
}

export function journalEntryLines(input: { lines: DebitCreditLine[] }): PostingLine[] {
  checkLineCount(input.lines, 2);
  return input.lines.map((line, i) => signedLine(line, `lines[${i}]`));
}

const ACCOUNT_ID_FIELDS = ['sourceAccountId', 'destinationAccountId', 'fromAccountId', 'toAccountId'] as const;

/**
 * The input with every account id in the lower case the database returns: a UUID names the same account in either
 * case, and the entry, its events and the checks against the accounts read all see one spelling.
 */
export function withCanonicalAccountIds<T extends PostingInput>(input: T): T {
  const copy: Record<string, unknown> = { ...input };
  for (const field of ACCOUNT_ID_FIELDS) {
    const id = copy[field];
    if (typeof id === 'string') copy[field] = id.toLowerCase();
  }
  if ('lines' in input) {
    copy.lines = input.lines.map((line) => ({ ...line, accountId: line.accountId.toLowerCase() }));
  }
  return copy as T;
}

/** The lines a posting input stands for, before any account is looked up. */
export function postingLines(input: PostingInput): PostingLine[] {
  switch (input.kind) {
    case 'journal_entry':
    case 'invoice':
    case 'customer_payment':
    case 'sales_receipt':
    case 'credit_memo':
    case 'refund_receipt':
    case 'bill':
    case 'vendor_credit':
    case 'bank_transaction':
    case 'opening_balance':
      return journalEntryLines(input);
    case 'purchase':
    case 'bill_payment':
      return purchaseLines(input);
    case 'deposit':
      return depositLines(input);
    case 'transfer':
      return transferLines(input);
  }
}

/** Rules that need the accounts themselves: a transfer moves money between balance-sheet accounts only. */
export function checkPostingAccounts(input: PostingInput, accounts: Map<string, PostableAccount>): void {
  if (input.kind !== 'transfer') return;
  for (const field of ['fromAccountId', 'toAccountId'] as const) {
    const account = accounts.get(input[field]);
    if (account && !isBalanceSheetType(account.type)) {
      throw new DomainError(
        'INVALID_TRANSFER',
        `a transfer moves money between balance-sheet accounts; ${account.code} ${account.name} is a ${account.type} account`,
        [{ field, message: 'not an asset, liability or equity account' }],
      );
    }
  }
}
