import { acctClients, contacts, documents, journalEntries, recordVersions } from '@firm/db';
import { createApiKey } from '@firm/identity';
import { verifyAuditChains } from '@firm/gateway';
import { count, eq, sum } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';

let t: TestApp;
let base: string;
let other: Awaited<ReturnType<typeof createOtherFirm>>;
beforeAll(async () => {
  t = await createTestApp();
  base = `/agent/v1/acct/clients/${t.orgId}`;
  other = await createOtherFirm(t.database.db);
});
afterAll(() => t.close());

let keyNo = 0;
const send = (
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  url: string,
  payload?: object,
  headers: Record<string, string> = {},
) =>
  t.app.inject({
    method,
    url,
    headers: {
      ...t.auth,
      ...(method === 'POST' ? { 'idempotency-key': `key-${++keyNo}` } : {}),
      ...headers,
    },
    ...(payload ? { payload } : {}),
  });

/** Everything a gateway write could change in the demo organization. */
async function books(orgId = t.orgId) {
  const db = t.database.db;
  const n = async (table: typeof contacts | typeof documents | typeof journalEntries) =>
    (await db.select({ n: count() }).from(table).where(eq(table.organizationId, orgId)))[0]?.n;
  const [versions] = await db
    .select({ v: sum(recordVersions.version) })
    .from(recordVersions)
    .where(eq(recordVersions.organizationId, orgId));
  return {
    contacts: await n(contacts),
    documents: await n(documents),
    entries: await n(journalEntries),
    versions: versions?.v ?? null,
  };
}

const line = (amount: number, accountId: string) => ({
  Amount: amount,
  DetailType: 'SalesItemLineDetail',
  SalesItemLineDetail: { ItemAccountRef: { value: accountId }, Qty: 1 },
});

let customerId: string;
let vendorId: string;

describe('agent gateway: clients, coverage, status', () => {
  it('answers /status with a bare object', async () => {
    const res = await send('GET', '/agent/v1/status');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ ok: true, service: 'agent-gateway', capabilities: expect.any(Array) });
    expect(res.json().data).toBeUndefined();
  });

  it("lists the firm's open clients and hides other firms' and closed ones", async () => {
    const res = await send('GET', '/agent/v1/acct/clients');
    expect(res.statusCode).toBe(200);
    const clients = res.json().data;
    expect(clients).toHaveLength(2);
    expect(clients[0]).toMatchObject({ status: 'connected', agentAccess: 'read_write', platform: 'embedded' });
    expect(clients.map((c: { id: string }) => c.id)).toContain(t.orgId);
    const one = await send('GET', base);
    expect(one.json().data).toMatchObject({ id: t.orgId, acctCompanyId: t.orgId });
    const foreign = await send('GET', `/agent/v1/acct/clients/${other.orgId}`);
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json().error.code).toBe('CLIENT_NOT_FOUND');
    // The other firm's own client starts closed to agents: invisible even to its own firm's credentials.
    const closed = await t.app.inject({
      method: 'GET',
      url: `/agent/v1/acct/clients/${other.orgId}`,
      headers: { authorization: other.authorization },
    });
    expect(closed.statusCode).toBe(404);
  });

  it('publishes the coverage registry', async () => {
    const res = await send('GET', '/agent/v1/acct/coverage');
    const invoice = res.json().data.find((e: { entity: string }) => e.entity === 'Invoice');
    expect(invoice).toMatchObject({
      transactionType: 'invoice',
      scopes: { read: 'acct:transactions:read', create: 'acct:transactions:create' },
    });
  });
});

describe('agent gateway: entities', () => {
  it('creates, reads and sparse-updates customers and vendors, counting changes in the SyncToken', async () => {
    const created = await send('POST', `${base}/entities/Customer`, {
      DisplayName: 'Amy Bird Sanctuary',
      PrimaryEmailAddr: { Address: 'birds@amy.test' },
    });
    expect(created.statusCode).toBe(201);
    customerId = created.json().data.Id;
    expect(created.json().data).toMatchObject({ SyncToken: '0', MetaData: { CreateTime: expect.any(String) } });
    const vendor = await send('POST', `${base}/entities/vendor`, { DisplayName: 'Paper & Co' });
    vendorId = vendor.json().data.Id;
    const updated = await send('PATCH', `${base}/entities/Customer/${customerId}`, {
      SyncToken: '0',
      PrimaryPhone: { FreeFormNumber: '555-0100' },
    });
    expect(updated.statusCode).toBe(200);
    expect(updated.json().data).toMatchObject({
      SyncToken: '1',
      DisplayName: 'Amy Bird Sanctuary',
      PrimaryPhone: { FreeFormNumber: '555-0100' },
    });
    const customers = await send('GET', `${base}/customers`);
    expect(customers.json().data.QueryResponse).toMatchObject({ startPosition: 1, totalCount: 1 });
    expect(customers.json().data.QueryResponse.Customer[0].Id).toBe(customerId);
  });

  it('pages the chart of accounts by startPosition and maxResults', async () => {
    const page = await send('GET', `${base}/entities/Account?startPosition=2&maxResults=3`);
    expect(page.statusCode).toBe(200);
    const response = page.json().data.QueryResponse;
    expect(response).toMatchObject({ startPosition: 2, maxResults: 3 });
    expect(response.Account).toHaveLength(3);
    const shortcut = await send('GET', `${base}/chart-accounts?maxResults=1000`);
    expect(shortcut.json().data.QueryResponse.Account[1].Id).toBe(response.Account[0].Id);
    expect(shortcut.json().data.QueryResponse.totalCount).toBe(response.totalCount);
  });

  it('refuses maxResults 0 or 1001 and startPosition 0', async () => {
    for (const query of ['maxResults=0', 'maxResults=1001', 'startPosition=0']) {
      const res = await send('GET', `${base}/entities/Account?${query}`);
      expect(res.statusCode, query).toBe(400);
      expect(res.json().error.code).toBe('VALIDATION_ERROR');
      const txns = await send('GET', `${base}/transactions?entityType=invoice&${query}`);
      expect(txns.statusCode, query).toBe(400);
    }
  });

  it('answers an entity the gateway does not cover with 404 and writes nothing', async () => {
    const before = await books();
    const res = await send('POST', `${base}/entities/Payroll`, { Name: 'x' });
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('ENTITY_NOT_COVERED');
    expect(await books()).toEqual(before);
  });
});

describe('agent gateway: transactions', () => {
  let invoiceId: string;

  it('creates an invoice and a bill in the spec shape', async () => {
    const res = await send('POST', `${base}/transactions`, {
      entityType: 'invoice',
      payload: {
        CustomerRef: { value: customerId },
        TxnDate: '2026-04-01',
        DocNumber: 'A-1',
        Line: [line(120.25, t.account('4000'))],
      },
    });
    expect(res.statusCode).toBe(201);
    const data = res.json().data;
    expect(data).toMatchObject({
      clientId: t.orgId,
      acctCompanyId: t.orgId,
      entityType: 'invoice',
      operation: 'create',
      source: 'acct',
      postedAt: expect.any(String),
      data: { TotalAmt: 120.25, Balance: 120.25, SyncToken: '0', CustomerRef: { value: customerId } },
    });
    expect(data.transactionId).toBe(data.data.Id);
    invoiceId = data.transactionId;
    const bill = await send('POST', `${base}/transactions`, {
      entityType: 'bill',
      payload: {
        VendorRef: { value: vendorId },
        TxnDate: '2026-04-02',
        Line: [
          {
            Amount: 80,
            DetailType: 'AccountBasedExpenseLineDetail',
            AccountBasedExpenseLineDetail: { AccountRef: { value: t.account('6300') } },
          },
        ],
      },
    });
    expect(bill.statusCode).toBe(201);
    expect(bill.json().data.data).toMatchObject({ TotalAmt: 80, VendorRef: { value: vendorId } });
    const list = await send('GET', `${base}/transactions?entityType=bill`);
    expect(list.json().data.QueryResponse.Bill).toHaveLength(1);
    const one = await send('GET', `${base}/transactions/${invoiceId}?entityType=invoice`);
    expect(one.json().data.DocNumber).toBe('A-1');
  });

  it('updates with the current SyncToken and refuses a stale one with the current record, writing nothing', async () => {
    const updated = await send('PATCH', `${base}/transactions/${invoiceId}`, {
      entityType: 'invoice',
      payload: { SyncToken: '0', DocNumber: 'A-1b' },
    });
    expect(updated.statusCode).toBe(200);
    expect(updated.json().data).toMatchObject({ operation: 'update', data: { SyncToken: '1', DocNumber: 'A-1b' } });
    const before = await books();
    const stale = await send('PATCH', `${base}/transactions/${invoiceId}`, {
      entityType: 'invoice',
      payload: { SyncToken: '0', DocNumber: 'A-1c' },
    });
    expect(stale.statusCode).toBe(409);
    expect(stale.json().error.code).toBe('STALE_SYNC_TOKEN');
    expect(stale.json().error.details[0].current).toMatchObject({ Id: invoiceId, SyncToken: '1', DocNumber: 'A-1b' });
    expect(await books()).toEqual(before);
  });

  it('refuses a type outside the allowlist, a missing entityType and a delete without syncToken, writing nothing', async () => {
    const before = await books();
    const payload = { CustomerRef: { value: customerId }, Line: [line(10, t.account('4000'))] };
    const outside = await send('POST', `${base}/transactions`, { entityType: 'time-activity', payload });
    expect(outside.statusCode).toBe(400);
    expect(outside.json().error.code).toBe('VALIDATION_ERROR');
    const missing = await send('POST', `${base}/transactions`, { payload });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error.details).toEqual(
      expect.arrayContaining([expect.objectContaining({ field: 'body.entityType' })]),
    );
    const noToken = await send('DELETE', `${base}/transactions/${invoiceId}`, { entityType: 'invoice' });
    expect(noToken.statusCode).toBe(400);
    expect(noToken.json().error.details).toEqual(
      expect.arrayContaining([expect.objectContaining({ field: 'body.syncToken' })]),
    );
    const entityNoToken = await send('DELETE', `${base}/entities/Invoice/${invoiceId}`);
    expect(entityNoToken.statusCode).toBe(400);
    expect(await books()).toEqual(before);
  });

  it('refuses an unbalanced journal entry as the ledger does, writing nothing', async () => {
    const before = await books();
    const res = await send('POST', `${base}/transactions`, {
      entityType: 'journal-entry',
      payload: {
        TxnDate: '2026-04-03',
        Line: [
          {
            Amount: 50,
            DetailType: 'JournalEntryLineDetail',
            JournalEntryLineDetail: { PostingType: 'Debit', AccountRef: { value: t.account('6300') } },
          },
          {
            Amount: 49.99,
            DetailType: 'JournalEntryLineDetail',
            JournalEntryLineDetail: { PostingType: 'Credit', AccountRef: { value: t.account('1000') } },
          },
        ],
      },
    });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.code).toBe('UNBALANCED_ENTRY');
    expect(await books()).toEqual(before);
  });

  it('shows a dry run with its journal effect and writes nothing', async () => {
    const before = await books();
    const res = await send('POST', `${base}/transactions?dryRun=true`, {
      entityType: 'purchase',
      payload: {
        TxnDate: '2026-04-04',
        AccountRef: { value: t.account('1000') },
        Line: [
          {
            Amount: 12.5,
            DetailType: 'AccountBasedExpenseLineDetail',
            AccountBasedExpenseLineDetail: { AccountRef: { value: t.account('6300') } },
          },
        ],
      },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toMatchObject({ dryRun: true, operation: 'create', data: { TotalAmt: 12.5 } });
    expect(res.json().data.journal).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ accountId: t.account('6300'), debit: 12.5 }),
        expect.objectContaining({ accountId: t.account('1000'), credit: 12.5 }),
      ]),
    );
    expect(await books()).toEqual(before);
  });

  it('replays a write with the same Idempotency-Key and refuses the key with another body', async () => {
    const payload = {
      entityType: 'deposit',
      payload: {
        TxnDate: '2026-04-05',
        DepositToAccountRef: { value: t.account('1000') },
        Line: [
          {
            Amount: 300,
            DetailType: 'DepositLineDetail',
            DepositLineDetail: { AccountRef: { value: t.account('4000') } },
          },
        ],
      },
    };
    const headers = { 'idempotency-key': 'deposit-once' };
    const first = await send('POST', `${base}/transactions`, payload, headers);
    expect(first.statusCode).toBe(201);
    const before = await books();
    const again = await send('POST', `${base}/transactions`, payload, headers);
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toEqual(first.json());
    const reused = await send(
      'POST',
      `${base}/transactions`,
      { ...payload, payload: { ...payload.payload, TxnDate: '2026-04-06' } },
      headers,
    );
    expect(reused.statusCode).toBe(422);
    expect(reused.json().error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await books()).toEqual(before);
    const missingKey = await t.app.inject({
      method: 'POST',
      url: `${base}/transactions`,
      headers: t.auth,
      payload,
    });
    expect(missingKey.statusCode).toBe(400);
    expect(missingKey.json().error.code).toBe('IDEMPOTENCY_KEY_REQUIRED');
    expect(await books()).toEqual(before);
  });

  it('deletes (voids) with the current syncToken', async () => {
    const res = await send('DELETE', `${base}/transactions/${invoiceId}`, { entityType: 'invoice', syncToken: '1' });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toMatchObject({ operation: 'delete', data: { Id: invoiceId, status: 'Deleted' } });
    const gone = await send('GET', `${base}/transactions/${invoiceId}?entityType=invoice`);
    expect(gone.statusCode).toBe(404);
    expect(gone.json().error.code).toBe('RECORD_NOT_FOUND');
  });
});

describe('agent gateway: who may write', () => {
  const invoice = () => ({
    entityType: 'invoice',
    payload: { CustomerRef: { value: customerId }, TxnDate: '2026-05-01', Line: [line(10, t.account('4000'))] },
  });

  it('refuses a token without the scope, writing nothing', async () => {
    const { key } = await createApiKey(t.database.db, {
      firmId: t.demo.firmId,
      scopes: ['acct:transactions:read', 'acct:entities:read'],
    });
    const before = await books();
    const res = await send('POST', `${base}/transactions`, invoice(), { authorization: `Bearer ${key}` });
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe('INSUFFICIENT_SCOPE');
    const entity = await send(
      'POST',
      `${base}/entities/Customer`,
      { DisplayName: 'Nope' },
      {
        authorization: `Bearer ${key}`,
      },
    );
    expect(entity.statusCode).toBe(403);
    // The entity's own read scope decides reads: transactions read through the generic route need theirs.
    const reads = await createApiKey(t.database.db, { firmId: t.demo.firmId, scopes: ['acct:entities:read'] });
    const read = await send('GET', `${base}/entities/Invoice`, undefined, { authorization: `Bearer ${reads.key}` });
    expect(read.statusCode).toBe(403);
    expect(read.json().error.details[0].scope).toBe('acct:transactions:read');
    expect(await books()).toEqual(before);
  });

  it('refuses writes to a client the firm opened for reading only, writing nothing', async () => {
    const opened = await send('PATCH', base, { agentAccess: 'read' });
    expect(opened.statusCode).toBe(200);
    expect(opened.json().data.agentAccess).toBe('read');
    const before = await books();
    const res = await send('POST', `${base}/transactions`, invoice());
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe('CLIENT_READ_ONLY');
    const patch = await send('PATCH', `${base}/entities/Customer/${customerId}`, { SyncToken: '1', DisplayName: 'x' });
    expect(patch.statusCode).toBe(403);
    expect((await send('GET', `${base}/transactions?entityType=bill`)).statusCode).toBe(200);
    expect(await books()).toEqual(before);

    await send('PATCH', base, { agentAccess: 'none' });
    expect((await send('GET', base)).statusCode).toBe(404);
    expect((await send('GET', '/agent/v1/acct/clients')).json().data).toHaveLength(1);
    await send('PATCH', base, { agentAccess: 'read_write' });
    const [row] = await t.database.db.select().from(acctClients).where(eq(acctClients.organizationId, t.orgId));
    expect(row?.agentAccess).toBe('read_write');
  });

  it("answers another firm's client with 404, writing nothing", async () => {
    const before = await books(other.orgId);
    const res = await send('POST', `/agent/v1/acct/clients/${other.orgId}/transactions`, invoice());
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('CLIENT_NOT_FOUND');
    const access = await send('PATCH', `/agent/v1/acct/clients/${other.orgId}`, { agentAccess: 'read_write' });
    expect(access.statusCode).toBe(404);
    expect(await books(other.orgId)).toEqual(before);
  });
});

describe('agent gateway: audit events', () => {
  it('records every call with its outcome, newest first, chained by HMAC under the audit key it names', async () => {
    const res = await send('GET', '/agent/v1/audit-events?limit=1000');
    expect(res.statusCode).toBe(200);
    const events = res.json().data;
    const updates = events.filter((e: { operation: string }) => e.operation === 'transactions.update');
    expect(updates).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ outcome: 'succeeded', syncTokenBefore: '0', syncTokenAfter: '1' }),
        expect.objectContaining({ outcome: 'refused', statusCode: 409, errorCode: 'STALE_SYNC_TOKEN' }),
      ]),
    );
    expect(events.some((e: { errorCode: string }) => e.errorCode === 'INSUFFICIENT_SCOPE')).toBe(true);
    for (let i = 0; i + 1 < events.length; i++) {
      expect(events[i].seq).toBe(events[i + 1].seq + 1);
      expect(events[i].prevHash).toBe(events[i + 1].hash);
    }
    expect(new Set(events.map((e: { keyId: string }) => e.keyId))).toEqual(new Set([t.app.auditTrail.keys.current]));
    const verified = await verifyAuditChains(t.database.db, t.app.auditTrail, { firmId: t.demo.firmId });
    expect(verified).toMatchObject({ ok: true, chains: [{ keyedFrom: 1, anchor: { seq: events[0].seq } }] });
    const filtered = await send('GET', '/agent/v1/audit-events?operation=transactions.delete&limit=1');
    expect(filtered.json().data).toHaveLength(1);
    expect(filtered.json().data[0]).toMatchObject({ entityType: 'Invoice', clientId: t.orgId });
    const page = await send('GET', '/agent/v1/audit-events?limit=2');
    const next = await send('GET', `/agent/v1/audit-events?limit=2&cursor=${page.json().nextCursor}`);
    expect(next.json().data[0].seq).toBe(page.json().data[1].seq - 1);
  });
});

describe('agent gateway: OpenAPI', () => {
  it('lists the gateway as a server and documents each operation with its scope and errors', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/api/openapi.json' })).json();
    expect(doc.servers).toEqual(expect.arrayContaining([expect.objectContaining({ url: '/agent/v1' })]));
    const gateway = Object.entries(doc.paths as Record<string, Record<string, Record<string, unknown>>>).filter(
      ([path]) => path.startsWith('/agent/v1/'),
    );
    expect(gateway.length).toBe(25);
    for (const [path, ops] of gateway) {
      for (const [method, op] of Object.entries(ops)) {
        expect(Object.keys(op.responses as object), `${method} ${path}`).toEqual(
          expect.arrayContaining(['400', '401', '403', '404', '429', '500']),
        );
        expect(op['x-required-scope'], `${method} ${path}`).toMatch(/^acct:[a-z]+:[a-z]+$/);
      }
    }
    expect(doc['x-error-codes'].STALE_SYNC_TOKEN).toMatchObject({ status: 409 });
  });
});

describe('agent gateway: query', () => {
  const query = (text: string, headers: Record<string, string> = {}) =>
    send('POST', `${base}/query`, { query: text }, headers);

  it("answers in the platform's QueryResponse shape, filtered, counted and paged", async () => {
    const byName = await query("SELECT * FROM Customer WHERE DisplayName = 'Amy Bird Sanctuary'");
    expect(byName.statusCode).toBe(200);
    expect(byName.json().data.QueryResponse).toMatchObject({ startPosition: 1, maxResults: 1, totalCount: 1 });
    expect(byName.json().data.QueryResponse.Customer[0].Id).toBe(customerId);
    const counted = await query('select count(*) from Account where Active = true');
    expect(counted.json().data.QueryResponse.totalCount).toBeGreaterThan(10);
    const page = await query("SELECT Id, Name FROM Account WHERE AcctNum LIKE '1%' ORDERBY AcctNum DESC MAXRESULTS 2");
    const accounts = page.json().data.QueryResponse.Account;
    expect(accounts).toHaveLength(2);
    expect(Object.keys(accounts[0]).sort()).toEqual(['Id', 'Name']);
    const bills = await query("SELECT * FROM Bill WHERE TotalAmt >= '80.00' AND TxnDate = '2026-04-02'");
    expect(bills.json().data.QueryResponse.Bill).toHaveLength(1);
  });

  it('refuses with 400 a time JavaScript reads but Postgres cannot hold', async () => {
    for (const when of ['0000-01-01', '+275760-09-13T00:00:00Z', 'not a time']) {
      const res = await query(`SELECT * FROM Customer WHERE MetaData.CreateTime > '${when}'`);
      expect({ when, status: res.statusCode }).toEqual({ when, status: 400 });
    }
  });

  it('keeps literals out of SQL and refuses a second statement, naming its position', async () => {
    const before = await books();
    const injected = await query("SELECT * FROM Customer WHERE DisplayName = 'x'' OR ''1''=''1'");
    expect([200, 400]).toContain(injected.statusCode);
    if (injected.statusCode === 200) expect(injected.json().data.QueryResponse.Customer).toEqual([]);
    const quoted = await query("SELECT * FROM Customer WHERE DisplayName = 'x\\' OR 1=1 --'");
    expect(quoted.statusCode).toBe(200);
    expect(quoted.json().data.QueryResponse.totalCount).toBe(0);
    const second = await query('SELECT * FROM Customer; DELETE FROM contacts');
    expect(second.statusCode).toBe(400);
    expect(second.json().error).toMatchObject({ code: 'QUERY_INVALID', details: [{ offset: 22, column: 23 }] });
    expect(await books()).toEqual(before);
  });

  it('refuses an unknown entity or field, a bad MAXRESULTS and a token without the entity read scope', async () => {
    const entity = await query('SELECT * FROM Payroll');
    expect(entity.statusCode).toBe(400);
    expect(entity.json().error.details[0]).toMatchObject({ offset: 14 });
    const field = await query("SELECT * FROM Invoice WHERE Secret = '1'");
    expect(field.json().error.message).toMatch(/no queryable field Secret/);
    expect((await query('SELECT * FROM Invoice MAXRESULTS 1001')).statusCode).toBe(400);
    expect((await query('SELECT * FROM Invoice STARTPOSITION 0')).statusCode).toBe(400);
    const { key } = await createApiKey(t.database.db, {
      firmId: t.demo.firmId,
      scopes: ['acct:clients:read', 'acct:entities:read'],
    });
    const scoped = { authorization: `Bearer ${key}` };
    expect((await query('SELECT * FROM Customer', scoped)).statusCode).toBe(200);
    const refused = await query('SELECT * FROM Invoice', scoped);
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.details[0].scope).toBe('acct:transactions:read');
  });
});

describe('agent gateway: reports', () => {
  it("answers the four reports in the platform's shape with the partner API's figures", async () => {
    const partner = (name: string, query: string) =>
      t.app.inject({ method: 'GET', url: `/api/v1/companies/${t.orgId}/reports/${name}?${query}`, headers: t.auth });
    const pnl = await send('GET', `${base}/reports/profit-loss?start_date=2026-01-01&end_date=2026-12-31`);
    expect(pnl.statusCode).toBe(200);
    expect(pnl.json().data.Header).toMatchObject({ ReportName: 'ProfitAndLoss', StartPeriod: '2026-01-01' });
    const rows = pnl.json().data.Rows.Row as { group: string; Summary: { ColData: { value: string }[] } }[];
    const net = rows.find((r) => r.group === 'NetIncome')?.Summary.ColData[1]?.value;
    const expected = (await partner('profit-and-loss', 'startDate=2026-01-01&endDate=2026-12-31')).json().data;
    expect(Math.round(Number(net) * 100)).toBe(expected.netIncomeCents);
    expect(expected.netIncomeCents).not.toBe(0);

    const tb = await send('GET', `${base}/reports/trial-balance?endDate=2026-12-31`);
    const total = (tb.json().data.Rows.Row as { group?: string; Summary?: { ColData: { value: string }[] } }[]).find(
      (r) => r.group === 'GrandTotal',
    );
    const tbExpected = (await partner('trial-balance', 'endDate=2026-12-31')).json().data;
    expect(total?.Summary?.ColData.map((c) => c.value)).toEqual([
      'TOTAL',
      (tbExpected.totalDebitCents / 100).toFixed(2),
      (tbExpected.totalCreditCents / 100).toFixed(2),
    ]);
    const bs = await send('GET', `${base}/reports/balance-sheet?end_date=2026-12-31`);
    expect(bs.json().data.Header).toMatchObject({ ReportName: 'BalanceSheet', EndPeriod: '2026-12-31' });
    const gl = await send('GET', `${base}/reports/general-ledger?start_date=2026-04-01&end_date=2026-04-30`);
    expect(gl.json().data.Rows.Row.length).toBeGreaterThan(0);
    expect((await send('GET', `${base}/reports/cash-flow`)).statusCode).toBe(400);
  });
});

describe('agent gateway: pass-through', () => {
  const relay = (payload: object, headers: Record<string, string> = {}) =>
    send('POST', `${base}/request`, payload, headers);

  it("relays reads, queries, reports and writes by the platform's own paths", async () => {
    const read = await relay({ path: `customer/${customerId}` });
    expect(read.statusCode).toBe(200);
    expect(read.json().data.Customer).toMatchObject({ Id: customerId, DisplayName: 'Amy Bird Sanctuary' });
    const full = await relay({ method: 'GET', path: `/v3/company/${t.orgId}/companyinfo/${t.orgId}` });
    expect(full.json().data.CompanyInfo).toMatchObject({ Id: t.orgId });
    const q = await relay({ path: 'query', query: { query: 'SELECT COUNT(*) FROM Vendor' } });
    expect(q.json().data.QueryResponse.totalCount).toBe(1);
    const report = await relay({ path: 'reports/ProfitAndLoss', query: { start_date: '2026-01-01' } });
    expect(report.json().data.Header.ReportName).toBe('ProfitAndLoss');

    const created = await relay(
      { method: 'POST', path: 'customer', body: { DisplayName: 'Relay Customer' } },
      { 'idempotency-key': 'relay-create' },
    );
    expect(created.statusCode).toBe(200);
    const id = created.json().data.Customer.Id;
    const updated = await relay({ method: 'POST', path: 'customer', body: { Id: id, SyncToken: '0', Active: false } });
    expect(updated.json().data.Customer).toMatchObject({ SyncToken: '1', Active: false });
  });

  it('confines paths to the company root and refuses the rest, writing nothing', async () => {
    const before = await books();
    const cases: [string, number][] = [
      [`../${other.orgId}/customer/1`, 400],
      ['customer/%2e%2e/invoice', 400],
      ['customer%2F1', 400],
      ['https://quickbooks.api.intuit.com/v3/company/1/customer/1', 400],
      ['//evil.test/customer/1', 400],
      [`/v3/company/${other.orgId}/customer/${customerId}`, 404],
      ['payroll/1', 404],
    ];
    for (const [path, status] of cases) {
      const res = await relay({ method: 'POST', path, body: { DisplayName: 'x' } });
      expect(res.statusCode, path).toBe(status);
    }
    const put = await relay({ method: 'PUT', path: 'customer', body: { DisplayName: 'x' } });
    expect(put.statusCode).toBe(422);
    const { key } = await createApiKey(t.database.db, {
      firmId: t.demo.firmId,
      scopes: ['acct:clients:read', 'acct:entities:read'],
    });
    const readOnly = { authorization: `Bearer ${key}` };
    expect((await relay({ path: `customer/${customerId}` }, readOnly)).statusCode).toBe(200);
    const write = await relay({ method: 'POST', path: 'customer', body: { DisplayName: 'y' } }, readOnly);
    expect(write.statusCode).toBe(403);
    expect(write.json().error.details[0].scope).toBe('acct:entities:write');
    expect(await books()).toEqual(before);
  });
});

describe('agent gateway: payments and bill payments', () => {
  const txn = (entityType: string, payload: object) => send('POST', `${base}/transactions`, { entityType, payload });
  const get = async (entityType: string, id: string) =>
    (await send('GET', `${base}/transactions/${id}?entityType=${entityType}`)).json().data;

  it('pays an invoice and a bill, reads them back in the platform shape, and voids a payment on delete', async () => {
    const invoice = (
      await txn('invoice', {
        CustomerRef: { value: customerId },
        TxnDate: '2026-05-01',
        Line: [line(300, t.account('4000'))],
      })
    ).json().data.data;
    const bill = (
      await txn('bill', {
        VendorRef: { value: vendorId },
        TxnDate: '2026-05-02',
        Line: [
          {
            Amount: 45.5,
            DetailType: 'AccountBasedExpenseLineDetail',
            AccountBasedExpenseLineDetail: { AccountRef: { value: t.account('6300') } },
          },
        ],
      })
    ).json().data.data;

    const paid = await txn('payment', {
      CustomerRef: { value: customerId },
      TxnDate: '2026-05-10',
      TotalAmt: 300,
      DepositToAccountRef: { value: t.account('1000') },
      Line: [{ Amount: 300, LinkedTxn: [{ TxnId: invoice.Id, TxnType: 'Invoice' }] }],
    });
    expect(paid.statusCode).toBe(201);
    const payment = paid.json().data.data;
    expect(payment).toMatchObject({
      SyncToken: '0',
      TotalAmt: 300,
      UnappliedAmt: 0,
      CustomerRef: { value: customerId },
      DepositToAccountRef: { value: t.account('1000') },
      Line: [{ Amount: 300, LinkedTxn: [{ TxnId: invoice.Id, TxnType: 'Invoice' }] }],
    });
    expect(paid.json().data.journal).toEqual(
      expect.arrayContaining([expect.objectContaining({ accountId: t.account('1000'), debit: 300 })]),
    );
    expect((await get('invoice', invoice.Id)).Balance).toBe(0);

    const billPaid = await txn('bill-payment', {
      VendorRef: { value: vendorId },
      TxnDate: '2026-05-11',
      PayType: 'Check',
      CheckPayment: { BankAccountRef: { value: t.account('1000') } },
      Line: [{ Amount: 45.5, LinkedTxn: [{ TxnId: bill.Id, TxnType: 'Bill' }] }],
    });
    expect(billPaid.statusCode).toBe(201);
    expect(billPaid.json().data.data).toMatchObject({
      TotalAmt: 45.5,
      VendorRef: { value: vendorId },
      PayType: 'Check',
    });
    expect((await get('bill', bill.Id)).Balance).toBe(0);

    const queried = await send('POST', `${base}/query`, {
      query: `SELECT * FROM Payment WHERE CustomerRef = '${customerId}' AND TxnDate = '2026-05-10'`,
    });
    expect(queried.json().data.QueryResponse.Payment.map((p: { Id: string }) => p.Id)).toEqual([payment.Id]);

    const deleted = await send('DELETE', `${base}/transactions/${payment.Id}`, {
      entityType: 'payment',
      syncToken: '0',
    });
    expect(deleted.statusCode).toBe(200);
    expect((await get('invoice', invoice.Id)).Balance).toBe(300);
    expect((await send('GET', `${base}/transactions/${payment.Id}?entityType=payment`)).statusCode).toBe(404);
  });

  it('refuses a payment larger than what it pays is owed, or naming nothing, writing nothing', async () => {
    const invoice = (
      await txn('invoice', {
        CustomerRef: { value: customerId },
        TxnDate: '2026-05-03',
        Line: [line(20, t.account('4000'))],
      })
    ).json().data.data;
    const before = await books();
    const over = await txn('payment', {
      CustomerRef: { value: customerId },
      DepositToAccountRef: { value: t.account('1000') },
      Line: [{ Amount: 25, LinkedTxn: [{ TxnId: invoice.Id, TxnType: 'Invoice' }] }],
    });
    expect(over.statusCode).toBe(422);
    expect(over.json().error.code).toBe('OVER_ALLOCATION');
    const unlinked = await txn('payment', {
      CustomerRef: { value: customerId },
      DepositToAccountRef: { value: t.account('1000') },
      Line: [{ Amount: 5 }],
    });
    expect(unlinked.statusCode).toBe(400);
    const noBank = await txn('bill-payment', { VendorRef: { value: vendorId }, Line: [] });
    expect(noBank.statusCode).toBe(400);
    expect(await books()).toEqual(before);
  });
});

describe('agent gateway: tax rates and codes', () => {
  it('presents each tax rate as a TaxRate and a one-rate TaxCode, read-only, with a SyncToken that counts changes', async () => {
    const created = await t.app.inject({
      method: 'POST',
      url: '/api/v1/tax-rates',
      headers: t.orgHeaders,
      payload: { name: 'Gateway County', rateBps: 825, liabilityAccountId: t.account('2200') },
    });
    expect(created.statusCode, created.body).toBe(201);
    const id = created.json().data.id as string;
    const rate = (await send('GET', `${base}/entities/TaxRate/${id}`)).json().data;
    expect(rate).toMatchObject({ Id: id, Name: 'Gateway County', RateValue: 8.25, Active: true, SyncToken: '0' });
    const code = (await send('GET', `${base}/entities/TaxCode/${id}`)).json().data;
    expect(code.SalesTaxRateList.TaxRateDetail[0].TaxRateRef).toEqual({ value: id, name: 'Gateway County' });
    await t.app.inject({
      method: 'PATCH',
      url: `/api/v1/tax-rates/${id}`,
      headers: t.orgHeaders,
      payload: { name: 'Gateway Co.' },
    });
    expect((await send('GET', `${base}/entities/TaxRate/${id}`)).json().data).toMatchObject({
      SyncToken: '1',
      Name: 'Gateway Co.',
    });
    const q = await send('POST', `${base}/query`, { query: "SELECT * FROM TaxRate WHERE RateValue > '8'" });
    expect(q.json().data.QueryResponse.TaxRate.map((r: { Id: string }) => r.Id)).toContain(id);
    const write = await send('POST', `${base}/entities/TaxRate`, { Name: 'No' });
    expect([404, 405, 422]).toContain(write.statusCode);
  });
});

describe('agent gateway: pass-through, hostile paths', () => {
  const relay = (payload: object, headers: Record<string, string> = {}) =>
    send('POST', `${base}/request`, payload, headers);

  it('refuses every disguised way out of the company root with 400, writing nothing', async () => {
    const before = await books();
    const paths = [
      'customer/..',
      'customer/./1',
      'customer/%2E%2E/invoice',
      'customer/%252e%252e',
      'customer/%252F1',
      'customer\\..\\invoice',
      'customer/%5c..',
      'customer/%E0%A4%A',
      'customer/%',
      'customer/1%00',
      'customer/1?operation=delete',
      'customer/1#x',
      'customer/\u0001',
      'HTTP://evil.test/customer/1',
      'file:///etc/passwd',
      'javascript:alert(1)',
      '///evil.test/customer',
      `/v3/company/${t.orgId}/../${other.orgId}/customer/1`,
      `/v3/company/${t.orgId}%2F..%2F${other.orgId}/customer`,
      '/v3/company/',
      '',
    ];
    for (const path of paths) {
      for (const method of ['GET', 'POST']) {
        const res = await relay({ method, path, body: { DisplayName: 'x' } });
        expect({ path, method, status: res.statusCode }).toEqual({ path, method, status: 400 });
        expect(res.json().error.code).toBe('VALIDATION_ERROR');
      }
    }
    expect(await books()).toEqual(before);
  });

  it("answers another company's id, in any spelling, with 404 and writes nothing", async () => {
    const before = await books();
    for (const company of [other.orgId, other.orgId.toUpperCase(), ` ${t.orgId}`]) {
      const res = await relay({ method: 'POST', path: `/v3/company/${company}/customer`, body: { DisplayName: 'x' } });
      expect([400, 404], company).toContain(res.statusCode);
    }
    expect(await books()).toEqual(before);
  });

  it('needs the scope of what the path reaches: transactions and entities each their own', async () => {
    const invoices = (await relay({ path: 'query', query: { query: 'SELECT * FROM Invoice MAXRESULTS 1' } })).json()
      .data.QueryResponse.Invoice as { Id: string }[] | undefined;
    const { key } = await createApiKey(t.database.db, {
      firmId: t.demo.firmId,
      scopes: ['acct:clients:read', 'acct:entities:read'],
    });
    const entitiesOnly = { authorization: `Bearer ${key}` };
    if (invoices?.[0]) {
      const res = await relay({ path: `invoice/${invoices[0].Id}` }, entitiesOnly);
      expect(res.statusCode).toBe(403);
      expect(res.json().error.details[0].scope).toBe('acct:transactions:read');
    }
    const before = await books();
    const write = await relay(
      { method: 'POST', path: 'invoice', body: { CustomerRef: { value: customerId }, Line: [] } },
      entitiesOnly,
    );
    expect(write.statusCode, write.body).toBe(403);
    expect(write.json().error.details[0].scope).toBe('acct:transactions:create');
    const del = await relay(
      { method: 'POST', path: 'customer', query: { operation: 'delete' }, body: { Id: customerId, SyncToken: '0' } },
      entitiesOnly,
    );
    // Customers are never deleted on the platform: what the path asks for does not exist, whatever the scopes.
    expect(del.statusCode, del.body).toBe(422);
    expect(del.json().error).toMatchObject({
      code: 'OPERATION_NOT_SUPPORTED',
      message: 'Customer does not support delete',
    });
    const taxRate = await relay({ method: 'POST', path: 'taxrate', body: { Name: 'New tax' } });
    expect(taxRate.statusCode, taxRate.body).toBe(422);
    expect(taxRate.json().error.code).toBe('OPERATION_NOT_SUPPORTED');
    expect(taxRate.body).not.toContain('undefined');
    expect(await books()).toEqual(before);
  });
});

describe('agent gateway: skills', () => {
  it('serves versioned recipes and a read-only health scan with findings that name their fix', async () => {
    const skills = (await send('GET', '/agent/v1/skills')).json().data;
    expect(skills.map((s: { id: string }) => s.id)).toEqual(
      expect.arrayContaining([
        'client-health-scan',
        'categorize-uncategorized-expenses',
        'month-end-close',
        'collect-overdue-invoices',
        'pay-due-bills',
        'review-client-file',
      ]),
    );
    const one = await send('GET', '/agent/v1/skills/month-end-close');
    expect(one.json().data).toMatchObject({ version: '1.0.0', requiredScopes: expect.any(Array) });
    expect((await send('GET', '/agent/v1/skills/nope')).statusCode).toBe(404);
    expect((await send('GET', '/agent/v1/recipes')).json().data.skills).toHaveLength(skills.length);

    const before = await books();
    const scan = await send('GET', '/agent/v1/skills/client-health-scan?asOf=2026-12-31');
    expect(scan.statusCode).toBe(200);
    const { findings, clients } = scan.json().data;
    expect(clients).toBe(2);
    expect(findings.length).toBeGreaterThan(0);
    for (const f of findings)
      expect(f).toMatchObject({ severity: expect.any(String), fix: { path: expect.any(String) } });
    expect(findings.some((f: { code: string }) => f.code === 'BOOKS_NOT_CLOSED')).toBe(true);
    expect(await books()).toEqual(before);
  });
});
