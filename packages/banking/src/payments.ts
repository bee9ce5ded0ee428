import { createPayment, type Document, type PaymentInput } from '@firm/documents';
import type { Tx } from '@firm/db';
import type { LedgerContext, PostingReceipt } from '@firm/ledger';
import { registerPaymentRow } from './transactions';

export interface RecordedPayment {
  document: Document;
  receipt: PostingReceipt;
  /** The register row the payment got in its bank or card account's register; empty when the account has none. */
  bankTransactionIds: string[];
}

/**
 * Records a customer payment or a bill payment whichever door it comes through (the partner API's posting and
 * document routes, an agent's Payment or BillPayment): the payment and its allocations (`createPayment`), and, when
 * the account the money moved through holds a bank register, the payment's row in that register, matched to it, in
 * the same transaction. A payment recorded from a bank row (`classifyBankTransaction`) passes `register: false`:
 * that row is already the register's.
 */
export async function recordPayment(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  input: PaymentInput,
  options: { register?: boolean } = {},
): Promise<RecordedPayment> {
  const { document, receipt } = await createPayment(tx, ctx, organizationId, input);
  if (options.register === false) return { document, receipt, bankTransactionIds: [] };
  const label = input.type === 'customer_payment' ? 'Customer payment' : 'Bill payment';
  const registered = await registerPaymentRow(tx, ctx, organizationId, {
    ledgerAccountId: document.bankAccountId as string,
    date: document.date,
    // Money in for a customer's payment, out for a bill's.
    amountCents: input.type === 'customer_payment' ? document.totalCents : -document.totalCents,
    description: document.memo ?? `${label}${document.number ? ` ${document.number}` : ''}`,
    counterparty: null,
    paymentId: document.id,
  });
  return { document, receipt, bankTransactionIds: registered ? [registered] : [] };
}
