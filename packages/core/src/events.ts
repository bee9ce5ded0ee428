/**
 * The one catalogue of webhook event types. Writes put these types on their outbox rows, the API
 * validates subscriptions against them and publishes them (OpenAPI and GET /api/v1/webhooks/event-types).
 * An event's `data` is the resource as the API returns it.
 */
export const EVENT_TYPES = {
  'company.created': 'A client company was created (with its chart of accounts, if its template has one).',
  'company.updated': 'A client company was changed (name, legal name, tax id, currency, fiscal-year start month).',
  'company.archived': 'A client company was archived: its books stay readable, nothing can be written to them.',
  'company.unarchived': 'An archived client company was brought back: its books can be written to again.',
  'entry.created': 'A draft journal entry was created (it moves no balance until posted).',
  'entry.posted': 'A journal entry was posted.',
  'entry.voided': 'A posted journal entry was voided.',
  'account.created': 'An account was added to the chart of accounts.',
  'account.updated': 'An account was changed (name, code, type, archived...).',
  'account.deleted': 'An unused account was deleted.',
  'books.closed': 'The books were closed through a date.',
  'books.reopened': 'The books-closed date was moved back or removed.',
  'books.fiscal_year_changed': 'The month the fiscal year starts in was changed.',
  'invoice.created': 'An invoice was created.',
  'invoice.updated': 'An invoice was changed.',
  'invoice.voided': 'An invoice was voided.',
  'customer_payment.created': 'A customer payment was recorded.',
  'customer_payment.voided': 'A customer payment was voided.',
  'bill.created': 'A bill was created.',
  'bill.updated': 'A bill was changed.',
  'bill.voided': 'A bill was voided.',
  'bill_payment.created': 'A bill payment was recorded.',
  'bill_payment.voided': 'A bill payment was voided.',
  'credit_memo.created': 'A credit memo was created.',
  'credit_memo.voided': 'A credit memo was voided.',
  'vendor_credit.created': 'A vendor credit was created.',
  'vendor_credit.voided': 'A vendor credit was voided.',
  'sales_receipt.created': 'A sales receipt was created.',
  'sales_receipt.voided': 'A sales receipt was voided.',
  'refund_receipt.created': 'A refund receipt was created.',
  'refund_receipt.voided': 'A refund receipt was voided.',
  'credit_memo.updated': 'A credit memo was changed.',
  'vendor_credit.updated': 'A vendor credit was changed.',
  'sales_receipt.updated': 'A sales receipt was changed.',
  'refund_receipt.updated': 'A refund receipt was changed.',
  'estimate.created': 'An estimate was created.',
  'estimate.updated': 'An estimate was changed.',
  'estimate.voided': 'An estimate was voided.',
  'estimate.converted': 'An estimate was converted to an invoice.',
  'contact.created': 'A customer or vendor was added.',
  'contact.updated': 'A customer or vendor was changed (including archived).',
  'item.created': 'A product or service item was added.',
  'item.updated': 'An item was changed (including archived).',
  'tax_rate.created': 'A tax rate was added.',
  'tax_rate.updated': 'A tax rate was changed (including archived).',
  'bank_account.created': 'A bank or card account (a register linked to a ledger account) was added.',
  'bank_transaction.categorized': 'A bank transaction was posted to accounts (categorized or reclassified).',
  'bank_transaction.matched': 'A bank transaction was matched to invoices, bills or payments (or split across them).',
  'bank_transaction.reconciled': 'A bank transaction was reconciled into an open reconciliation.',
  'bank_transaction.excluded': 'A bank transaction was taken out of the books.',
  'bank_transaction.included': 'An excluded bank transaction was brought back for review.',
  'bank_transaction.review_needed': 'The bank changed a classified transaction; it needs a second look.',
  'bank_feed.connected': 'A bank feed (an aggregator connection) was connected.',
  'bank_feed.synced': 'A bank feed sync committed a page: counts of rows added, modified and removed.',
  'bank_feed.failed': 'A bank feed sync failed; the connection shows the error.',
  'reconciliation.opened': 'A reconciliation was opened for a bank account and statement.',
  'reconciliation.finished': 'A reconciliation was finished: the books agree with the statement.',
  'reconciliation.undone': 'The last finished reconciliation of a bank account was undone.',
  'import.completed':
    'An import of journal history or accounts finished: counts of rows, entries posted and rows refused (atomicity=entry).',
  'import.failed': 'A background import stopped without posting the rest of its file; the import says why.',
  'agent_proposal.created': "An agent's write was held by the firm's approval policy: a proposal waits for a person.",
  'agent_proposal.approved': 'A person approved an agent proposal; its write runs next.',
  'agent_proposal.rejected': 'A person rejected an agent proposal; nothing was written.',
  'agent_proposal.executed': "An approved agent proposal's write ran: the payload names the record.",
  'agent_proposal.failed':
    'An approved agent proposal could not run (a changed record, a closed period): nothing was written.',
  'agent_proposal.expired': 'An agent proposal waited past its expiry without a decision.',
  'close.opened': "A company's close of a period was opened; its checklist is computed from the books.",
  'close.item_signed_off': 'A person signed off a checklist item of a close as fine as it is, with a note.',
  'close.finished': 'A close was finished: the books are closed through its period end and its evidence is stored.',
  'close.reopened': 'A finished close was reopened with a reason: the books are open again from its period.',
  'attachment.created':
    'A file (receipt, invoice, statement) was uploaded as an attachment, with the records it was attached to.',
  'attachment.linked': 'An attachment was attached to one more record.',
  'attachment.unlinked': 'An attachment was taken off a record.',
  'attachment.deleted':
    'An attachment was deleted; `retained` says its file is kept because posted records still refer to it.',
  'webhook.test': 'A test ping sent on request to one subscription only; it cannot be subscribed to.',
} as const;

export type EventType = keyof typeof EVENT_TYPES;

export const EVENT_TYPE_LIST = Object.keys(EVENT_TYPES) as EventType[];

/** The test ping is sent only when asked for, to the one subscription it was asked for. */
export const TEST_EVENT_TYPE = 'webhook.test' satisfies EventType;

/** What a subscription may list; `*` means every subscribable type, present and future. */
export const SUBSCRIBABLE_EVENT_TYPES = EVENT_TYPE_LIST.filter((t) => t !== TEST_EVENT_TYPE);

export const ALL_EVENTS = '*';

export const isEventType = (value: string): value is EventType => Object.hasOwn(EVENT_TYPES, value);
