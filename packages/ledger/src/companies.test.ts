import { isDomainError } from '@firm/core';
import { accounts, acctClients, auditEvents, type Db, organizations, outboxEvents } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STANDARD_CHART } from './chart-template';
import { type CompanyInput, type CompanyPatch, createCompany, setCompanyArchived, updateCompany } from './companies';
import { getBookSettings } from './periods';
import { postTransaction, voidEntry } from './posting';
import { createLedgerFixture, type LedgerFixture } from './testing';

let database: TestDatabase;
let db: Db;

beforeAll(async () => {
  database = await createTestDatabase();
  db = database.db;
});
afterAll(() => database.close());

const create = (f: LedgerFixture, input: CompanyInput) => db.transaction((tx) => createCompany(tx, f.ctx, input));
const update = (f: LedgerFixture, id: string, patch: CompanyPatch) =>
  db.transaction((tx) => updateCompany(tx, f.ctx, id, patch));
const archive = (f: LedgerFixture, id: string, archived = true) =>
  db.transaction((tx) => setCompanyArchived(tx, f.ctx, id, archived));

const failure = (p: Promise<unknown>) =>
  p.then(
    () => ({ code: 'ok' }),
    (e: unknown) => (isDomainError(e) ? { code: e.code, details: e.details } : { code: String(e) }),
  );

const chartOf = (id: string) =>
  db.select().from(accounts).where(eq(accounts.organizationId, id)).orderBy(asc(accounts.code));
const eventsOf = (id: string) =>
  db.select().from(outboxEvents).where(eq(outboxEvents.organizationId, id)).orderBy(asc(outboxEvents.createdAt));

describe('creating a company', () => {
  it('makes the company with the standard chart, closed to agents, and records company.created', async () => {
    const f = await createLedgerFixture(db);
    const company = await create(f, {
      name: '  Harbor Coffee Co  ',
      legalName: 'Harbor Coffee Company LLC',
      taxId: '12-3456789',
      currency: 'EUR',
      fiscalYearStartMonth: 7,
      chartTemplate: 'standard',
    });
    expect(company).toMatchObject({
      firmId: f.firmId,
      name: 'Harbor Coffee Co',
      legalName: 'Harbor Coffee Company LLC',
      taxId: '12-3456789',
      currency: 'EUR',
      fiscalYearStartMonth: 7,
      archivedAt: null,
    });
    const chart = await chartOf(company.id);
    expect(chart.map((a) => a.code)).toEqual(STANDARD_CHART.map((a) => a.code));
    const [client] = await db.select().from(acctClients).where(eq(acctClients.organizationId, company.id));
    expect(client).toMatchObject({ firmId: f.firmId, agentAccess: 'none', platform: 'embedded' });

    const events = await eventsOf(company.id);
    expect(events.map((e) => e.type)).toEqual(['company.created']);
    expect(events[0]?.payload).toMatchObject({ id: company.id, name: 'Harbor Coffee Co', status: 'active' });
    const [audit] = await db.select().from(auditEvents).where(eq(auditEvents.organizationId, company.id));
    expect(audit?.data).toMatchObject({ chartTemplate: 'standard', accounts: STANDARD_CHART.length });
  });

  it('starts an empty chart with no account, and defaults to USD and January', async () => {
    const f = await createLedgerFixture(db);
    const company = await create(f, { name: 'Blank Slate', chartTemplate: 'empty' });
    expect(company).toMatchObject({ currency: 'USD', fiscalYearStartMonth: 1, legalName: null, taxId: null });
    expect(await chartOf(company.id)).toEqual([]);
  });

  it('refuses a blank name, an unknown currency, month 13 and an unknown template, writing nothing', async () => {
    const f = await createLedgerFixture(db);
    const before = await db.select().from(organizations).where(eq(organizations.firmId, f.firmId));
    expect(await failure(create(f, { name: '   ' }))).toMatchObject({
      code: 'VALIDATION_ERROR',
      details: [{ field: 'name' }],
    });
    for (const currency of ['XYZ', 'usd', 'US', 'DEM']) {
      expect(await failure(create(f, { name: 'A', currency })), currency).toMatchObject({
        code: 'VALIDATION_ERROR',
        details: [{ field: 'currency' }],
      });
    }
    for (const fiscalYearStartMonth of [0, 13, 1.5]) {
      expect(await failure(create(f, { name: 'A', fiscalYearStartMonth }))).toMatchObject({
        code: 'VALIDATION_ERROR',
        details: [{ field: 'fiscalYearStartMonth' }],
      });
    }
    expect(await failure(create(f, { name: 'A', chartTemplate: 'toString' as never }))).toMatchObject({
      code: 'VALIDATION_ERROR',
      details: [{ field: 'chartTemplate' }],
    });
    expect(await db.select().from(organizations).where(eq(organizations.firmId, f.firmId))).toEqual(before);
  });

  it('keeps names unique within the firm, and only there', async () => {
    const f = await createLedgerFixture(db);
    const other = await createLedgerFixture(db);
    await create(f, { name: 'Twin Peaks Diner' });
    expect(await failure(create(f, { name: 'Twin Peaks Diner' }))).toMatchObject({
      code: 'COMPANY_NAME_TAKEN',
      details: [{ field: 'name' }],
    });
    expect((await failure(create(other, { name: 'Twin Peaks Diner' }))).code).toBe('ok');
  });
});

describe('changing a company', () => {
  it('changes the fields given, records company.updated with what changed, and nothing when nothing changes', async () => {
    const f = await createLedgerFixture(db);
    const company = await create(f, { name: 'Old Name', taxId: 'T-1' });
    const changed = await update(f, company.id, { name: 'New Name', taxId: null, legalName: 'New Name Ltd' });
    expect(changed).toMatchObject({ name: 'New Name', taxId: null, legalName: 'New Name Ltd', currency: 'USD' });
    await update(f, company.id, { name: 'New Name' });
    const events = await eventsOf(company.id);
    expect(events.map((e) => e.type)).toEqual(['company.created', 'company.updated']);
    const [, audit] = await db
      .select()
      .from(auditEvents)
      .where(eq(auditEvents.organizationId, company.id))
      .orderBy(asc(auditEvents.createdAt));
    expect(audit?.data).toEqual({
      changes: {
        name: { previous: 'Old Name', value: 'New Name' },
        taxId: { previous: 'T-1', value: null },
        legalName: { previous: null, value: 'New Name Ltd' },
      },
    });
  });

  it('moves the fiscal year through the books rule, which the balance sheet reads', async () => {
    const f = await createLedgerFixture(db);
    const company = await create(f, { name: 'Fiscal' });
    await update(f, company.id, { fiscalYearStartMonth: 4 });
    expect(await getBookSettings(db, company.id)).toMatchObject({ fiscalYearStartMonth: 4 });
    expect((await eventsOf(company.id)).map((e) => e.type)).toEqual([
      'company.created',
      'books.fiscal_year_changed',
      'company.updated',
    ]);
  });

  it('lets the currency change until an entry is posted, then refuses it with CURRENCY_LOCKED', async () => {
    const f = await createLedgerFixture(db);
    expect(await update(f, f.orgId, { currency: 'CAD' })).toMatchObject({ currency: 'CAD' });
    await db.transaction((tx) =>
      postTransaction(tx, f.ctx, f.orgId, {
        kind: 'transfer',
        date: '2026-03-01',
        fromAccountId: f.account('1000'),
        toAccountId: f.account('1010'),
        amountCents: 500,
      }),
    );
    expect(await failure(update(f, f.orgId, { currency: 'USD' }))).toMatchObject({
      code: 'CURRENCY_LOCKED',
      details: [{ field: 'currency' }],
    });
    expect(await update(f, f.orgId, { currency: 'CAD', name: 'Renamed' })).toMatchObject({ currency: 'CAD' });
  });

  it('refuses a name another company of the firm has, and a company of another firm as not found', async () => {
    const f = await createLedgerFixture(db);
    const other = await createLedgerFixture(db);
    const a = await create(f, { name: 'Alpha' });
    await create(f, { name: 'Beta' });
    expect((await failure(update(f, a.id, { name: 'Beta' }))).code).toBe('COMPANY_NAME_TAKEN');
    expect((await failure(update(other, a.id, { name: 'Mine' }))).code).toBe('ORGANIZATION_NOT_FOUND');
    expect((await failure(archive(other, a.id))).code).toBe('ORGANIZATION_NOT_FOUND');
  });
});

describe('archiving a company', () => {
  it('refuses postings, voids and changes while archived, keeps the books, and unarchiving lifts it', async () => {
    const f = await createLedgerFixture(db);
    const transfer = () =>
      db.transaction((tx) =>
        postTransaction(tx, f.ctx, f.orgId, {
          kind: 'transfer',
          date: '2026-03-01',
          fromAccountId: f.account('1000'),
          toAccountId: f.account('1010'),
          amountCents: 700,
        }),
      );
    const posted = await transfer();
    const archived = await archive(f, f.orgId);
    expect(archived.changed).toBe(true);
    expect(archived.company.archivedAt).toBeInstanceOf(Date);
    expect(await archive(f, f.orgId)).toMatchObject({ changed: false });

    // The database refuses it, whichever path writes.
    expect((await failure(transfer())).code).toBe('COMPANY_ARCHIVED');
    const voiding = db.transaction((tx) => voidEntry(tx, f.ctx, f.orgId, posted.journalEntryId, 'late'));
    expect((await failure(voiding)).code).toBe('COMPANY_ARCHIVED');
    expect((await failure(update(f, f.orgId, { name: 'Changed' }))).code).toBe('COMPANY_ARCHIVED');
    expect(await chartOf(f.orgId)).toHaveLength(STANDARD_CHART.length);

    expect(await archive(f, f.orgId, false)).toMatchObject({ changed: true, company: { archivedAt: null } });
    expect((await failure(transfer())).code).toBe('ok');
    expect((await eventsOf(f.orgId)).map((e) => e.type)).toEqual([
      'entry.posted',
      'company.archived',
      'company.unarchived',
      'entry.posted',
    ]);
  });
});
