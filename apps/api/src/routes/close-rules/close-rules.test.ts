import { closeRuleSettings } from '@firm/db';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';
import { DEMO_OWNER_EMAIL } from '@firm/demo';
import { addUser, bearer, connect, registerClient, signIn } from '../oauth/fixtures';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

type Headers = Record<string, string>;
const patch = (kind: string, payload: object, headers: Headers = t.auth) =>
  t.app.inject({ method: 'PATCH', url: `/api/v1/close-rules/${kind}`, headers, payload });
const list = (headers: Headers = t.auth) => t.app.inject({ method: 'GET', url: '/api/v1/close-rules', headers });
const settingsRows = () =>
  t.database.db.select().from(closeRuleSettings).where(eq(closeRuleSettings.firmId, t.demo.firmId));

async function sessionOf(email: string): Promise<Headers> {
  const jar = await signIn(t.app, email);
  const csrf = (await t.app.inject({ method: 'GET', url: '/api/session', headers: jar.header() })).json().csrfToken;
  return { ...jar.header(), 'x-csrf-token': csrf };
}

describe('the close checklist rules through the API', () => {
  it('lists the catalogue with each rule’s severity, state and thresholds', async () => {
    const res = await list();
    expect(res.statusCode, res.body).toBe(200);
    const rules = res.json().data as { kind: string; severity: string; enabled: boolean }[];
    expect(rules.map((r) => r.kind)).toContain('expense_spike');
    expect(rules.find((r) => r.kind === 'bank_account_unreconciled')).toMatchObject({
      severity: 'blocking',
      enabled: true,
    });
    expect(rules.find((r) => r.kind === 'possible_duplicate')).toMatchObject({
      severity: 'advisory',
      thresholds: [{ name: 'days', value: 3, default: 3, min: 0 }],
    });
  });

  it('turns an advisory rule off and tunes a threshold for the firm only', async () => {
    const res = await patch('expense_spike', { enabled: false, thresholds: { percent: 80 } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toMatchObject({
      kind: 'expense_spike',
      enabled: false,
      thresholds: [
        { name: 'percent', value: 80, default: 50 },
        { name: 'amountCents', value: 50_000 },
      ],
    });
    const spike = (await list()).json().data.find((r: { kind: string }) => r.kind === 'expense_spike');
    expect(spike).toMatchObject({ enabled: false });
    const other = await createOtherFirm(t.database.db);
    const theirs = (await list({ authorization: other.authorization }))
      .json()
      .data.find((r: { kind: string }) => r.kind === 'expense_spike');
    expect(theirs).toMatchObject({ enabled: true, thresholds: [{ value: 50 }, { value: 50_000 }] });
    expect((await patch('expense_spike', { enabled: true, thresholds: { percent: null } })).json().data).toMatchObject({
      enabled: true,
      thresholds: [{ value: 50 }, { value: 50_000 }],
    });
  });

  it('refuses a blocking rule off, unknown or negative thresholds, and unknown fields, changing nothing', async () => {
    const before = await settingsRows();
    for (const [kind, body, field] of [
      ['draft_entries', { enabled: false }, 'enabled'],
      ['expense_spike', { thresholds: { ratio: 3 } }, 'thresholds.ratio'],
      ['expense_spike', { thresholds: { amountCents: -1 } }, 'thresholds.amountCents'],
      ['possible_duplicate', { thresholds: { days: 1.5 } }, 'thresholds.days'],
    ] as const) {
      const res = await patch(kind, body);
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().error).toMatchObject({ code: 'VALIDATION_ERROR', details: [{ field }] });
    }
    expect((await patch('expense_spike', { severity: 'blocking' })).statusCode).toBe(400);
    expect((await patch('no_such_rule', { enabled: false })).json().error.code).toBe('NOT_FOUND');
    expect(await settingsRows()).toEqual(before);
  });

  it('lets owners and admins change the rules, not members or agents', async () => {
    await addUser(t.database.db, t.demo.firmId, 'admin', 'rules-admin@demo-firm.test');
    await addUser(t.database.db, t.demo.firmId, 'member', 'rules-member@demo-firm.test');
    const admin = await sessionOf('rules-admin@demo-firm.test');
    expect((await patch('possible_duplicate', { thresholds: { days: 5 } }, admin)).statusCode).toBe(200);
    const member = await sessionOf('rules-member@demo-firm.test');
    expect((await list(member)).statusCode).toBe(200);
    const refused = await patch('possible_duplicate', { thresholds: { days: 7 } }, member);
    expect(refused.statusCode).toBe(403);
    const owner = await signIn(t.app, DEMO_OWNER_EMAIL);
    const agent = bearer((await connect(t.app, owner, await registerClient(t.database.db))).access_token);
    expect((await patch('possible_duplicate', { thresholds: { days: 7 } }, agent)).statusCode).toBe(403);
    const rule = (await list()).json().data.find((r: { kind: string }) => r.kind === 'possible_duplicate');
    expect(rule.thresholds[0].value).toBe(5);
  });
});
