import { agentAuditEvents } from '@firm/db';
import { DEMO_OWNER_EMAIL } from '@firm/demo';
import { verifyAuditChains } from '@firm/gateway';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../testing';
import { bearer, connect, registerClient, signIn } from '../oauth/fixtures';

let t: TestApp;
let agent: { authorization: string };
beforeAll(async () => {
  t = await createTestApp();
  const jar = await signIn(t.app, DEMO_OWNER_EMAIL);
  const registered = await registerClient(t.database.db, {
    isPublic: true,
    name: 'Bookkeeping Agent',
    redirectUris: ['http://127.0.0.1:33418/callback'],
  });
  const tokens = await connect(t.app, jar, registered, {
    scope: [
      'acct:clients:read',
      'acct:clients:write',
      'acct:entities:read',
      'acct:entities:write',
      'acct:transactions:read',
      'acct:transactions:create',
      'acct:transactions:update',
      'acct:reports:read',
      'acct:audit:read',
    ].join(' '),
  });
  agent = bearer(tokens.access_token);
});
afterAll(() => t.close());

let n = 0;
const call = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) =>
  t.app.inject({
    method,
    url: `/agent/v1${url}`,
    headers: { ...agent, ...(method === 'POST' ? { 'idempotency-key': `e2e-${++n}` } : {}) },
    ...(payload ? { payload } : {}),
  });

describe('an agent with an OAuth access token', () => {
  it('works a client file end to end, and the audit trail proves what it did', async () => {
    const clients = (await call('GET', '/acct/clients')).json().data;
    expect(clients).toHaveLength(2);
    const c = `/acct/clients/${t.orgId}`;
    const scan = await call('GET', '/skills/client-health-scan');
    expect(scan.statusCode).toBe(200);
    expect(scan.json().data.clients).toBe(2);

    const customer = (await call('POST', `${c}/entities/Customer`, { DisplayName: 'Cool Cars' })).json().data;
    const vendor = (await call('POST', `${c}/entities/Vendor`, { DisplayName: 'Parts Depot' })).json().data;
    const invoice = await call('POST', `${c}/transactions`, {
      entityType: 'invoice',
      payload: {
        CustomerRef: { value: customer.Id },
        TxnDate: '2026-06-01',
        DueDate: '2026-06-30',
        Line: [
          {
            Amount: 1500,
            DetailType: 'SalesItemLineDetail',
            SalesItemLineDetail: { ItemAccountRef: { value: t.account('4100') }, Qty: 3, UnitPrice: 500 },
          },
        ],
      },
    });
    expect(invoice.statusCode).toBe(201);
    const bill = await call('POST', `${c}/transactions`, {
      entityType: 'bill',
      payload: {
        VendorRef: { value: vendor.Id },
        TxnDate: '2026-06-02',
        Line: [
          {
            Amount: 400,
            DetailType: 'AccountBasedExpenseLineDetail',
            AccountBasedExpenseLineDetail: { AccountRef: { value: t.account('5000') } },
          },
        ],
      },
    });
    expect(bill.statusCode).toBe(201);
    const invoiceId = invoice.json().data.transactionId;
    const updated = await call('PATCH', `${c}/transactions/${invoiceId}`, {
      entityType: 'invoice',
      payload: { SyncToken: '0', DueDate: '2026-07-15' },
    });
    expect(updated.json().data.data).toMatchObject({ SyncToken: '1', DueDate: '2026-07-15', TotalAmt: 1500 });
    const stale = await call('PATCH', `${c}/transactions/${invoiceId}`, {
      entityType: 'invoice',
      payload: { SyncToken: '0', DueDate: '2026-08-01' },
    });
    expect(stale.statusCode).toBe(409);
    expect(stale.json().error.details[0].current).toMatchObject({ SyncToken: '1', DueDate: '2026-07-15' });

    const back = await call('POST', `${c}/query`, { query: "SELECT * FROM Invoice WHERE TxnDate >= '2026-06-01'" });
    expect(back.json().data.QueryResponse.Invoice.map((i: { Id: string }) => i.Id)).toEqual([invoiceId]);
    const relayed = await call('POST', `${c}/request`, { path: `bill/${bill.json().data.transactionId}` });
    expect(relayed.json().data.Bill).toMatchObject({ TotalAmt: 400 });

    const partner = (path: string) =>
      t.app.inject({ method: 'GET', url: `/api/v1/companies/${t.orgId}/reports/${path}`, headers: t.auth });
    const summary = (
      report: { Rows: { Row: { group?: string; Summary?: { ColData: { value: string }[] } }[] } },
      g: string,
    ) =>
      report.Rows.Row.find((r) => r.group === g)
        ?.Summary?.ColData.slice(1)
        .map((v) => v.value);
    const pnl = (await call('GET', `${c}/reports/profit-loss?start_date=2026-01-01&end_date=2026-12-31`)).json().data;
    const pnlPartner = (await partner('profit-and-loss?startDate=2026-01-01&endDate=2026-12-31')).json().data;
    expect(summary(pnl, 'NetIncome')).toEqual([(pnlPartner.netIncomeCents / 100).toFixed(2)]);
    expect(pnlPartner.netIncomeCents).toBe(110000);
    const bs = (await call('GET', `${c}/reports/balance-sheet?end_date=2026-12-31`)).json().data;
    const bsPartner = (await partner('balance-sheet?endDate=2026-12-31')).json().data;
    expect(summary(bs, 'TotalLiabilitiesAndEquity')).toEqual([
      (bsPartner.totalLiabilitiesAndEquityCents / 100).toFixed(2),
    ]);
    const tb = (await call('GET', `${c}/reports/trial-balance?end_date=2026-12-31`)).json().data;
    const tbPartner = (await partner('trial-balance?endDate=2026-12-31')).json().data;
    expect(summary(tb, 'GrandTotal')).toEqual([
      (tbPartner.totalDebitCents / 100).toFixed(2),
      (tbPartner.totalCreditCents / 100).toFixed(2),
    ]);
    const gl = (await call('GET', `${c}/reports/general-ledger?start_date=2026-06-01&end_date=2026-06-30`)).json().data;
    const glPartner = (await partner('general-ledger?startDate=2026-06-01&endDate=2026-06-30')).json().data;
    expect(gl.Rows.Row).toHaveLength(glPartner.accounts.length);

    // An agent cannot open clients to itself, whatever scopes it was granted.
    const access = await call('PATCH', c, { agentAccess: 'read' });
    expect(access.statusCode).toBe(403);
    expect(access.json().error.code).toBe('FORBIDDEN');

    const events = (await call('GET', '/audit-events?limit=100')).json().data;
    expect(events[0]).toMatchObject({
      actor: { kind: 'oauth_token' },
      operation: 'clients.update',
      outcome: 'refused',
    });
    const verified = await verifyAuditChains(t.database.db, t.app.auditTrail, { firmId: t.demo.firmId });
    expect(verified).toMatchObject({ ok: true, breaks: [] });
    const edited = events.find((e: { operation: string }) => e.operation === 'transactions.create');
    await t.database.db
      .update(agentAuditEvents)
      .set({ entityId: 'someone-else' })
      .where(and(eq(agentAuditEvents.firmId, t.demo.firmId), eq(agentAuditEvents.id, edited.id)));
    const broken = await verifyAuditChains(t.database.db, t.app.auditTrail, { firmId: t.demo.firmId });
    expect(broken.ok).toBe(false);
    expect(broken.breaks[0]).toMatchObject({ id: edited.id, seq: edited.seq });
  });
});

describe('an agent paying a bill through a bank-linked account', () => {
  it('gets the payment’s register row back, as the partner API’s bill payment does', async () => {
    const register = await t.app.inject({
      method: 'POST',
      url: '/api/v1/bank-accounts',
      headers: t.orgHeaders,
      payload: { accountId: t.account('1000'), mask: '4321' },
    });
    expect(register.statusCode, register.body).toBe(201);
    const c = `/acct/clients/${t.orgId}`;
    const vendor = (await call('POST', `${c}/entities/Vendor`, { DisplayName: 'Paid By Agent' })).json().data;
    const bill = await call('POST', `${c}/transactions`, {
      entityType: 'bill',
      payload: {
        VendorRef: { value: vendor.Id },
        TxnDate: '2026-06-03',
        Line: [
          {
            Amount: 260,
            DetailType: 'AccountBasedExpenseLineDetail',
            AccountBasedExpenseLineDetail: { AccountRef: { value: t.account('6300') } },
          },
        ],
      },
    });
    expect(bill.statusCode, bill.body).toBe(201);
    const payment = {
      entityType: 'bill-payment',
      payload: {
        VendorRef: { value: vendor.Id },
        TxnDate: '2026-06-10',
        PayType: 'Check',
        CheckPayment: { BankAccountRef: { value: t.account('1000') } },
        TotalAmt: 260,
        Line: [{ Amount: 260, LinkedTxn: [{ TxnId: bill.json().data.transactionId, TxnType: 'Bill' }] }],
      },
    };
    const dry = await t.app.inject({
      method: 'POST',
      url: `/agent/v1${c}/transactions?dryRun=true`,
      headers: { ...agent, 'idempotency-key': 'e2e-dry-bill-payment' },
      payload: payment,
    });
    expect(dry.statusCode, dry.body).toBe(200);
    expect(dry.json().data.bankTransactionIds).toBeUndefined();
    const paid = await call('POST', `${c}/transactions`, payment);
    expect(paid.statusCode, paid.body).toBe(201);
    const ids: string[] = paid.json().data.bankTransactionIds;
    expect(ids).toHaveLength(1);
    const row = await t.app.inject({
      method: 'GET',
      url: `/api/v1/bank-transactions/${ids[0]}`,
      headers: t.orgHeaders,
    });
    expect(row.json().data).toMatchObject({ sourceType: 'posting', status: 'matched', amountCents: -26_000 });
  });
});
