import { createHash, randomUUID } from 'node:crypto';
import { CLOSE_EVIDENCE_HASHERS } from '@firm/close';
import { agentAuditEvents, closeEvidence, outboxEvents } from '@firm/db';
import { verifyAuditChains } from '@firm/gateway';
import { and, asc, eq, like } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';
import { addUser, type CookieJar, connect, registerClient, signIn } from '../oauth/fixtures';

let t: TestApp;
let ownerJar: CookieJar;
let owner: Record<string, string>;
let admin: Record<string, string>;
let member: Record<string, string>;
/** An agent: an OAuth token for the partner API with every scope a close route asks for. */
let agent: Record<string, string>;
let bankAccountId: string;

const base = () => `/api/v1/companies/${t.orgId}/closes`;

async function sessionHeaders(jar: CookieJar) {
  const csrf = (await t.app.inject({ method: 'GET', url: '/api/session', headers: jar.header() })).json().csrfToken;
  return { ...jar.header(), 'x-csrf-token': csrf };
}

const call = (method: 'GET' | 'POST', url: string, headers: Record<string, string> = t.auth, payload?: object) =>
  t.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });

const open = (payload: object, headers: Record<string, string> = t.auth) => call('POST', base(), headers, payload);
const read = (closeId: string, headers: Record<string, string> = t.auth) =>
  call('GET', `${base()}/${closeId}`, headers);
const signOff = (closeId: string, key: string, payload: object, headers: Record<string, string> = owner) =>
  call('POST', `${base()}/${closeId}/items/${encodeURIComponent(key)}/sign-off`, headers, payload);
const finish = (closeId: string, headers: Record<string, string> = t.auth) =>
  call('POST', `${base()}/${closeId}/finish`, headers);
const reopen = (closeId: string, headers: Record<string, string>, reason = 'a late invoice') =>
  call('POST', `${base()}/${closeId}/reopen`, headers, { reason });

async function reconcileThrough(date: string) {
  const headers = { ...t.orgHeaders, 'idempotency-key': randomUUID() };
  const session = await call('POST', '/api/v1/reconciliations', headers, {
    bankAccountId,
    statementEndDate: date,
    statementEndingBalanceCents: 0,
  });
  expect(session.statusCode, session.body).toBe(201);
  const done = await call(
    'POST',
    `/api/v1/reconciliations/${session.json().data.id}/finish`,
    { ...t.orgHeaders, 'idempotency-key': randomUUID() },
    {},
  );
  expect(done.statusCode, done.body).toBe(200);
}

const verify = () =>
  verifyAuditChains(t.database.db, t.app.auditTrail, { firmId: t.demo.firmId, evidence: CLOSE_EVIDENCE_HASHERS });

beforeAll(async () => {
  t = await createTestApp();
  ownerJar = await signIn(t.app, 'owner@demo-firm.test');
  owner = await sessionHeaders(ownerJar);
  await addUser(t.database.db, t.demo.firmId, 'admin', 'admin@demo-firm.test');
  admin = await sessionHeaders(await signIn(t.app, 'admin@demo-firm.test'));
  await addUser(t.database.db, t.demo.firmId, 'member', 'member@demo-firm.test');
  member = await sessionHeaders(await signIn(t.app, 'member@demo-firm.test'));
  const registered = await registerClient(t.database.db, { isPublic: true, name: 'Close Assistant' });
  const token = (await connect(t.app, ownerJar, registered, { scope: 'entries:read entries:write books:close' }))
    .access_token;
  agent = { authorization: `Bearer ${token}` };
  const bank = await call('POST', '/api/v1/bank-accounts', t.orgHeaders, { accountId: t.account('1000') });
  expect(bank.statusCode, bank.body).toBe(201);
  bankAccountId = bank.json().data.id;
});
afterAll(() => t?.close());

describe('opening a close', () => {
  it('refuses a bad period with 400 and writes nothing', async () => {
    for (const body of [
      { periodEnd: '2026-03-30' },
      { periodEnd: '2026-03-31', periodStart: '2026-04-01' },
      { periodEnd: '2026-01-31', periodStart: '2025-12-01' },
    ]) {
      const res = await open(body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error.code).toBe('VALIDATION_ERROR');
    }
    expect((await call('GET', base())).json().data).toEqual([]);
  });

  it('opens a month by default, any range within the fiscal year, one open close per period (409), keyed once', async () => {
    const key = { ...t.auth, 'idempotency-key': randomUUID() };
    const first = await open({ periodEnd: '2026-03-31' }, key);
    expect(first.statusCode, first.body).toBe(201);
    expect(first.json().data).toMatchObject({ periodStart: '2026-03-01', periodEnd: '2026-03-31', status: 'open' });
    const replay = await open({ periodEnd: '2026-03-31' }, key);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json().data.id).toBe(first.json().data.id);

    const again = await open({ periodEnd: '2026-03-31' });
    expect(again.statusCode).toBe(409);
    expect(again.json().error.code).toBe('CLOSE_ALREADY_OPEN');
    expect(again.json().error.details[0].closeId).toBe(first.json().data.id);

    const quarter = await open({ periodStart: '2026-01-01', periodEnd: '2026-03-15' });
    expect(quarter.statusCode).toBe(201);
    const listed = await call('GET', `${base()}?status=open&limit=1`);
    expect(listed.json().data).toHaveLength(1);
    expect(listed.json().nextCursor).not.toBeNull();
  });

  it("answers another firm's company 404", async () => {
    const other = await createOtherFirm(t.database.db);
    const res = await call('POST', `/api/v1/companies/${other.orgId}/closes`, t.auth, { periodEnd: '2026-03-31' });
    expect(res.statusCode).toBe(404);
    const theirs = await call('GET', `/api/v1/companies/${other.orgId}/closes`, t.auth);
    expect(theirs.statusCode).toBe(404);
  });
});

describe('the close of January: checklist, sign-off, finish, evidence', () => {
  let closeId: string;
  let itemKey: string;

  it('shows an unreconciled bank account as a blocking item, and refuses to finish', async () => {
    closeId = (await open({ periodEnd: '2026-01-31' })).json().data.id;
    const res = await read(closeId);
    expect(res.statusCode).toBe(200);
    const close = res.json().data;
    const item = close.items.find((i: { kind: string }) => i.kind === 'bank_account_unreconciled');
    expect(item).toMatchObject({
      severity: 'blocking',
      signoff: null,
      evidence: [{ type: 'BankAccount', id: bankAccountId }],
    });
    expect(close.open.blocking).toBeGreaterThanOrEqual(1);
    itemKey = item.key;

    const refused = await finish(closeId);
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error.code).toBe('CLOSE_BLOCKED');
    expect(refused.json().error.details.map((d: { itemKey: string }) => d.itemKey)).toContain(itemKey);
  });

  it('signs off by a person with a note; not without one, not an agent, not an unknown item', async () => {
    expect((await signOff(closeId, itemKey, {})).statusCode).toBe(400);
    expect((await signOff(closeId, itemKey, { note: '   ' })).statusCode).toBe(400);
    const byAgent = await signOff(closeId, itemKey, { note: 'looks fine' }, agent);
    expect(byAgent.statusCode).toBe(403);
    expect(byAgent.json().error.code).toBe('FORBIDDEN');
    const unknown = await signOff(closeId, 'bank_account_unreconciled:nothing', { note: 'x' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error.code).toBe('CLOSE_ITEM_NOT_FOUND');

    const signed = await signOff(closeId, itemKey, { note: 'The account was opened in February' });
    expect(signed.statusCode, signed.body).toBe(200);
    expect(signed.json().data.signoff).toMatchObject({
      note: 'The account was opened in February',
      by: { kind: 'session' },
    });
    const close = (await read(closeId)).json().data;
    expect(close.items.find((i: { key: string }) => i.key === itemKey).signoff.note).toBe(
      'The account was opened in February',
    );
    expect(close.open.blocking).toBe(0);

    const keyed = { ...member, 'idempotency-key': randomUUID() };
    const comment = await call('POST', `${base()}/${closeId}/comments`, keyed, { body: 'checked', itemKey });
    expect(comment.statusCode, comment.body).toBe(201);
    const replayed = await call('POST', `${base()}/${closeId}/comments`, keyed, { body: 'checked', itemKey });
    expect(replayed.json().data.id).toBe(comment.json().data.id);
    expect((await read(closeId)).json().data.comments).toHaveLength(1);
  });

  it('finishes by an owner or admin only; the books are then closed through the period end', async () => {
    expect((await finish(closeId, member)).statusCode).toBe(403);
    expect((await finish(closeId, agent)).statusCode).toBe(403);
    const done = await finish(closeId, admin);
    expect(done.statusCode, done.body).toBe(200);
    expect(done.json().data).toMatchObject({ status: 'finished', finishedBy: { kind: 'session' } });
    expect(done.json().data.evidenceSha256).toMatch(/^[0-9a-f]{64}$/);

    const books = await call('GET', `/api/v1/companies/${t.orgId}/books`);
    expect(books.json().data.booksClosedThrough).toBe('2026-01-31');
    const posting = await call(
      'POST',
      '/api/v1/journal-entries',
      { ...t.orgHeaders, 'idempotency-key': randomUUID() },
      {
        txnDate: '2026-01-15',
        lines: [
          { accountId: t.account('6300'), postingType: 'debit', amount: 100 },
          { accountId: t.account('1000'), postingType: 'credit', amount: 100 },
        ],
      },
    );
    expect(posting.statusCode).toBe(422);
    expect(posting.json().error.code).toBe('PERIOD_CLOSED');

    const late = await signOff(closeId, itemKey, { note: 'again' });
    expect(late.statusCode).toBe(409);
    expect((await finish(closeId)).statusCode).toBe(409);
  });

  it('keeps the evidence, downloadable, its hash in the audit trail, proven unchanged until altered', async () => {
    const close = (await read(closeId)).json().data;
    const listed = await call('GET', `${base()}/${closeId}/evidence`);
    expect(listed.json().data.map((f: { name: string }) => f.name)).toEqual([
      'financial-packet.pdf',
      'checklist.json',
      'reconciliation-status.json',
    ]);
    const pdf = await call('GET', `${base()}/${closeId}/evidence/financial-packet.pdf`);
    expect(pdf.statusCode).toBe(200);
    expect(pdf.headers['content-type']).toBe('application/pdf');
    expect(pdf.headers['content-disposition']).toBe('attachment; filename="financial-packet.pdf"');
    expect(pdf.headers['x-content-type-options']).toBe('nosniff');
    expect(pdf.rawPayload.subarray(0, 5).toString()).toBe('%PDF-');
    expect(listed.json().data[0]).toMatchObject({
      contentType: 'application/pdf',
      size: pdf.rawPayload.length,
      sha256: createHash('sha256').update(pdf.rawPayload).digest('hex'),
    });
    const checklist = await call('GET', `${base()}/${closeId}/evidence/checklist.json`);
    expect(checklist.json().items[0].signoff.note).toBe('The account was opened in February');
    expect((await call('GET', `${base()}/${closeId}/evidence/nothing.txt`)).statusCode).toBe(404);

    const [event] = await t.database.db
      .select()
      .from(agentAuditEvents)
      .where(and(eq(agentAuditEvents.entityId, closeId), eq(agentAuditEvents.operation, 'closes.finish')));
    expect(event?.evidenceSha256).toBe(close.evidenceSha256);
    expect(event?.entityType).toBe('Close');

    expect((await verify()).ok).toBe(true);
    const where = and(eq(closeEvidence.closeId, closeId), eq(closeEvidence.name, 'checklist.json'));
    const [original] = await t.database.db.select().from(closeEvidence).where(where);
    await t.database.db
      .update(closeEvidence)
      .set({ content: Buffer.from('{"items":[]}\n') })
      .where(where);
    const broken = await verify();
    expect(broken.ok).toBe(false);
    expect(broken.breaks).toEqual([
      expect.objectContaining({ kind: 'evidence_altered', problem: expect.stringContaining(`Close ${closeId}`) }),
    ]);
    await t.database.db
      .update(closeEvidence)
      .set({ content: original?.content as Buffer })
      .where(where);
    expect((await verify()).ok).toBe(true);
  });
});

describe('resolving, reopening and the board', () => {
  let january: string;
  let february: string;

  it('drops an item once the books no longer show it (the account reconciled)', async () => {
    february = (await open({ periodEnd: '2026-02-28' })).json().data.id;
    const kinds = (await read(february)).json().data.items.map((i: { kind: string }) => i.kind);
    expect(kinds).toContain('bank_account_unreconciled');
    await reconcileThrough('2026-02-28');
    const after = (await read(february)).json().data;
    expect(after.items.map((i: { kind: string }) => i.kind)).not.toContain('bank_account_unreconciled');
    expect((await finish(february)).statusCode).toBe(200);
  });

  it('reopens by an owner only, never while a later period is closed', async () => {
    january = (await call('GET', `${base()}?status=finished`))
      .json()
      .data.find((c: { periodEnd: string }) => c.periodEnd === '2026-01-31').id;
    const blocked = await reopen(january, owner);
    expect(blocked.statusCode).toBe(409);
    expect(blocked.json().error.code).toBe('INVALID_STATE');
    expect((await reopen(february, admin)).statusCode).toBe(403);
    expect((await call('POST', `${base()}/${february}/reopen`, owner, {})).statusCode).toBe(400);
    const feb = await reopen(february, owner);
    expect(feb.statusCode, feb.body).toBe(200);
    expect(feb.json().data).toMatchObject({ status: 'reopened', reopenReason: 'a late invoice' });
    expect((await call('GET', `/api/v1/companies/${t.orgId}/books`)).json().data.booksClosedThrough).toBe('2026-01-31');
    expect((await reopen(january, owner)).statusCode).toBe(200);
    expect((await call('GET', `/api/v1/companies/${t.orgId}/books`)).json().data.booksClosedThrough).toBe('2025-12-31');
    expect((await call('GET', `${base()}/${january}/evidence`)).json().data).toHaveLength(3);
    // A reopened period can be closed again.
    const again = await open({ periodEnd: '2026-01-31' });
    expect(again.statusCode).toBe(201);
    january = again.json().data.id;
  });

  it('records every step for webhooks', async () => {
    const types = await t.database.db
      .select({ type: outboxEvents.type })
      .from(outboxEvents)
      .where(and(eq(outboxEvents.organizationId, t.orgId), like(outboxEvents.type, 'close.%')))
      .orderBy(asc(outboxEvents.createdAt));
    expect(new Set(types.map((r) => r.type))).toEqual(
      new Set(['close.opened', 'close.item_signed_off', 'close.finished', 'close.reopened']),
    );
  });

  it("shows the firm's board for a period, with each company's open counts", async () => {
    const res = await call('GET', '/api/v1/closes?periodEnd=2026-01-31', member);
    expect(res.statusCode, res.body).toBe(200);
    const rows = res.json().data as { companyId: string; close: { status: string } | null; open: object | null }[];
    expect(rows.length).toBe(t.demo.organizations.length);
    const ours = rows.find((r) => r.companyId === t.orgId);
    expect(ours?.close?.status).toBe('open');
    expect(ours?.close).toMatchObject({ id: january });
    expect(ours?.open).toEqual((await read(january)).json().data.open);
    expect(rows.filter((r) => r.companyId !== t.orgId).every((r) => r.close === null)).toBe(true);
    expect((await call('GET', '/api/v1/closes?periodEnd=2026-13-01')).statusCode).toBe(400);
  });

  it("reports last month's unfinished close in the gateway's health scan", async () => {
    const scan = await call('GET', '/agent/v1/skills/client-health-scan?asOf=2026-02-15');
    expect(scan.statusCode, scan.body).toBe(200);
    const ours = scan
      .json()
      .data.findings.filter((f: { code: string; clientId: string }) => f.code === 'CLOSE_NOT_FINISHED');
    expect(ours.find((f: { clientId: string }) => f.clientId === t.orgId)).toMatchObject({
      evidence: { periodEnd: '2026-01-31', closeId: january, status: 'open' },
      fix: { method: 'GET', path: `/acct/clients/${t.orgId}/closes/${january}` },
    });
    const others = ours.filter((f: { clientId: string }) => f.clientId !== t.orgId);
    expect(others.every((f: { fix: { method: string } }) => f.fix.method === 'POST')).toBe(true);
  });
});

describe('agents through the gateway and MCP', () => {
  let mcpToken: string;
  let rpcId = 0;
  const mcp = (method: string, params: object) =>
    t.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: {
        authorization: `Bearer ${mcpToken}`,
        accept: 'application/json, text/event-stream',
        'content-type': 'application/json',
      },
      payload: { jsonrpc: '2.0', id: ++rpcId, method, params },
    });
  const tool = async (name: string, args: object) => {
    const res = await mcp('tools/call', { name, arguments: args });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().result as { isError?: boolean; structuredContent?: { data: Record<string, unknown> } };
  };

  beforeAll(async () => {
    const metadata = await t.app.inject({ method: 'GET', url: '/.well-known/oauth-protected-resource/mcp' });
    const registered = await registerClient(t.database.db, { isPublic: true, name: 'Close Agent' });
    mcpToken = (
      await connect(t.app, ownerJar, registered, {
        scope: 'acct:clients:read acct:closes:read acct:closes:write entries:write books:close',
        resource: metadata.json().resource,
      })
    ).access_token;
  });

  it('opens a close, reads its checklist and comments, and has no tool to sign off or finish', async () => {
    const opened = await tool('open_close', { clientId: t.orgId, body: { periodEnd: '2026-04-30' } });
    expect(opened.isError, JSON.stringify(opened)).toBeFalsy();
    const closeId = opened.structuredContent?.data.id as string;
    const checklist = await tool('close_checklist', { clientId: t.orgId, closeId });
    const items = checklist.structuredContent?.data.items as { kind: string; key: string }[];
    expect(items.map((i) => i.kind)).toContain('bank_account_unreconciled');
    const comment = await tool('close_comment', {
      clientId: t.orgId,
      closeId,
      body: { body: 'No statement for April yet', itemKey: items[0]?.key },
    });
    expect(comment.isError).toBeFalsy();
    expect((await read(closeId)).json().data.comments).toEqual([
      expect.objectContaining({
        body: 'No statement for April yet',
        author: { kind: 'oauth_token', id: expect.any(String) },
      }),
    ]);
    const board = await tool('close_status', { periodEnd: '2026-04-30' });
    const rows = board.structuredContent?.data as unknown as { companyId: string; close: { id: string } | null }[];
    expect(rows.find((r) => r.companyId === t.orgId)?.close?.id).toBe(closeId);

    const names = ((await mcp('tools/list', {})).json().result.tools as { name: string }[]).map((x) => x.name);
    expect(names).toEqual(expect.arrayContaining(['close_status', 'close_checklist', 'close_comment']));
    expect(names.filter((n) => /sign|finish|reopen/.test(n))).toEqual([]);

    // The same agent's calls on the partner API's people-only routes (an API-bound token, as above): 403.
    expect((await signOff(closeId, items[0]?.key as string, { note: 'fine' }, agent)).json().error.code).toBe(
      'FORBIDDEN',
    );
    expect((await finish(closeId, agent)).json().error.code).toBe('FORBIDDEN');
  });

  it("records the agent's close calls in the audit trail; a token without the scope is refused", async () => {
    const ops = await t.database.db
      .select({ operation: agentAuditEvents.operation })
      .from(agentAuditEvents)
      .where(like(agentAuditEvents.operation, 'closes.%'));
    expect(ops.map((o) => o.operation)).toEqual(
      expect.arrayContaining(['closes.open', 'closes.read', 'closes.comment']),
    );
    const registered = await registerClient(t.database.db, { isPublic: true, name: 'Reader' });
    const reader = (await connect(t.app, ownerJar, registered, { scope: 'acct:clients:read' })).access_token;
    const res = await t.app.inject({
      method: 'GET',
      url: `/agent/v1/acct/closes?periodEnd=2026-04-30`,
      headers: { authorization: `Bearer ${reader}` },
    });
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe('INSUFFICIENT_SCOPE');
  });
});
