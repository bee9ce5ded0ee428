import type { PostingInput } from '@firm/ledger';
import type { Static } from 'typebox';
import type {
  CompanyDepositBody,
  CompanyJournalEntryBody,
  CompanyPurchaseBody,
  CompanyTransferBody,
  HeaderDepositBody,
  HeaderJournalEntryBody,
  HeaderPurchaseBody,
  HeaderTransferBody,
} from './schemas';

/** Request bodies of both forms, turned into the ledger's one posting input. */

export const companyPurchase = (b: Static<typeof CompanyPurchaseBody>): PostingInput => ({
  kind: 'purchase',
  date: b.date,
  memo: b.description,
  reference: b.reference,
  sourceAccountId: b.sourceAccountId,
  lines: [{ accountId: b.categoryAccountId, description: b.description, amountCents: b.amountCents }],
});

export const headerPurchase = (b: Static<typeof HeaderPurchaseBody>): PostingInput => ({
  kind: 'purchase',
  date: b.txnDate,
  memo: b.memo,
  payeeName: b.payeeName,
  sourceAccountId: b.sourceAccountId,
  lines: b.lines.map((l) => ({ accountId: l.accountId, description: l.description, amountCents: l.amount })),
});

export const companyDeposit = (b: Static<typeof CompanyDepositBody>): PostingInput => ({
  kind: 'deposit',
  date: b.date,
  memo: b.description,
  reference: b.reference,
  destinationAccountId: b.destinationAccountId,
  lines: [{ accountId: b.categoryAccountId, description: b.description, amountCents: b.amountCents }],
});

export const headerDeposit = (b: Static<typeof HeaderDepositBody>): PostingInput => ({
  kind: 'deposit',
  date: b.txnDate,
  memo: b.memo,
  payeeName: b.payerName,
  destinationAccountId: b.destinationAccountId,
  lines: b.lines.map((l) => ({ accountId: l.accountId, description: l.description, amountCents: l.amount })),
});

export const companyTransfer = (b: Static<typeof CompanyTransferBody>): PostingInput => ({
  kind: 'transfer',
  date: b.date,
  memo: b.description,
  reference: b.reference,
  fromAccountId: b.fromAccountId,
  toAccountId: b.toAccountId,
  amountCents: b.amountCents,
});

export const headerTransfer = (b: Static<typeof HeaderTransferBody>): PostingInput => ({
  kind: 'transfer',
  date: b.txnDate,
  memo: b.memo,
  fromAccountId: b.fromAccountId,
  toAccountId: b.toAccountId,
  amountCents: b.amount,
});

export const companyJournalEntry = (b: Static<typeof CompanyJournalEntryBody>): PostingInput => ({
  kind: 'journal_entry',
  date: b.date,
  memo: b.memo,
  reference: b.reference,
  lines: b.lines,
});

export const headerJournalEntry = (b: Static<typeof HeaderJournalEntryBody>): PostingInput => ({
  kind: 'journal_entry',
  date: b.txnDate,
  memo: b.memo,
  reference: b.reference,
  lines: b.lines.map((l) => ({
    accountId: l.accountId,
    description: l.description,
    ...(l.postingType === 'debit' ? { debitCents: l.amount } : { creditCents: l.amount }),
  })),
});
