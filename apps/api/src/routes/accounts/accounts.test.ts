import { accounts, journalEntries, journalLines } from '@firm/db';
import { count, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const accountCount = async () =>
  (await t.database.db.select({ n: count() }).from(accounts).where(eq(accounts.organizationId, t.orgId)))[0]?.n;

const create = (payload: unknown, headers: Record<string, string> = t.orgHeaders) =>
  t.app.inject({ method: 'POST', url: '/api/v1/accounts', headers, payload: payload as object });

async function accountByCode(code: string) {
  const [row] = (await t.database.db.select().from(accounts).where(eq(accounts.organizationId, t.orgId))).filter(
    (a) => a.code === code,
  );
  return row as typeof accounts.$inferSelect;
}

describe('accounts', () => {
  it('lists the seeded chart in code order, hiding archived accounts by default', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/accounts', headers: t.orgHeaders });
    expect(res.statusCode).toBe(200);
    const codes = res.json().data.map((a: { code: string }) => a.code);
    expect(codes).toEqual([...codes].sort());
    const types = new Set(res.json().data.map((a: { subtype: string }) => a.subtype));
    for (const needed of [
      'bank',
      'credit_card',
      'accounts_receivable',
      'accounts_payable',
      'equity',
      'income',
      'expense',
    ]) {
      expect(types).toContain(needed);
    }
  });

  it('creates, reads, updates, archives and deletes an account', async () => {
    const created = await create({ code: '6950', name: 'Training', type: 'expense', description: 'Courses' });
    expect(created.statusCode).toBe(201);
    const account = created.json().data;
    expect(account).toMatchObject({
      code: '6950',
      name: 'Training',
      type: 'expense',
      subtype: 'expense',
      archived: false,
    });

    const read = await t.app.inject({ method: 'GET', url: `/api/v1/accounts/${account.id}`, headers: t.orgHeaders });
    expect(read.statusCode).toBe(200);
    expect(read.json().data).toMatchObject({
      id: account.id,
      balanceCents: 0,
      ledger: { lines: [], openingBalanceCents: 0 },
    });

    const patched = await t.app.inject({
      method: 'PATCH',
      url: `/api/v1/accounts/${account.id}`,
      headers: t.orgHeaders,
      payload: { name: 'Staff training', archived: true },
    });
    expect(patched.statusCode).toBe(200);
    expect(patched.json().data).toMatchObject({ name: 'Staff training', archived: true });

    const list = await t.app.inject({
      method: 'GET',
      url: '/api/v1/accounts?includeArchived=true&type=expense',
      headers: t.orgHeaders,
    });
    expect(list.json().data.map((a: { id: string }) => a.id)).toContain(account.id);
    expect(list.json().data.every((a: { type: string }) => a.type === 'expense')).toBe(true);
    const active = await t.app.inject({ method: 'GET', url: '/api/v1/accounts?limit=1000', headers: t.orgHeaders });
    expect(active.json().data.map((a: { id: string }) => a.id)).not.toContain(account.id);

    const deleted = await t.app.inject({
      method: 'DELETE',
      url: `/api/v1/accounts/${account.id}`,
      headers: t.orgHeaders,
    });
    expect(deleted.statusCode).toBe(204);
    const gone = await t.app.inject({ method: 'GET', url: `/api/v1/accounts/${account.id}`, headers: t.orgHeaders });
    expect(gone.statusCode).toBe(404);
    expect(gone.json().error.code).toBe('ACCOUNT_NOT_FOUND');
  });

  it('lists under the company path too, with cursor pagination', async () => {
    const url = `/api/v1/companies/${t.orgId}/accounts?limit=5`;
    const first = await t.app.inject({ method: 'GET', url, headers: t.auth });
    expect(first.statusCode).toBe(200);
    expect(first.json().data).toHaveLength(5);
    const second = await t.app.inject({
      method: 'GET',
      url: `${url}&cursor=${first.json().nextCursor}`,
      headers: t.auth,
    });
    const ids = [...first.json().data, ...second.json().data].map((a: { id: string }) => a.id);
    expect(new Set(ids).size).toBe(10);
    expect(second.json().data[0].code > first.json().data[4].code).toBe(true);
  });

  it('refuses a duplicate code with 409 and writes nothing', async () => {
    const before = await accountCount();
    const res = await create({ code: '1000', name: 'Another checking', type: 'asset', subtype: 'bank' });
    expect(res.statusCode).toBe(409);
    expect(res.json().error).toMatchObject({ code: 'ACCOUNT_CODE_TAKEN', retryable: false });
    expect(await accountCount()).toBe(before);
  });

  it('refuses renaming a code onto another account with 409', async () => {
    const savings = await accountByCode('1010');
    const res = await t.app.inject({
      method: 'PATCH',
      url: `/api/v1/accounts/${savings.id}`,
      headers: t.orgHeaders,
      payload: { code: '1000' },
    });
    expect(res.statusCode).toBe(409);
    expect((await accountByCode('1010')).name).toBe('Business Savings');
  });

  it.each([
    ['an unknown type', { code: '8000', name: 'X', type: 'revenue' }, 'body.type'],
    ['a subtype of another type', { code: '8000', name: 'X', type: 'asset', subtype: 'credit_card' }, 'subtype'],
    ['a missing name', { code: '8000', type: 'asset' }, 'body.name'],
    ['an unknown field', { code: '8000', name: 'X', type: 'asset', balance: 5 }, 'body.balance'],
    ['a code with spaces', { code: '80 00', name: 'X', type: 'asset' }, 'body.code'],
    ['a numeric name', { code: '8000', name: 12, type: 'asset' }, 'body.name'],
  ])('refuses %s with 400 VALIDATION_ERROR naming the field', async (_name, payload, field) => {
    const before = await accountCount();
    const res = await create(payload);
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('VALIDATION_ERROR');
    expect(res.json().error.details.map((d: { field: string }) => d.field)).toContain(field);
    expect(await accountCount()).toBe(before);
  });

  it('refuses malformed JSON with 400, a wrong content type with 415, an oversize body with 413', async () => {
    const before = await accountCount();
    const malformed = await t.app.inject({
      method: 'POST',
      url: '/api/v1/accounts',
      headers: { ...t.orgHeaders, 'content-type': 'application/json' },
      payload: '{"code": "8000", "name": ',
    });
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json().error.code).toBe('MALFORMED_JSON');
    const text = await t.app.inject({
      method: 'POST',
      url: '/api/v1/accounts',
      headers: { ...t.orgHeaders, 'content-type': 'text/plain' },
      payload: 'code=8000',
    });
    expect(text.statusCode).toBe(415);
    expect(text.json().error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
    const huge = await create({ code: '8000', name: 'X', type: 'asset', description: 'x'.repeat(2_000_000) });
    expect(huge.statusCode).toBe(413);
    expect(huge.json().error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(await accountCount()).toBe(before);
  });

  it('refuses an account id of another organization with 404', async () => {
    const other = await createOtherFirm(t.database.db, 'accounts-other');
    const foreign = other.accounts[0]?.id as string;
    for (const method of ['GET', 'PATCH', 'DELETE'] as const) {
      const res = await t.app.inject({
        method,
        url: `/api/v1/accounts/${foreign}`,
        headers: t.orgHeaders,
        ...(method === 'PATCH' ? { payload: { name: 'hijacked' } } : {}),
      });
      expect(res.statusCode).toBe(404);
    }
    const [still] = await t.database.db.select().from(accounts).where(eq(accounts.id, foreign));
    expect(still?.name).not.toBe('hijacked');
  });

  describe('an account with journal lines', () => {
    let usedId: string;
    beforeAll(async () => {
      const used = await accountByCode('6300');
      const cash = await accountByCode('1000');
      usedId = used.id;
      const [entry] = await t.database.db
        .insert(journalEntries)
        .values({ organizationId: t.orgId, entryDate: '2026-01-15', createdByKind: 'test', createdById: 'test' })
        .returning();
      await t.database.db.insert(journalLines).values([
        { organizationId: t.orgId, entryId: entry?.id as string, lineNo: 1, accountId: used.id, amountCents: 1250 },
        { organizationId: t.orgId, entryId: entry?.id as string, lineNo: 2, accountId: cash.id, amountCents: -1250 },
      ]);
    });

    it('cannot be deleted (409 ACCOUNT_IN_USE)', async () => {
      const res = await t.app.inject({ method: 'DELETE', url: `/api/v1/accounts/${usedId}`, headers: t.orgHeaders });
      expect(res.statusCode).toBe(409);
      expect(res.json().error.code).toBe('ACCOUNT_IN_USE');
      expect((await t.database.db.select().from(accounts).where(eq(accounts.id, usedId))).length).toBe(1);
    });

    it('cannot change type (409 ACCOUNT_TYPE_LOCKED) but can be renamed', async () => {
      const res = await t.app.inject({
        method: 'PATCH',
        url: `/api/v1/accounts/${usedId}`,
        headers: t.orgHeaders,
        payload: { type: 'asset' },
      });
      expect(res.statusCode).toBe(409);
      expect(res.json().error.code).toBe('ACCOUNT_TYPE_LOCKED');
      expect((await accountByCode('6300')).type).toBe('expense');
      const renamed = await t.app.inject({
        method: 'PATCH',
        url: `/api/v1/accounts/${usedId}`,
        headers: t.orgHeaders,
        payload: { name: 'Office supplies & postage' },
      });
      expect(renamed.statusCode).toBe(200);
    });
  });

  it('an unused account may change type, taking that type’s default subtype', async () => {
    const created = (await create({ code: '8100', name: 'Misc', type: 'expense' })).json().data;
    const res = await t.app.inject({
      method: 'PATCH',
      url: `/api/v1/accounts/${created.id}`,
      headers: t.orgHeaders,
      payload: { type: 'income' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toMatchObject({ type: 'income', subtype: 'income' });
  });

  it('refuses an empty PATCH with 400', async () => {
    const savings = await accountByCode('1010');
    const res = await t.app.inject({
      method: 'PATCH',
      url: `/api/v1/accounts/${savings.id}`,
      headers: t.orgHeaders,
      payload: {},
    });
    expect(res.statusCode).toBe(400);
  });
});

describe('account detail: odd ids, dates and cursors', () => {
  const detail = (id: string, query = '') =>
    t.app.inject({ method: 'GET', url: `/api/v1/accounts/${id}${query}`, headers: t.orgHeaders });
  const cursorOf = (keys: unknown[]) => Buffer.from(JSON.stringify(keys)).toString('base64url');

  it('refuses an id written urn:uuid:… with 400 on every method', async () => {
    const id = `urn:uuid:${t.account('1000')}`;
    for (const method of ['GET', 'PATCH', 'DELETE'] as const) {
      const res = await t.app.inject({
        method,
        url: `/api/v1/accounts/${id}`,
        headers: t.orgHeaders,
        ...(method === 'PATCH' ? { payload: { name: 'x' } } : {}),
      });
      expect(res.statusCode, method).toBe(400);
      expect(res.json().error.code).toBe('VALIDATION_ERROR');
    }
  });

  it('refuses dates before 1900 and a start after the end with 400', async () => {
    const id = t.account('1000');
    for (const query of ['?startDate=0001-01-01', '?endDate=1899-12-31', '?startDate=2026-12-01&endDate=2026-01-31']) {
      const res = await detail(id, query);
      expect(res.statusCode, query).toBe(400);
      expect(res.json().error.code).toBe('VALIDATION_ERROR');
    }
    expect((await detail(id, '?startDate=1900-01-01')).statusCode).toBe(200);
  });

  it('refuses a forged cursor with 400, on the detail and on the list', async () => {
    const id = t.account('1000');
    for (const keys of [
      ['nope', 'x', 1],
      ['2026-01-01', 'x', 1],
      ['2026-01-01', id, 1e12],
    ]) {
      const res = await detail(id, `?cursor=${cursorOf(keys)}`);
      expect(res.statusCode, JSON.stringify(keys)).toBe(400);
    }
    const list = await t.app.inject({
      method: 'GET',
      url: `/api/v1/accounts?cursor=${cursorOf(['1000', 'x'])}`,
      headers: t.orgHeaders,
    });
    expect(list.statusCode).toBe(400);
    expect(list.json().error.details).toEqual([{ field: 'cursor', message: 'not a cursor returned by this API' }]);
  });

  it('gives the balance through today unless told another end, as the reports do', async () => {
    const made = await create({ code: '1290', name: 'Future float', type: 'asset' });
    const id = made.json().data.id;
    const transfer = (date: string, amountCents: number) =>
      t.app.inject({
        method: 'POST',
        url: `/api/v1/companies/${t.orgId}/transfers`,
        headers: { ...t.auth, 'idempotency-key': `${id}-${date}` },
        payload: { date, fromAccountId: t.account('1000'), toAccountId: id, amountCents },
      });
    expect((await transfer('2026-01-15', 100)).statusCode).toBe(201);
    expect((await transfer('2099-01-15', 5000)).statusCode).toBe(201);
    const today = new Date().toISOString().slice(0, 10);
    const now = await detail(id);
    expect(now.json().data).toMatchObject({ balanceCents: 100, ledger: { endDate: today } });
    const trial = await t.app.inject({ method: 'GET', url: '/api/v1/reports/trial-balance', headers: t.orgHeaders });
    const row = trial.json().data.rows.find((r: { accountId: string }) => r.accountId === id);
    expect(row.debitCents - row.creditCents).toBe(100);
    expect((await detail(id, '?endDate=2099-12-31')).json().data.balanceCents).toBe(5100);
  });
});
