import { randomUUID } from 'node:crypto';
import { rowsOf } from '@firm/db';
import { runDueScheduledEntries } from '@firm/ledger';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deref, type Json } from '../../openapi-operations';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const URL = '/api/v1/scheduled-journal-entries';
const create = (payload: object, key = randomUUID()) =>
  t.app.inject({ method: 'POST', url: URL, headers: { ...t.orgHeaders, 'idempotency-key': key }, payload });
const get = (url: string) => t.app.inject({ method: 'GET', url, headers: t.orgHeaders });

const depreciation = (overrides: object = {}) => ({
  name: 'Depreciation',
  memo: 'Monthly depreciation',
  lines: [
    { accountId: t.account('6300'), debitCents: 25_000, description: 'Depreciation expense' },
    { accountId: t.account('1000'), creditCents: 25_000 },
  ],
  schedule: { frequency: 'monthly', dayOfMonth: 0, startDate: '2026-01-01', weekendRule: 'previous_business_day' },
  ...overrides,
});

async function stored() {
  const [row] = rowsOf<{ templates: number; entries: number }>(
    await t.database.db.execute(sql`
      select (select count(*)::int from scheduled_journal_entries where organization_id = ${t.orgId}) as templates,
             (select count(*)::int from journal_entries where organization_id = ${t.orgId}) as entries`),
  );
  return row;
}

describe('scheduled journal entries over HTTP', () => {
  it('creates a template, catches up three missed months with three entries, and shows the history', async () => {
    const key = randomUUID();
    const res = await create(depreciation(), key);
    expect(res.statusCode, res.body).toBe(201);
    const template = res.json().data;
    expect(template).toMatchObject({
      status: 'active',
      schedule: { frequency: 'monthly', interval: 1, dayOfMonth: 0, dayOfWeek: null, endDate: null },
      nextRun: { occurrence: '2026-01-31', entryDate: '2026-01-30', notBefore: null },
      history: [],
    });
    // A retry with the key replays the template instead of making a second one.
    const replay = await create(depreciation(), key);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json().data.id).toBe(template.id);

    const before = await stored();
    await runDueScheduledEntries(t.database.db, { now: new Date('2026-04-15T08:00:00Z'), organizationId: t.orgId });
    expect((await stored())?.entries).toBe((before?.entries ?? 0) + 3);
    const after = (await get(`${URL}/${template.id}`)).json().data;
    expect(after.history.map((h: { occurrence: string; entryDate: string }) => [h.occurrence, h.entryDate])).toEqual([
      ['2026-03-31', '2026-03-31'],
      ['2026-02-28', '2026-02-27'],
      ['2026-01-31', '2026-01-30'],
    ]);
    expect(after.nextRun).toMatchObject({ occurrence: '2026-04-30' });
    const entry = (await get(`/api/v1/entries/${after.history[1].journalEntryId}`)).json().data;
    expect(entry).toMatchObject({ date: '2026-02-27', memo: 'Monthly depreciation', status: 'posted' });

    const list = (await get(URL)).json().data;
    expect(list.map((x: { id: string }) => x.id)).toContain(template.id);
  });

  it('changes, pauses, resumes and deletes a template', async () => {
    const { id } = (await create(depreciation({ name: 'Rent' }))).json().data;
    const patch = (payload: object) =>
      t.app.inject({ method: 'PATCH', url: `${URL}/${id}`, headers: t.orgHeaders, payload });
    const changed = await patch({ memo: 'Rent, new lease', schedule: { dayOfMonth: 15 } });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json().data).toMatchObject({ memo: 'Rent, new lease', schedule: { dayOfMonth: 15 }, version: 2 });
    const action = (name: string) =>
      t.app.inject({ method: 'POST', url: `${URL}/${id}/${name}`, headers: t.orgHeaders });
    expect((await action('pause')).json().data.status).toBe('paused');
    expect((await action('resume')).json().data.status).toBe('active');
    const deleted = await t.app.inject({ method: 'DELETE', url: `${URL}/${id}`, headers: t.orgHeaders });
    expect(deleted.statusCode).toBe(204);
    expect((await get(`${URL}/${id}`)).statusCode).toBe(404);
    expect((await action('pause')).statusCode).toBe(404);
  });

  it('refuses bad templates with the documented errors and writes nothing', async () => {
    const other = await createOtherFirm(t.database.db, 'scheduled-other');
    const otherAccount = other.accounts.find((a) => a.code === '6300')?.id as string;
    await t.database.db.execute(sql`update accounts set archived = true where id = ${t.account('6200')}`);
    const before = await stored();
    const line = (accountId: string, side: 'debitCents' | 'creditCents', cents = 100) => ({ accountId, [side]: cents });
    const cases: [object, number, string, string?][] = [
      [
        depreciation({ lines: [line(t.account('6300'), 'debitCents'), line(t.account('1000'), 'creditCents', 90)] }),
        422,
        'UNBALANCED_ENTRY',
      ],
      [
        depreciation({ lines: [line(t.account('6200'), 'debitCents'), line(t.account('1000'), 'creditCents')] }),
        422,
        'INVALID_ACCOUNT',
      ],
      [
        depreciation({ lines: [line(otherAccount, 'debitCents'), line(t.account('1000'), 'creditCents')] }),
        422,
        'INVALID_ACCOUNT',
      ],
      [
        depreciation({ schedule: { frequency: 'weekly', dayOfMonth: 31, startDate: '2026-01-01' } }),
        400,
        'VALIDATION_ERROR',
        'schedule.dayOfMonth',
      ],
      [
        depreciation({
          schedule: { frequency: 'monthly', dayOfMonth: 1, startDate: '2026-02-01', endDate: '2026-01-01' },
        }),
        400,
        'VALIDATION_ERROR',
        'schedule.endDate',
      ],
      [depreciation({ schedule: { frequency: 'daily', startDate: '2026-01-01' } }), 400, 'VALIDATION_ERROR'],
      [depreciation({ lines: [line(t.account('6300'), 'debitCents')] }), 400, 'VALIDATION_ERROR'],
    ];
    for (const [payload, status, code, field] of cases) {
      const res = await create(payload);
      expect(res.statusCode, res.body).toBe(status);
      expect(res.json().error.code).toBe(code);
      if (field) expect(res.json().error.details.map((d: { field: string }) => d.field)).toContain(field);
    }
    const noKey = await t.app.inject({ method: 'POST', url: URL, headers: t.orgHeaders, payload: depreciation() });
    expect(noKey.statusCode).toBe(400);
    expect(await stored()).toEqual(before);
    await t.database.db.execute(sql`update accounts set archived = false where id = ${t.account('6200')}`);
  });

  it('refuses a start before the previous fiscal year, or a first entry in the closed books, naming the field', async () => {
    const before = await stored();
    const ancient = await create(
      depreciation({ schedule: { frequency: 'weekly', dayOfWeek: 1, startDate: '1900-01-01' } }),
    );
    expect(ancient.statusCode, ancient.body).toBe(400);
    expect(ancient.json()).toEqual({
      error: {
        code: 'VALIDATION_ERROR',
        message: expect.stringContaining('schedule'),
        retryable: false,
        requestId: ancient.headers['x-request-id'],
        details: [{ field: 'schedule.startDate', message: expect.stringContaining('previous fiscal year') }],
      },
    });
    expect(await stored()).toEqual(before);

    const { id } = (await create(depreciation({ name: 'Amortization' }))).json().data;
    const patched = await t.app.inject({
      method: 'PATCH',
      url: `${URL}/${id}`,
      headers: t.orgHeaders,
      payload: { schedule: { startDate: '1900-01-01' } },
    });
    expect(patched.statusCode, patched.body).toBe(400);
    expect(patched.json().error.details).toEqual([
      { field: 'schedule.startDate', message: expect.stringContaining('previous fiscal year') },
    ]);

    // The first occurrence, 2026-01-31, is a Saturday: its entry is dated Friday 2026-01-30.
    await t.database.db.execute(
      sql`update organizations set books_closed_through = '2026-01-30' where id = ${t.orgId}`,
    );
    const closed = await create(depreciation());
    await t.database.db.execute(sql`update organizations set books_closed_through = null where id = ${t.orgId}`);
    expect(closed.statusCode, closed.body).toBe(422);
    expect(closed.json().error).toMatchObject({
      code: 'PERIOD_CLOSED',
      retryable: false,
      details: [{ field: 'schedule.startDate', message: expect.stringContaining('2026-01-30') }],
    });
  });
});

describe('which day goes with which frequency', () => {
  const WEEKLY_DAY_OF_MONTH = {
    code: 'VALIDATION_ERROR',
    message: 'the schedule is not valid',
    details: [{ field: 'schedule.dayOfMonth', message: 'a weekly schedule runs on a dayOfWeek, not a dayOfMonth' }],
  };

  it('is stated in the document: a dayOfWeek on a weekly schedule, a dayOfMonth on the others, never both', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/api/openapi.json' })).json() as Json;
    const bodyOf = (method: string, path: string) => {
      const op = (doc.paths as Record<string, Record<string, Json>>)[path]?.[method] as Json;
      const body = deref(doc, op.requestBody) as { content: { 'application/json': { schema: Json } } };
      return body.content['application/json'].schema as { properties: { schedule: Json } };
    };
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    const created = ajv.compile(bodyOf('post', '/api/v1/scheduled-journal-entries').properties.schedule);
    const valid = (schedule: object) => created({ startDate: '2026-01-01', ...schedule });
    expect(valid({ frequency: 'weekly', dayOfWeek: 1 })).toBe(true);
    expect(valid({ frequency: 'weekly', dayOfWeek: 1, dayOfMonth: null })).toBe(true);
    expect(valid({ frequency: 'weekly', dayOfWeek: 1, dayOfMonth: 31 })).toBe(false);
    expect(valid({ frequency: 'weekly', dayOfMonth: 31 })).toBe(false);
    expect(valid({ frequency: 'monthly', dayOfMonth: 0 })).toBe(true);
    expect(valid({ frequency: 'quarterly', dayOfMonth: 15, dayOfWeek: null })).toBe(true);
    expect(valid({ frequency: 'yearly', dayOfMonth: 15, dayOfWeek: 2 })).toBe(false);
    expect(valid({ frequency: 'monthly' })).toBe(false);

    // A change is merged over the template: the schema can only say what the change itself may not combine.
    const changed = ajv.compile(bodyOf('patch', '/api/v1/scheduled-journal-entries/{id}').properties.schedule);
    expect(changed({ dayOfMonth: 15 })).toBe(true);
    expect(changed({ dayOfWeek: 3 })).toBe(true);
    expect(changed({ frequency: 'weekly', dayOfWeek: 3, dayOfMonth: null })).toBe(true);
    expect(changed({ frequency: 'weekly', dayOfMonth: 15 })).toBe(false);
    expect(changed({ frequency: 'monthly', dayOfWeek: 3 })).toBe(false);
    expect(changed({ dayOfMonth: 15, everyOther: true })).toBe(false);
  });

  it('is refused by the server in the ledger’s words, on creation and on a change, and nothing is written', async () => {
    const before = await stored();
    const weekly = { frequency: 'weekly', dayOfWeek: 1, dayOfMonth: 31, startDate: '2026-01-01' };
    const refused = await create(depreciation({ schedule: weekly }));
    expect(refused.statusCode, refused.body).toBe(400);
    expect(refused.json().error).toMatchObject(WEEKLY_DAY_OF_MONTH);
    expect(await stored()).toEqual(before);

    const { id, version } = (
      await create(depreciation({ name: 'Weekly sweep', schedule: { ...weekly, dayOfMonth: null } }))
    ).json().data;
    const patch = (schedule: object) =>
      t.app.inject({ method: 'PATCH', url: `${URL}/${id}`, headers: t.orgHeaders, payload: { schedule } });
    for (const schedule of [{ dayOfMonth: 15 }, { frequency: 'weekly', dayOfMonth: 15 }]) {
      const res = await patch(schedule);
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().error).toMatchObject(WEEKLY_DAY_OF_MONTH);
    }
    const monthly = await patch({ frequency: 'monthly', dayOfWeek: 2, dayOfMonth: 1 });
    expect(monthly.statusCode, monthly.body).toBe(400);
    expect(monthly.json().error.details).toEqual([
      { field: 'schedule.dayOfWeek', message: 'a monthly schedule runs on a dayOfMonth, not a dayOfWeek' },
    ]);
    const unknown = await patch({ dayOfWeek: 2, everyOther: true });
    expect(unknown.statusCode, unknown.body).toBe(400);
    expect(unknown.json().error.details).toContainEqual({
      field: 'body.schedule.everyOther',
      message: 'is not a known field',
    });
    expect((await get(`${URL}/${id}`)).json().data).toMatchObject({ version, schedule: { dayOfWeek: 1 } });
    // Switching to monthly names the day it runs on and clears the other.
    const switched = await patch({ frequency: 'monthly', dayOfWeek: null, dayOfMonth: 1 });
    expect(switched.statusCode, switched.body).toBe(200);
    expect(switched.json().data.schedule).toMatchObject({ frequency: 'monthly', dayOfMonth: 1, dayOfWeek: null });
  });
});
