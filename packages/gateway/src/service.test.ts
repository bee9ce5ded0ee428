import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DomainError, type Scope } from '@firm/core';
import { API_KEYS, type IdempotencyKey, rowsOf } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { createLedgerFixture, type LedgerFixture } from '@firm/ledger/testing';
import { createEmbeddedPlatform } from '@firm/platform';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AuditTrail, openAuditTrail } from './audit';
import type { Client } from './clients';
import { createGateway, type Gateway, type GatewayActor, type GatewayAudit, platformFactory } from './service';

let database: TestDatabase;
let dir: string;
let trail: AuditTrail;
let gateway: Gateway;
let f: LedgerFixture;
let client: Client;
let actor: GatewayActor;

const ALL_SCOPES: Scope[] = [
  'acct:clients:read',
  'acct:entities:read',
  'acct:entities:write',
  'acct:transactions:read',
  'acct:transactions:create',
  'acct:transactions:update',
  'acct:transactions:delete',
];

beforeAll(async () => {
  database = await createTestDatabase();
  dir = await mkdtemp(join(tmpdir(), 'gateway-service-'));
  trail = await openAuditTrail({ dataDir: dir, production: false });
  gateway = createGateway({
    db: database.db,
    audit: trail,
    statementTimeoutMs: 5000,
    platforms: platformFactory({
      embedded: ({ actor: a, client: c, db }) =>
        createEmbeddedPlatform(db, {
          firmId: a.firmId,
          organizationId: c.id,
          acctCompanyId: c.acctCompanyId,
          actor: { kind: a.kind, id: a.id },
          requestId: a.requestId,
        }),
      remote: { qbo: null },
    }),
  });
  f = await createLedgerFixture(database.db);
  client = {
    id: f.orgId,
    name: 'Client',
    platform: 'embedded',
    acctCompanyId: f.orgId,
    status: 'connected',
    lastSyncAt: null,
    agentAccess: 'read_write',
  };
  actor = { firmId: f.firmId, kind: 'oauth_token', id: 'agent-1', scopes: new Set(ALL_SCOPES), requestId: null };
});
afterAll(async () => {
  await database.close();
  await rm(dir, { recursive: true, force: true });
});

const keyOf = (key: string, requestHash: string): IdempotencyKey => ({
  key,
  firmId: f.firmId,
  organizationId: f.orgId,
  route: API_KEYS,
  target: 'POST /customers',
  requestHash,
  retentionHours: 24,
});

const customers = async () =>
  rowsOf<{ n: number }>(
    await database.db.execute(sql`select count(*)::int as n from contacts where organization_id = ${f.orgId}`),
  )[0]?.n;

const refusal = async (promise: Promise<unknown>) => {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(DomainError);
  return err as DomainError;
};

describe('the gateway service, without HTTP', () => {
  it('writes once per key, replays the first response and refuses the key for another request', async () => {
    const audit: GatewayAudit = {};
    const first = await gateway.write(
      actor,
      client,
      { entity: 'Customer', operation: 'create', payload: { DisplayName: 'Amy Bird Sanctuary' } },
      { key: keyOf('k-1', 'h-1'), audit },
    );
    expect(first).toMatchObject({ status: 201, replayed: false });
    const record = (first.body as { data: { Id: string; SyncToken: string } }).data;
    expect(audit).toMatchObject({ entityType: 'Customer', entityId: record.Id, dryRun: false });
    expect(first.audit).toBe(audit);

    const again = await gateway.write(
      actor,
      client,
      { entity: 'Customer', operation: 'create', payload: { DisplayName: 'Amy Bird Sanctuary' } },
      { key: keyOf('k-1', 'h-1') },
    );
    expect(again).toMatchObject({ status: 201, replayed: true, body: first.body });
    // The replay wrote nothing: the audit knows the entity, not a record it did not touch.
    expect(again.audit.entityId).toBeUndefined();

    const other = await refusal(
      gateway.write(
        actor,
        client,
        { entity: 'Customer', operation: 'create', payload: { DisplayName: 'Someone else' } },
        { key: keyOf('k-1', 'h-2') },
      ),
    );
    expect(other.code).toBe('IDEMPOTENCY_KEY_REUSED');
  });

  it('rolls a dry run back: the record and its journal come back, nothing is written, not even the key', async () => {
    const before = await customers();
    const audit: GatewayAudit = {};
    const dry = await gateway.write(
      actor,
      client,
      { entity: 'customer', operation: 'create', payload: { DisplayName: 'Dry Run Ltd' } },
      { dryRun: true, key: keyOf('k-dry', 'h'), audit },
    );
    expect(dry).toMatchObject({ status: 200, replayed: false });
    expect(audit).toMatchObject({ entityType: 'Customer', dryRun: true, syncTokenAfter: null });
    expect(await customers()).toBe(before);
    const keys = rowsOf<{ n: number }>(
      await database.db.execute(sql`select count(*)::int as n from idempotency_keys where key = 'k-dry'`),
    );
    expect(keys[0]?.n).toBe(0);
  });

  it('shapes the response and the status as its caller asks, and writes a transaction type', async () => {
    const out = await gateway.write(
      actor,
      client,
      {
        transactionType: 'journal-entry',
        operation: 'create',
        payload: {
          TxnDate: '2026-03-02',
          Line: [
            {
              Amount: 12.5,
              DetailType: 'JournalEntryLineDetail',
              JournalEntryLineDetail: { PostingType: 'Debit', AccountRef: { value: f.account('6300') } },
            },
            {
              Amount: 12.5,
              DetailType: 'JournalEntryLineDetail',
              JournalEntryLineDetail: { PostingType: 'Credit', AccountRef: { value: f.account('1000') } },
            },
          ],
        },
      },
      { status: 200, respond: (r, dryRun, entry) => ({ entity: entry.entity, id: r.record.Id, dryRun }) },
    );
    expect(out.status).toBe(200);
    expect(out.body).toMatchObject({ entity: 'JournalEntry', dryRun: false });
  });

  it('refuses what the registry does not cover, an operation it does not support, and a scope the actor lacks', async () => {
    expect((await refusal(gateway.write(actor, client, { entity: 'Widget', operation: 'create' }))).code).toBe(
      'ENTITY_NOT_COVERED',
    );
    expect((await refusal(gateway.write(actor, client, { transactionType: 'widget', operation: 'create' }))).code).toBe(
      'ENTITY_NOT_COVERED',
    );
    expect((await refusal(gateway.write(actor, client, { entity: 'TaxRate', operation: 'create' }))).code).toBe(
      'OPERATION_NOT_SUPPORTED',
    );
    const reader = { ...actor, scopes: new Set<Scope>(['acct:entities:read']) };
    const audit: GatewayAudit = {};
    const scope = await refusal(
      gateway.write(reader, client, { entity: 'Customer', operation: 'create', payload: {} }, { audit }),
    );
    expect(scope.code).toBe('INSUFFICIENT_SCOPE');
    // The audit event of a refused write still names what it tried to write.
    expect(audit.entityType).toBe('Customer');
  });

  it("refuses a write to a read-only client when asked to judge the client's access, and a delete without its SyncToken", async () => {
    const readOnly = { ...client, agentAccess: 'read' as const };
    const write = { entity: 'Customer', operation: 'create' as const, payload: { DisplayName: 'x' } };
    expect((await refusal(gateway.write(actor, readOnly, write, { requireReadWrite: true }))).code).toBe(
      'CLIENT_READ_ONLY',
    );
    const noToken = await refusal(
      gateway.write(actor, client, { entity: 'JournalEntry', operation: 'delete', id: 'x' }),
    );
    expect(noToken.code).toBe('VALIDATION_ERROR');
  });

  it('answers 503 SERVICE_UNAVAILABLE for a client on a platform this deployment has no adapter for', async () => {
    const remote = { ...client, platform: 'qbo' as const };
    const err = await refusal(gateway.readRecord(actor, remote, 'Customer', '1'));
    expect(err.code).toBe('SERVICE_UNAVAILABLE');
    expect(err.message).toBe('QuickBooks Online is not configured in this deployment');
  });

  it('reads: a page, one record, and a query checked before it runs', async () => {
    const page = await gateway.list(actor, client, 'Customer', { maxResults: 10, startPosition: 1 });
    expect(page.records.length).toBeGreaterThan(0);
    const one = await gateway.readRecord(actor, client, 'Customer', page.records[0]?.Id as string);
    expect(one.Id).toBe(page.records[0]?.Id);

    const audit: GatewayAudit = {};
    const found = await gateway.query(
      actor,
      client,
      "select * from Customer where DisplayName = 'Amy Bird Sanctuary'",
      {
        defaultMaxResults: 100,
        audit,
      },
    );
    expect(audit.entityType).toBe('Customer');
    expect(JSON.stringify(found)).toContain('Amy Bird Sanctuary');
    expect((await refusal(gateway.query(actor, client, 'select from', { defaultMaxResults: 100 }))).code).toBe(
      'QUERY_INVALID',
    );
    const noScope = { ...actor, scopes: new Set<Scope>(['acct:clients:read']) };
    expect(
      (await refusal(gateway.query(noScope, client, 'select * from Customer', { defaultMaxResults: 100 }))).code,
    ).toBe('INSUFFICIENT_SCOPE');
  });
});
