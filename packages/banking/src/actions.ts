import { DomainError, type ErrorDetail, isUuid, newId } from '@firm/core';
import { rowsOf, type Tx } from '@firm/db';
import {
  type ActiveTaxRate,
  activeTaxRates,
  documentMatchAmounts,
  documentState,
  lockDocuments,
  type PaymentType,
  voidPayment,
} from '@firm/documents';
import { recordPayment } from './payments';
import {
  type DebitCreditLine,
  journalEntryStatus,
  type LedgerContext,
  nowOf,
  postTransaction,
  voidEntry,
} from '@firm/ledger';
import { sql } from 'drizzle-orm';
import { getBankAccount } from './accounts';
import {
  type BankTransaction,
  bankTransactionEvent,
  bankTransactionNotFound,
  getBankTransaction,
  type BankTransactionStatus,
  moveBankTransaction,
} from './transactions';

/**
 * One part of a classification. Amounts run in the direction of the bank transaction (positive); an account part
 * may be negative when it is a difference going the other way, such as a fee withheld from a deposit.
 */
export interface ClassificationPart {
  accountId?: string | undefined;
  documentId?: string | undefined;
  amountCents: number;
  description?: string | null | undefined;
  /**
   * An account part's sales tax rate: its amount includes the tax, which is posted to the rate's liability account
   * and the rest to the part's account.
   */
  taxRateId?: string | null | undefined;
  /** Where the part came from in the caller's input, for error details. */
  field: string;
}

/** The tax inside a tax-inclusive amount at `bps` basis points, rounded half away from zero, in the amount's sign. */
export function includedTaxCents(amountCents: number, bps: number): number {
  const tax = Math.round((Math.abs(amountCents) * bps) / (10_000 + bps));
  return amountCents < 0 ? -tax : tax;
}

/** The active tax rates the parts name, refusing (INVALID_TAX_RATE, by field) one that is not. */
async function taxRatesOf(
  tx: Tx,
  organizationId: string,
  parts: ClassificationPart[],
): Promise<Map<string, ActiveTaxRate>> {
  const named = parts.filter((p) => p.taxRateId);
  const ids = [...new Set(named.map((p) => (p.taxRateId as string).toLowerCase()).filter(isUuid))];
  const rows = await activeTaxRates(tx, organizationId, ids);
  const byId = new Map(rows.map((r) => [r.id, r]));
  for (const p of named) {
    if (!byId.has((p.taxRateId as string).toLowerCase())) {
      const field = `${p.field}.taxRateId`.replace(/^accountId\./, '');
      throw new DomainError('INVALID_TAX_RATE', `${field} is not an active tax rate of this organization`, [
        { field, message: 'not active in this organization' },
      ]);
    }
  }
  return byId;
}

const invalid = (code: 'INVALID_ALLOCATION' | 'INVALID_ACCOUNT', field: string, message: string) =>
  new DomainError(code, `${field} ${message}`, [{ field, message }]);

const alreadyReconciled = (t: BankTransaction) =>
  new DomainError(
    'ALREADY_RECONCILED',
    `bank transaction ${t.id} is reconciled; undo its reconciliation before changing it`,
  );

/** The row locked for an action, refused once reconciled. */
async function lockForChange(tx: Tx, organizationId: string, id: string): Promise<BankTransaction> {
  const t = await getBankTransaction(tx, organizationId, id, true);
  if (t.reconciled) throw alreadyReconciled(t);
  return t;
}

/**
 * Takes a row out of the books: voids its own entry and the payments its match recorded (which opens what they
 * paid again), and drops its classification lines. Refused in a closed period by the ledger.
 */
async function unapply(tx: Tx, ctx: LedgerContext, t: BankTransaction, reason: string): Promise<void> {
  for (const line of t.lines) {
    if (line.paymentId) {
      const payment = await documentState(tx, t.organizationId, line.paymentId);
      if (payment && payment.status !== 'void') {
        await voidPayment(tx, ctx, t.organizationId, payment.type as PaymentType, line.paymentId, reason);
      }
    }
  }
  if (t.journalEntryId) {
    const status = await journalEntryStatus(tx, t.organizationId, t.journalEntryId);
    if (status === 'posted') await voidEntry(tx, ctx, t.organizationId, t.journalEntryId, reason);
  }
  await tx.execute(sql`delete from bank_transaction_lines
    where organization_id = ${t.organizationId} and bank_transaction_id = ${t.id}`);
  await tx.execute(sql`update bank_transactions set journal_entry_id = null
    where organization_id = ${t.organizationId} and id = ${t.id}`);
}

interface Classification {
  contactId?: string | null | undefined;
  taxRateId?: string | null | undefined;
  /** Only documents of this contact may be matched. */
  onlyContactId?: string | null | undefined;
}

async function checkReference(
  tx: Tx,
  organizationId: string,
  table: 'contacts' | 'tax_rates',
  id: string | null | undefined,
  field: string,
): Promise<void> {
  if (!id) return;
  const found = isUuid(id)
    ? rowsOf(
        await tx.execute(
          sql`select 1 from ${sql.raw(table)} where organization_id = ${organizationId} and id = ${id} and not archived`,
        ),
      )
    : [];
  if (found.length === 0) {
    const code = table === 'contacts' ? 'INVALID_CONTACT' : 'INVALID_TAX_RATE';
    throw new DomainError(
      code,
      `${field} is not an active ${table === 'contacts' ? 'contact' : 'tax rate'} of this organization`,
      [{ field, message: 'not active in this organization' }],
    );
  }
}

/**
 * Puts an unapplied row in the books as `parts`: document parts settle invoices and bills (recording a payment for
 * each contact) or existing payments; account parts are posted in the row's own entry against its bank account.
 * The parts must add up to the bank amount exactly.
 */
async function apply(
  tx: Tx,
  ctx: LedgerContext,
  t: BankTransaction,
  parts: ClassificationPart[],
  c: Classification,
): Promise<BankTransactionStatus> {
  const organizationId = t.organizationId;
  const absolute = Math.abs(t.amountCents);
  const sign = t.amountCents > 0 ? 1 : -1;
  await checkReference(tx, organizationId, 'contacts', c.contactId, 'contactId');
  await checkReference(tx, organizationId, 'tax_rates', c.taxRateId, 'taxRateId');
  const bank = await getBankAccount(tx, organizationId, t.bankAccountId);
  const accountParts = parts.filter((p) => p.accountId !== undefined);
  const documentParts = parts.filter((p) => p.documentId !== undefined);
  const rates = await taxRatesOf(tx, organizationId, accountParts);
  const taxOf = (p: ClassificationPart) => {
    const rate = p.taxRateId ? rates.get(p.taxRateId.toLowerCase()) : undefined;
    return rate ? { rate, cents: includedTaxCents(p.amountCents, Number(rate.rate_bps)) } : null;
  };
  for (const p of accountParts) {
    if (p.accountId?.toLowerCase() === bank.accountId) {
      throw invalid('INVALID_ACCOUNT', `${p.field}.accountId`, "is the bank transaction's own bank account");
    }
  }

  // Documents: locked in id order (concurrent matches cannot deadlock), then judged.
  const ids = [...new Set(documentParts.map((p) => (p.documentId as string).toLowerCase()))];
  if (ids.length !== documentParts.length) {
    throw new DomainError('DUPLICATE_ALLOCATION', 'a document is named twice', [
      { field: 'parts', message: 'each document at most once' },
    ]);
  }
  const wanted = ids.filter(isUuid).sort();
  const locked = await lockDocuments(tx, organizationId, wanted);
  const byId = new Map(locked.map((d) => [d.id, d]));
  const [target, payment] = sign > 0 ? ['invoice', 'customer_payment'] : ['bill', 'bill_payment'];
  const byContact = new Map<string, ClassificationPart[]>();
  const over: ErrorDetail[] = [];
  for (const p of documentParts) {
    const field = `${p.field}.documentId`;
    const doc = byId.get((p.documentId as string).toLowerCase());
    if (!doc || (doc.type !== target && doc.type !== payment)) {
      throw invalid('INVALID_ALLOCATION', field, `is not an open ${target} or ${payment} of this organization`);
    }
    if (doc.status === 'void') throw invalid('INVALID_ALLOCATION', field, `is a void ${doc.type}`);
    if (c.onlyContactId && doc.contact_id !== c.onlyContactId.toLowerCase()) {
      throw invalid('INVALID_ALLOCATION', field, `is a ${doc.type} of another contact`);
    }
    if (doc.type === target) {
      if (doc.status === 'paid') throw invalid('INVALID_ALLOCATION', field, `is a paid ${doc.type}`);
      if (p.amountCents <= 0 || p.amountCents > Number(doc.open_cents)) {
        over.push({ field: `${p.field}.amountCents`, message: 'exceeds the open balance', openCents: doc.open_cents });
      }
      const list = byContact.get(doc.contact_id) ?? [];
      list.push(p);
      byContact.set(doc.contact_id, list);
    } else {
      if (doc.bank_account_id !== bank.accountId) {
        throw invalid('INVALID_ALLOCATION', field, 'is a payment through another bank account');
      }
      if (p.amountCents !== Number(doc.total_cents)) {
        throw invalid(
          'INVALID_ALLOCATION',
          `${p.field}.amountCents`,
          `must be the payment's amount (${doc.total_cents})`,
        );
      }
      const holders = rowsOf<{ id: string; source_type: string; reconciled: boolean }>(
        await tx.execute(sql`select t.id, t.source_type, t.reconciliation_id is not null as reconciled
          from bank_transaction_lines l
          join bank_transactions t on t.organization_id = l.organization_id and t.id = l.bank_transaction_id
          where l.organization_id = ${organizationId} and l.document_id = ${doc.id} and t.id <> ${t.id}
          for update of t`),
      );
      // The register row the posting route wrote for the payment gives way to the bank's own row: the money is in
      // the register once. Any other holder keeps it.
      const taken = holders.find((h) => h.source_type !== 'posting' || h.reconciled || t.sourceType === 'posting');
      if (taken) throw invalid('INVALID_ALLOCATION', field, `is already matched to bank transaction ${taken.id}`);
      for (const h of holders) {
        await tx.execute(sql`delete from bank_transactions where organization_id = ${organizationId} and id = ${h.id}`);
      }
    }
  }
  if (over.length > 0) {
    throw new DomainError('OVER_ALLOCATION', `${over[0]?.field} exceeds the open balance of its document`, over);
  }
  const total = parts.reduce((s, p) => s + p.amountCents, 0);
  if (total !== absolute) {
    throw new DomainError(
      'SPLIT_MISMATCH',
      `the parts add up to ${total} cents; the bank transaction is ${absolute} cents`,
      [{ field: 'parts', message: 'must add up to the bank amount', partsCents: total, amountCents: absolute }],
    );
  }

  // Payments for invoices and bills, one per contact.
  const paymentOf = new Map<ClassificationPart, string>();
  for (const [contactId, list] of byContact) {
    const { document } = await recordPayment(
      tx,
      ctx,
      organizationId,
      {
        type: payment as PaymentType,
        contactId,
        date: t.date,
        bankAccountId: bank.accountId,
        memo: t.description,
        allocations: list.map((p) => ({
          documentId: (p.documentId as string).toLowerCase(),
          amountCents: p.amountCents,
          field: p.field,
        })),
      },
      // This bank row is the payment's row in the register.
      { register: false },
    );
    for (const p of list) paymentOf.set(p, document.id);
  }

  // The row's own entry: the bank line against the account parts.
  let entryId: string | null = null;
  if (accountParts.length > 0) {
    const bankCents = sign * accountParts.reduce((s, p) => s + p.amountCents, 0);
    const dc = (accountId: string, cents: number, description: string | null): DebitCreditLine =>
      cents > 0 ? { accountId, description, debitCents: cents } : { accountId, description, creditCents: -cents };
    // A taxed part posts its amount less the tax to its account and the tax to the rate's liability account.
    const lines: DebitCreditLine[] = [
      ...(bankCents !== 0 ? [dc(bank.accountId, bankCents, t.description)] : []),
      ...accountParts.flatMap((p) => {
        const tax = taxOf(p);
        const net = p.amountCents - (tax?.cents ?? 0);
        return [
          ...(net !== 0 ? [dc((p.accountId as string).toLowerCase(), -sign * net, p.description ?? null)] : []),
          ...(tax && tax.cents !== 0
            ? [dc(tax.rate.liability_account_id, -sign * tax.cents, p.description ?? null)]
            : []),
        ];
      }),
    ];
    const receipt = await postTransaction(tx, ctx, organizationId, {
      kind: 'bank_transaction',
      date: t.date,
      memo: t.description,
      payeeName: t.counterparty,
      lines,
    });
    entryId = receipt.journalEntryId;
  }

  let lineNo = 0;
  for (const p of parts) {
    lineNo += 1;
    const tax = p.accountId !== undefined ? taxOf(p) : null;
    await tx.execute(sql`
      insert into bank_transaction_lines
        (id, organization_id, bank_transaction_id, line_no, account_id, document_id, payment_id, description, amount_cents,
         tax_rate_id, tax_cents)
      values (${newId()}, ${organizationId}, ${t.id}, ${lineNo}, ${p.accountId?.toLowerCase() ?? null},
              ${p.documentId?.toLowerCase() ?? null}, ${paymentOf.get(p) ?? null}, ${p.description ?? null},
              ${p.amountCents}, ${tax?.rate.id ?? null}, ${tax?.cents ?? 0})`);
  }
  const status: BankTransactionStatus = documentParts.length > 0 ? 'matched' : 'categorized';
  await moveBankTransaction(tx, ctx, organizationId, t, status, {
    journalEntryId: entryId,
    contactId: c.contactId?.toLowerCase() ?? null,
    taxRateId: c.taxRateId?.toLowerCase() ?? null,
    reviewReason: null,
  });
  return status;
}

async function classify(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  id: string,
  parts: ClassificationPart[],
  c: Classification,
  reason: string,
  extra: Record<string, unknown> = {},
): Promise<BankTransaction> {
  const t = await lockForChange(tx, organizationId, id);
  if (t.status === 'excluded') {
    throw new DomainError('INVALID_STATE', 'the bank transaction is excluded; include it first');
  }
  await unapply(tx, ctx, t, reason);
  const status = await apply(tx, ctx, t, parts, c);
  const after = await getBankTransaction(tx, organizationId, id);
  await bankTransactionEvent(
    tx,
    ctx,
    status === 'matched' ? 'bank_transaction.matched' : 'bank_transaction.categorized',
    after,
    { previousStatus: t.status, reason, ...extra },
  );
  return after;
}

export interface ReclassifyInput {
  accountId: string;
  reason: string;
  contactId?: string | null | undefined;
  taxRateId?: string | null | undefined;
}

/**
 * Classifies the whole amount to one account: an unreviewed row is categorized (its entry posted); a classified
 * one has what it posted voided and a new entry posted. Refused once reconciled, in a closed period, or into an
 * archived account.
 */
export async function reclassifyBankTransaction(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  id: string,
  input: ReclassifyInput,
): Promise<BankTransaction> {
  const reason = input.reason.trim();
  if (!reason) {
    throw new DomainError('VALIDATION_ERROR', 'reason is empty', [{ field: 'reason', message: 'is empty' }]);
  }
  const t = await getBankTransaction(tx, organizationId, id);
  return classify(
    tx,
    ctx,
    organizationId,
    id,
    [
      {
        accountId: input.accountId,
        amountCents: Math.abs(t.amountCents),
        taxRateId: input.taxRateId,
        field: 'accountId',
      },
    ],
    { contactId: input.contactId, taxRateId: input.taxRateId },
    reason,
    { accountId: input.accountId.toLowerCase() },
  );
}

export interface MatchInput {
  documents?: { documentId: string; amountCents?: number | undefined }[] | undefined;
  /**
   * Instead of documents: the register row a posting route wrote for the same money (`sourceType: posting`). The
   * bank's row takes its place, with its entry, so the money is in the books and the register once.
   */
  bankTransactionId?: string | undefined;
  /** Where a difference between the documents and the bank amount goes (a fee, a discount, rounding). */
  differenceAccountId?: string | undefined;
  /** Only documents of this contact may be matched. */
  contactId?: string | undefined;
}

/**
 * Matches the row to open invoices (money in) or bills (money out), recording their payment, or to existing
 * customer or bill payments through its bank account. Each document's amount defaults to its open balance (a
 * payment's amount); they must add up to the bank amount, or the difference goes to `differenceAccountId`.
 */
export async function matchBankTransaction(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  id: string,
  input: MatchInput,
): Promise<BankTransaction> {
  // An unknown row (or another organization's) is 404 whatever the body says.
  const t = await getBankTransaction(tx, organizationId, id);
  const documents = input.documents ?? [];
  if (documents.length > 0 === (input.bankTransactionId !== undefined)) {
    throw new DomainError('VALIDATION_ERROR', 'name documents or a bankTransactionId, not both', [
      { field: 'documents', message: 'exactly one of documents and bankTransactionId' },
    ]);
  }
  if (input.bankTransactionId !== undefined) {
    if (input.differenceAccountId !== undefined) {
      throw new DomainError('VALIDATION_ERROR', 'a posting’s register row matches only its own amount', [
        { field: 'differenceAccountId', message: 'not with bankTransactionId' },
      ]);
    }
    return matchToPosting(tx, ctx, organizationId, id, input.bankTransactionId);
  }
  const defaults = await documentMatchAmounts(
    tx,
    organizationId,
    documents.map((d) => d.documentId),
  );
  const parts: ClassificationPart[] = documents.map((d, i) => ({
    documentId: d.documentId,
    amountCents: d.amountCents ?? defaults.get(d.documentId.toLowerCase()) ?? 0,
    field: `documents[${i}]`,
  }));
  const matched = parts.reduce((s, p) => s + p.amountCents, 0);
  const difference = Math.abs(t.amountCents) - matched;
  // A document without an amount to match (unknown, paid, void) is refused by name when the parts are judged.
  const judgeFirst = parts.some((p) => p.amountCents <= 0);
  if (difference !== 0 && !judgeFirst) {
    if (!input.differenceAccountId) {
      throw new DomainError(
        'AMOUNT_MISMATCH',
        `the documents add up to ${matched} cents; the bank transaction is ${Math.abs(t.amountCents)} cents`,
        [
          {
            field: 'documents',
            message: 'differ from the bank amount; name differenceAccountId',
            documentsCents: matched,
            amountCents: Math.abs(t.amountCents),
            differenceCents: difference,
          },
        ],
      );
    }
    parts.push({ accountId: input.differenceAccountId, amountCents: difference, field: 'differenceAccountId' });
  }
  return classify(tx, ctx, organizationId, id, parts, { onlyContactId: input.contactId }, 'matched');
}

/**
 * The bank's row takes the place of the register row a posting route wrote for the same money: it takes that row's
 * entry, lines and contact, and the posting's row is deleted. The two must be rows of one bank account with the same
 * amount; the posting's row must not be reconciled (its money already cleared) and the bank's row must not be a
 * posting's own. Whatever the bank's row had posted before is voided first.
 */
async function matchToPosting(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  id: string,
  postingRowId: string,
): Promise<BankTransaction> {
  const field = 'bankTransactionId';
  const notAPosting = () =>
    invalid('INVALID_ALLOCATION', field, "is not a posting's register row of this bank account");
  if (!isUuid(postingRowId) || postingRowId.toLowerCase() === id.toLowerCase()) throw notAPosting();
  // Both rows locked in id order, so two matches naming the same pair cannot deadlock.
  const [first, second] = [id.toLowerCase(), postingRowId.toLowerCase()].sort() as [string, string];
  const locked = rowsOf<{ id: string }>(
    await tx.execute(sql`select id from bank_transactions
      where organization_id = ${organizationId} and id in (${first}::uuid, ${second}::uuid)
      order by id for update`),
  );
  if (!locked.some((r) => r.id === id.toLowerCase())) throw bankTransactionNotFound();
  const t = await lockForChange(tx, organizationId, id);
  if (t.status === 'excluded') {
    throw new DomainError('INVALID_STATE', 'the bank transaction is excluded; include it first');
  }
  if (t.sourceType === 'posting') {
    throw new DomainError('INVALID_STATE', "a posting's register row is matched by the bank's row, not the reverse");
  }
  if (!locked.some((r) => r.id === postingRowId.toLowerCase())) throw notAPosting();
  const posting = await getBankTransaction(tx, organizationId, postingRowId);
  if (posting.sourceType !== 'posting' || posting.bankAccountId !== t.bankAccountId) throw notAPosting();
  if (posting.reconciled) throw invalid('INVALID_ALLOCATION', field, 'is reconciled: its money already cleared');
  if (posting.amountCents !== t.amountCents) {
    throw new DomainError(
      'AMOUNT_MISMATCH',
      `the posting's register row is ${posting.amountCents} cents; the bank transaction is ${t.amountCents} cents`,
      [
        {
          field,
          message: 'differs from the bank amount',
          amountCents: t.amountCents,
          postingCents: posting.amountCents,
        },
      ],
    );
  }
  await unapply(tx, ctx, t, 'matched to a posting');
  await tx.execute(sql`update bank_transaction_lines set bank_transaction_id = ${t.id}
    where organization_id = ${organizationId} and bank_transaction_id = ${posting.id}`);
  await tx.execute(sql`delete from bank_transactions where organization_id = ${organizationId} and id = ${posting.id}`);
  await moveBankTransaction(tx, ctx, organizationId, t, 'matched', {
    journalEntryId: posting.journalEntryId,
    contactId: posting.contactId,
    taxRateId: posting.taxRateId,
    reviewReason: null,
  });
  const after = await getBankTransaction(tx, organizationId, id);
  await bankTransactionEvent(tx, ctx, 'bank_transaction.matched', after, {
    previousStatus: t.status,
    reason: 'matched',
    replacedBankTransactionId: posting.id,
  });
  return after;
}

export interface SplitInput {
  parts: {
    accountId?: string | undefined;
    documentId?: string | undefined;
    amountCents: number;
    description?: string | undefined;
    /** An account part's sales tax rate (see `ClassificationPart`). */
    taxRateId?: string | undefined;
  }[];
  contactId?: string | undefined;
}

/** Splits the row across accounts and/or invoices and bills; the parts must add up to the bank amount exactly. */
export async function splitBankTransaction(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  id: string,
  input: SplitInput,
): Promise<BankTransaction> {
  await getBankTransaction(tx, organizationId, id);
  const parts = input.parts.map((p, i) => {
    if ((p.accountId === undefined) === (p.documentId === undefined)) {
      throw new DomainError('VALIDATION_ERROR', `parts[${i}] needs exactly one of accountId and documentId`, [
        { field: `parts[${i}]`, message: 'needs exactly one of accountId and documentId' },
      ]);
    }
    if (p.taxRateId !== undefined && p.documentId !== undefined) {
      throw new DomainError('VALIDATION_ERROR', `parts[${i}].taxRateId is for account parts only`, [
        { field: `parts[${i}].taxRateId`, message: 'not with documentId: a document carries its own tax' },
      ]);
    }
    return { ...p, field: `parts[${i}]` };
  });
  return classify(tx, ctx, organizationId, id, parts, { contactId: input.contactId }, 'split', {
    parts: parts.length,
  });
}

/** Takes the row out of the books, voiding what it posted; reversible with include. */
export async function excludeBankTransaction(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  id: string,
  reason = 'excluded',
): Promise<BankTransaction> {
  const t = await lockForChange(tx, organizationId, id);
  if (t.status === 'excluded') throw new DomainError('INVALID_STATE', 'the bank transaction is already excluded');
  await unapply(tx, ctx, t, reason);
  await moveBankTransaction(tx, ctx, organizationId, t, 'excluded', { contactId: null, taxRateId: null });
  const after = await getBankTransaction(tx, organizationId, id);
  await bankTransactionEvent(tx, ctx, 'bank_transaction.excluded', after, { previousStatus: t.status, reason });
  return after;
}

/** Brings an excluded row back as unreviewed. */
export async function includeBankTransaction(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  id: string,
): Promise<BankTransaction> {
  const t = await lockForChange(tx, organizationId, id);
  if (t.status !== 'excluded')
    throw new DomainError('INVALID_STATE', 'only an excluded bank transaction can be included');
  await moveBankTransaction(tx, ctx, organizationId, t, 'unreviewed');
  const after = await getBankTransaction(tx, organizationId, id);
  await bankTransactionEvent(tx, ctx, 'bank_transaction.included', after);
  return after;
}

/**
 * Checks the row into the open reconciliation of its bank account (or the one named, which must be that one).
 * Only rows in the books (categorized or matched) dated on or before the statement's end date.
 */
export async function reconcileBankTransaction(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  id: string,
  input: { reconciliationId?: string | undefined } = {},
): Promise<BankTransaction> {
  const t = await lockForChange(tx, organizationId, id);
  if (t.status !== 'categorized' && t.status !== 'matched') {
    throw new DomainError(
      'INVALID_STATE',
      `only a bank transaction in the books (categorized or matched) can be reconciled; this one is ${t.status}`,
    );
  }
  const [session] = rowsOf<{ id: string; bank_account_id: string; statement_end_date: string }>(
    await tx.execute(sql`
      select id, bank_account_id, statement_end_date::text as statement_end_date from reconciliations
      where organization_id = ${organizationId} and status = 'open'
        and ${
          input.reconciliationId
            ? sql`id = ${isUuid(input.reconciliationId) ? input.reconciliationId : null}`
            : sql`bank_account_id = ${t.bankAccountId}`
        }
      for share`),
  );
  if (!session || session.bank_account_id !== t.bankAccountId) {
    throw new DomainError(
      'NO_OPEN_RECONCILIATION',
      input.reconciliationId
        ? 'the reconciliation named is not an open reconciliation of this transaction’s bank account'
        : 'the transaction’s bank account has no open reconciliation; open one first',
    );
  }
  if (t.date > session.statement_end_date) {
    throw new DomainError(
      'INVALID_STATE',
      `the transaction is dated ${t.date}, after the statement end date ${session.statement_end_date}`,
    );
  }
  await tx.execute(sql`update bank_transactions set reconciliation_id = ${session.id},
      reconciled_at = ${nowOf(ctx).toISOString()}, updated_at = ${nowOf(ctx).toISOString()}
    where organization_id = ${organizationId} and id = ${id}`);
  const after = await getBankTransaction(tx, organizationId, id);
  await bankTransactionEvent(tx, ctx, 'bank_transaction.reconciled', after, { reconciliationId: session.id });
  return after;
}

export { unapply as unapplyBankTransaction, apply as applyClassification };
