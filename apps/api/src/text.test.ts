import { randomUUID } from 'node:crypto';
import { contacts, journalEntries } from '@firm/db';
import { count, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './testing';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

async function stored() {
  const db = t.database.db;
  const [entries] = await db
    .select({ n: count() })
    .from(journalEntries)
    .where(eq(journalEntries.organizationId, t.orgId));
  const [people] = await db.select({ n: count() }).from(contacts).where(eq(contacts.organizationId, t.orgId));
  return { entries: entries?.n, contacts: people?.n };
}

const post = (url: string, payload: object) =>
  t.app.inject({ method: 'POST', url, headers: { ...t.orgHeaders, 'idempotency-key': randomUUID() }, payload });

const journalEntryWithMemo = (memo: string) => ({
  txnDate: '2026-05-04',
  memo,
  lines: [
    { accountId: t.account('6300'), postingType: 'debit', amount: 5 },
    { accountId: t.account('1000'), postingType: 'credit', amount: 5 },
  ],
});

describe('text Postgres cannot store', () => {
  it('is refused in a body with 400 naming the field, and nothing is written', async () => {
    const before = await stored();
    const cases: [string, object, string][] = [
      [
        '/api/v1/journal-entries',
        {
          txnDate: '2026-05-04',
          lines: [
            { accountId: t.account('6300'), postingType: 'debit', amount: 5, description: 'a\u0000b' },
            { accountId: t.account('1000'), postingType: 'credit', amount: 5 },
          ],
        },
        'body.lines.0.description',
      ],
      [
        '/api/v1/entries',
        {
          date: '2026-05-04',
          memo: '\u0000',
          lines: [
            { accountId: t.account('6300'), debitCents: 5 },
            { accountId: t.account('1000'), creditCents: 5 },
          ],
        },
        'body.memo',
      ],
      ['/api/v1/contacts', { kind: 'customer', name: 'Acme\u0000 Ltd' }, 'body.name'],
    ];
    for (const [url, payload, field] of cases) {
      const res = await post(url, payload);
      expect(res.statusCode, url).toBe(400);
      expect(res.json().error).toMatchObject({
        code: 'VALIDATION_ERROR',
        details: [{ field, message: 'must not contain the NUL character (U+0000)' }],
      });
    }
    expect(await stored()).toEqual(before);
  });

  it('is refused in a query string', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/entries?cursor=%00', headers: t.orgHeaders });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.details).toEqual([
      { field: 'querystring.cursor', message: 'must not contain the NUL character (U+0000)' },
    ]);
  });

  it('is refused in a path, and an agent call naming it is audited without it', async () => {
    const partner = await t.app.inject({ method: 'GET', url: '/api/v1/contacts/a%00b', headers: t.orgHeaders });
    expect(partner.statusCode).toBe(400);
    expect(partner.json().error.details).toEqual([
      { field: 'params.id', message: 'must not contain the NUL character (U+0000)' },
    ]);
    // The gateway records every call, refused ones included: the NUL in the path was a 500 there.
    const agent = await t.app.inject({
      method: 'DELETE',
      url: `/agent/v1/acct/clients/${t.orgId}/transactions/x%00y?dryRun=true`,
      headers: { ...t.auth, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      payload: { entityType: 'bill-payment', syncToken: '0' },
    });
    expect(agent.statusCode).toBe(400);
    expect(agent.json().error.code).toBe('VALIDATION_ERROR');
    const trail = await t.app.inject({
      method: 'GET',
      url: '/agent/v1/audit-events?limit=1',
      headers: t.auth,
    });
    expect(trail.json().data[0]).toMatchObject({ outcome: 'refused', statusCode: 400, entityId: null });
  });

  it('does not refuse the text \\u0000 written out', async () => {
    const res = await post('/api/v1/contacts', { kind: 'customer', name: 'Literal \\u0000 Co' });
    expect(res.statusCode).toBe(201);
    expect(res.json().data.name).toBe('Literal \\u0000 Co');
  });

  it('refuses an unpaired surrogate (in a posting, a draft and a void reason) and keeps a paired one', async () => {
    const before = await stored();
    const surrogate = 'must be well-formed Unicode (a \\ud800-\\udfff escape without its pair)';
    const posting = await post('/api/v1/journal-entries', journalEntryWithMemo('broken \ud800'));
    expect(posting.statusCode).toBe(400);
    expect(posting.json().error.details).toEqual([{ field: 'body.memo', message: surrogate }]);
    const draft = await post('/api/v1/entries', {
      date: '2026-05-04',
      lines: [
        { accountId: t.account('6300'), debitCents: 5, description: '\udc00' },
        { accountId: t.account('1000'), creditCents: 5 },
      ],
    });
    expect(draft.json().error.details).toEqual([{ field: 'body.lines.0.description', message: surrogate }]);
    expect(await stored()).toEqual(before);

    const good = await post('/api/v1/journal-entries', journalEntryWithMemo('Paid 🎉'));
    expect(good.statusCode).toBe(201);
    const id = good.json().journalEntryId;
    const voided = await t.app.inject({
      method: 'POST',
      url: `/api/v1/entries/${id}/void`,
      headers: t.orgHeaders,
      payload: { reason: 'typo \ud83d' },
    });
    expect(voided.statusCode).toBe(400);
    expect(voided.json().error.details).toEqual([{ field: 'body.reason', message: surrogate }]);
    const entry = await t.app.inject({ method: 'GET', url: `/api/v1/entries/${id}`, headers: t.orgHeaders });
    expect(entry.json().data).toMatchObject({ status: 'posted', memo: 'Paid 🎉' });
  });
});
