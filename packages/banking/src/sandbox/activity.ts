/**
 * The activity of a sandbox item: a checking account and a credit card over one month, as the ordered change log
 * Plaid's /transactions/sync pages through. It is deterministic for a given start date, so tests and the demo know
 * what arrives: recurring merchants, a card purchase pending then posted (at another amount), a refund reversing a
 * purchase, a merchant renamed after the fact, and a duplicate charge the bank removes.
 *
 * Amounts are Plaid's: positive is money out of the account, negative money in.
 */
export interface SandboxAccount {
  account_id: string;
  name: string;
  official_name: string;
  mask: string;
  type: 'depository' | 'credit';
  subtype: 'checking' | 'credit card';
  balances: { current: number; available: number | null; iso_currency_code: string };
}

export interface SandboxTransaction {
  transaction_id: string;
  account_id: string;
  amount: number;
  iso_currency_code: string;
  date: string;
  authorized_date: string | null;
  name: string;
  merchant_name: string | null;
  pending: boolean;
  pending_transaction_id: string | null;
  payment_channel: 'online' | 'in store' | 'other';
  transaction_type: string;
}

export type SandboxChange =
  | { kind: 'added'; transaction: SandboxTransaction }
  | { kind: 'modified'; transaction: SandboxTransaction }
  | { kind: 'removed'; transaction_id: string; account_id: string };

const addDays = (date: string, days: number) =>
  new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);

export function sandboxAccounts(itemId: string): SandboxAccount[] {
  return [
    {
      account_id: `${itemId}-checking`,
      name: 'Plaid Checking',
      official_name: 'Plaid Business Checking',
      mask: '0000',
      type: 'depository',
      subtype: 'checking',
      balances: { current: 0, available: 0, iso_currency_code: 'USD' },
    },
    {
      account_id: `${itemId}-card`,
      name: 'Plaid Credit Card',
      official_name: 'Plaid Business Credit Card',
      mask: '3333',
      type: 'credit',
      subtype: 'credit card',
      balances: { current: 0, available: null, iso_currency_code: 'USD' },
    },
  ];
}

/**
 * The change log of one item for the month starting at `start`. `extraRows` adds that many more card purchases
 * (for load tests), spread over the month.
 */
export function sandboxActivity(itemId: string, start: string, extraRows = 0): SandboxChange[] {
  const checking = `${itemId}-checking`;
  const card = `${itemId}-card`;
  let n = 0;
  const txn = (
    account: string,
    day: number,
    amount: number,
    name: string,
    merchant: string | null,
    more: Partial<SandboxTransaction> = {},
  ): SandboxTransaction => ({
    transaction_id: `${itemId}-tx-${String(++n).padStart(5, '0')}`,
    account_id: account,
    amount,
    iso_currency_code: 'USD',
    date: addDays(start, day),
    authorized_date: addDays(start, Math.max(0, day - 1)),
    name,
    merchant_name: merchant,
    pending: false,
    pending_transaction_id: null,
    payment_channel: account === card ? 'in store' : 'other',
    transaction_type: 'place',
    ...more,
  });
  const added: SandboxTransaction[] = [
    txn(checking, 0, -10_000, 'OWNER CAPITAL CONTRIBUTION', null),
    txn(checking, 1, 2_400, 'WEWORK RENT OCT', 'WeWork'),
    txn(checking, 2, -1_200, 'ACH DEPOSIT ACME CORP INV-1001', 'Acme Corp'),
    txn(checking, 4, 500, 'ACH PAYMENT PAPER SUPPLY CO', 'Paper Supply Co'),
    txn(checking, 7, -845.5, 'STRIPE TRANSFER', 'Stripe'),
    txn(checking, 14, 3_150, 'GUSTO PAYROLL', 'Gusto'),
    txn(checking, 14, -912.25, 'STRIPE TRANSFER', 'Stripe'),
    txn(checking, 18, 189.99, 'COMCAST BUSINESS', 'Comcast'),
    txn(checking, 21, -1_034.1, 'STRIPE TRANSFER', 'Stripe'),
    txn(checking, 25, 850, 'CARD PAYMENT THANK YOU', null),
    txn(checking, 28, 3_150, 'GUSTO PAYROLL', 'Gusto'),
    txn(checking, 29, 15, 'MONTHLY SERVICE FEE', null),
    txn(card, 1, 312.4, 'AMAZON WEB SERVICES', 'Amazon Web Services', { payment_channel: 'online' }),
    txn(card, 3, 5.75, 'STARBUCKS STORE 1458', 'Starbucks'),
    txn(card, 5, 54.99, 'ADOBE *CREATIVE CLOUD', 'Adobe', { payment_channel: 'online' }),
    txn(card, 6, 23.18, 'UBER *TRIP', 'Uber', { payment_channel: 'online' }),
    txn(card, 10, 5.75, 'STARBUCKS STORE 1458', 'Starbucks'),
    txn(card, 12, 412.6, 'DELTA AIR LINES', 'Delta', { payment_channel: 'online' }),
    txn(card, 15, -412.6, 'DELTA AIR LINES REFUND', 'Delta', { payment_channel: 'online' }),
    txn(card, 17, 6.5, 'SQ *BLUE BOTTLE', null),
    txn(card, 19, 18.42, 'UBER *TRIP', 'Uber', { payment_channel: 'online' }),
    txn(card, 22, 89, 'STAPLES 0042', 'Staples'),
    txn(card, 22, 89, 'STAPLES 0042', 'Staples'),
    txn(card, 24, 5.75, 'STARBUCKS STORE 1458', 'Starbucks'),
  ];
  for (let i = 0; i < extraRows; i++) {
    added.push(txn(card, i % 28, 1 + (i % 97) + (i % 13) / 100, `MERCHANT ${i % 50}`, `Merchant ${i % 50}`));
  }
  const pending = txn(card, 26, 40, 'SHELL OIL 5541', 'Shell', { pending: true });
  const changes: SandboxChange[] = [...added, pending].map((t) => ({ kind: 'added', transaction: t }));
  // Later that month: the fuel purchase posts at its final amount and replaces its pending version.
  const posted = txn(card, 27, 42.17, 'SHELL OIL 5541', 'Shell', { pending_transaction_id: pending.transaction_id });
  changes.push({ kind: 'added', transaction: posted });
  changes.push({ kind: 'removed', transaction_id: pending.transaction_id, account_id: card });
  // The bank names the coffee shop it could not name at first.
  const renamed = added.find((t) => t.name === 'SQ *BLUE BOTTLE') as SandboxTransaction;
  changes.push({ kind: 'modified', transaction: { ...renamed, merchant_name: 'Blue Bottle Coffee' } });
  // The second, duplicate Staples charge is withdrawn.
  const duplicate = added.filter((t) => t.name === 'STAPLES 0042')[1] as SandboxTransaction;
  changes.push({ kind: 'removed', transaction_id: duplicate.transaction_id, account_id: card });
  return changes;
}

export const encodeSandboxCursor = (index: number) => Buffer.from(`v1:${index}`).toString('base64url');

/** The position a cursor stands for: 0 for none, null for one this sandbox never issued. */
export function decodeSandboxCursor(cursor: unknown): number | null {
  if (cursor === undefined || cursor === null || cursor === '') return 0;
  const m = /^v1:(\d+)$/.exec(Buffer.from(String(cursor), 'base64url').toString('utf8'));
  return m ? Number(m[1]) : null;
}

/** One /transactions/sync page of a change log, in Plaid's response shape (without request_id). */
export function sandboxSyncPage(changes: SandboxChange[], from: number, count: number) {
  const page = changes.slice(from, from + count);
  const to = from + page.length;
  return {
    added: page.flatMap((c) => (c.kind === 'added' ? [c.transaction] : [])),
    modified: page.flatMap((c) => (c.kind === 'modified' ? [c.transaction] : [])),
    removed: page.flatMap((c) =>
      c.kind === 'removed' ? [{ transaction_id: c.transaction_id, account_id: c.account_id }] : [],
    ),
    next_cursor: encodeSandboxCursor(to),
    has_more: to < changes.length,
  };
}

/**
 * A sandbox access token names its item and the first day of its activity, so any sandbox aggregator (the server
 * restarted, another process, the demo seed's in-process one) serves the same item from the token alone.
 */
export const sandboxAccessToken = (itemId: string, start: string) => `access-sandbox-${itemId}-${start}`;

export function parseSandboxAccessToken(token: unknown): { itemId: string; start: string } | null {
  const m = typeof token === 'string' ? /^access-sandbox-(item-[0-9a-f]{8})-(\d{4}-\d{2}-\d{2})$/.exec(token) : null;
  if (!m || Number.isNaN(Date.parse(`${m[2]}T00:00:00Z`))) return null;
  return { itemId: m[1] as string, start: m[2] as string };
}
