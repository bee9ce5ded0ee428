import { randomUUID } from 'node:crypto';
import { createBankAccount, insertBankTransaction } from '@firm/banking';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './testing';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const call = (method: 'GET' | 'PATCH' | 'OPTIONS' | 'DELETE', url: string) =>
  t.app.inject({ method, url, headers: t.auth });

describe('routing answers in the documented shape', () => {
  it('refuses a path parameter over 100 characters with 400 VALIDATION_ERROR and a request id', async () => {
    for (const url of [`/api/v1/accounts/${'a'.repeat(101)}`, `/agent/v1/acct/clients/${'9'.repeat(150)}`]) {
      const res = await call('GET', url);
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toMatchObject({
        code: 'VALIDATION_ERROR',
        retryable: false,
        requestId: res.headers['x-request-id'],
        details: [{ field: 'path' }],
      });
    }
  });

  it('answers another method on a path a route names exactly with 405 and that route’s methods', async () => {
    const eventTypes = await call('PATCH', '/api/v1/webhooks/event-types');
    expect(eventTypes.statusCode).toBe(405);
    expect(eventTypes.json().error.code).toBe('METHOD_NOT_ALLOWED');
    expect(eventTypes.headers.allow).toBe('GET, HEAD');
    expect((await call('DELETE', '/api/v1/webhooks/event-types')).statusCode).toBe(405);

    const query = `/agent/v1/acct/clients/${t.orgId}/query`;
    const options = await call('OPTIONS', query);
    expect(options.statusCode).toBe(405);
    expect(options.headers.allow).toBe('POST');
    const get = await call('GET', query);
    expect(get.statusCode).toBe(405);
    expect(get.headers.allow).toBe('POST');
  });

  it('ignores query parameters a route does not know, on the partner API, the gateway and the export alike', async () => {
    for (const url of [
      '/api/v1/accounts?minorversion=75',
      `/agent/v1/acct/clients/${t.orgId}/customers?minorversion=75`,
      '/api/v1/reports/export?report=trial-balance&format=csv&minorversion=75',
    ]) {
      const res = await t.app.inject({ method: 'GET', url, headers: { ...t.auth, 'x-organization-id': t.orgId } });
      expect(res.statusCode, `${url}: ${res.body}`).toBe(200);
    }
  });

  it('still routes the looser route’s own paths to it', async () => {
    expect((await call('GET', `/agent/v1/acct/clients/${t.orgId}/customers`)).statusCode).toBe(200);
    const webhook = await call('PATCH', '/api/v1/webhooks/0190a5f4-0000-7000-8000-000000000000');
    expect(webhook.statusCode).not.toBe(405);
  });
});

describe('the document says what the server refuses', () => {
  type Schema = { $ref?: string; properties?: Record<string, Schema>; pattern?: string; type?: string };
  let doc: { paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: Schema }> } }>> };
  const resolve = (schema: Schema): Schema => {
    if (!schema.$ref) return schema;
    const name = schema.$ref.replace('#/components/schemas/', '');
    const named = (doc as unknown as { components: { schemas: Record<string, Schema> } }).components.schemas[name];
    if (!named) throw new Error(`no schema ${name}`);
    return resolve(named);
  };
  beforeAll(async () => {
    doc = (await t.app.inject({ method: 'GET', url: '/api/openapi.json' })).json();
  });

  const fieldOf = (path: string, method: string, field: string): Schema => {
    const body = doc.paths[path]?.[method]?.requestBody?.content['application/json']?.schema;
    expect(body, `${method} ${path}`).toBeDefined();
    const schema = resolve(resolve(body as Schema).properties?.[field] as Schema);
    expect(schema, `${method} ${path} ${field}`).toBeDefined();
    return schema;
  };

  it.each([
    ['/api/v1/entries/{id}/void', 'post', 'reason'],
    ['/api/v1/bank-transactions/{id}/reclassify', 'post', 'reason'],
    ['/api/v1/items/{id}', 'patch', 'name'],
    ['/api/v1/tax-rates/{id}', 'patch', 'name'],
  ])('%s %s: `%s` refuses NUL and blank text by its pattern', (path, method, field) => {
    const { pattern } = fieldOf(path, method, field);
    expect(pattern).toBeDefined();
    const re = new RegExp(pattern as string, 'u');
    expect(re.test('Duplicate of entry 42')).toBe(true);
    expect(re.test('a\u0000b')).toBe(false);
    expect(re.test('\u0000')).toBe(false);
    expect(re.test('   ')).toBe(false);
  });

  it('and the server refuses a NUL in each of those fields with 400 VALIDATION_ERROR naming it, changing nothing', async () => {
    const send = (method: 'POST' | 'PATCH', url: string, payload: object) =>
      t.app.inject({ method, url, headers: { ...t.orgHeaders, 'idempotency-key': randomUUID() }, payload });
    const read = async (url: string) =>
      (await t.app.inject({ method: 'GET', url, headers: t.orgHeaders })).json().data as Record<string, unknown>;
    const entry = await send('POST', '/api/v1/journal-entries', {
      txnDate: '2026-05-04',
      lines: [
        { accountId: t.account('6300'), postingType: 'debit', amount: 5 },
        { accountId: t.account('1000'), postingType: 'credit', amount: 5 },
      ],
    });
    const entryId = entry.json().journalEntryId as string;
    const item = (await send('POST', '/api/v1/items', { name: 'Widget', incomeAccountId: t.account('4000') })).json()
      .data.id as string;
    const rate = await send('POST', '/api/v1/tax-rates', {
      name: 'State tax',
      rateBps: 625,
      liabilityAccountId: t.account('2200'),
    });
    const rateId = rate.json().data.id as string;
    const ctx = { firmId: t.demo.firmId, actor: { kind: 'test', id: 'tester' } };
    const bankTransactionId = await t.database.db.transaction(async (tx) => {
      const bank = await createBankAccount(tx, ctx, t.orgId, { accountId: t.account('1000') });
      return insertBankTransaction(tx, ctx, t.orgId, {
        bankAccountId: bank.id,
        date: '2026-05-04',
        amountCents: -500,
        description: 'CARD 1234',
        counterparty: null,
        sourceType: 'aggregator_bank_feed',
        externalId: randomUUID(),
      });
    });
    const cases: [string, 'POST' | 'PATCH', string, object, string][] = [
      [`/api/v1/entries/${entryId}`, 'POST', `/api/v1/entries/${entryId}/void`, { reason: 'dup\u0000' }, 'reason'],
      [
        `/api/v1/bank-transactions/${bankTransactionId}`,
        'POST',
        `/api/v1/bank-transactions/${bankTransactionId}/reclassify`,
        { accountId: t.account('6300'), reason: '\u0000' },
        'reason',
      ],
      [`/api/v1/items/${item}`, 'PATCH', `/api/v1/items/${item}`, { name: 'Wid\u0000get' }, 'name'],
      [`/api/v1/tax-rates/${rateId}`, 'PATCH', `/api/v1/tax-rates/${rateId}`, { name: 'State\u0000tax' }, 'name'],
    ];
    for (const [record, method, url, payload, field] of cases) {
      const before = await read(record);
      expect(before, record).toBeDefined();
      const res = await send(method, url, payload);
      expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(400);
      expect(res.json().error).toMatchObject({
        code: 'VALIDATION_ERROR',
        retryable: false,
        details: [expect.objectContaining({ field: `body.${field}` })],
      });
      expect(await read(record), record).toEqual(before);
    }
  });
});

describe('response serializers', () => {
  it('are built when a route first answers, and every route’s builds', async () => {
    // The accounts list has answered no request yet in this app: listing it builds its 200 serializer.
    const before = t.app.compileSerializers();
    expect(before).toBeGreaterThan(t.app.routeTable.length);
    expect(t.app.compileSerializers()).toBe(0);
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/accounts', headers: t.orgHeaders });
    expect(res.statusCode).toBe(200);
    expect(res.json().data.length).toBeGreaterThan(0);
  });
});
