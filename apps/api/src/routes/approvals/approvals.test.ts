import { agentProposals, organizations, users } from '@firm/db';
import { DEMO_OWNER_EMAIL } from '@firm/demo';
import { and, eq, ne } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';
import { addUser, type CookieJar, FORM, form, hiddenFields, signIn } from '../oauth/fixtures';
import { type HeldAgent, HOLD_OVER_10K, heldAgent } from './fixtures';

let t: TestApp;
let held: HeldAgent;
let owner: CookieJar;
let member: CookieJar;
let otherProposalId: string;

beforeAll(async () => {
  t = await createTestApp();
  held = await heldAgent(t);
  owner = await signIn(t.app, DEMO_OWNER_EMAIL);
  const [second] = await t.database.db
    .select({ id: organizations.id })
    .from(organizations)
    .where(and(eq(organizations.firmId, t.demo.firmId), ne(organizations.id, t.orgId)));
  const user = await addUser(t.database.db, t.demo.firmId, 'member', 'member@demo-firm.test');
  await t.database.db
    .update(users)
    .set({ organizationIds: [second?.id as string] })
    .where(eq(users.id, user.id));
  member = await signIn(t.app, 'member@demo-firm.test');

  // Another firm, whose own agent (an API key) has a bill held the same way.
  const other = await createOtherFirm(t.database.db);
  const otherBase = `/agent/v1/acct/clients/${other.orgId}`;
  const auth = { authorization: other.authorization };
  const opened = await t.app.inject({
    method: 'PATCH',
    url: otherBase,
    headers: auth,
    payload: { agentAccess: 'read_write', approvalPolicy: HOLD_OVER_10K },
  });
  expect(opened.statusCode, opened.body).toBe(200);
  const vendor = await t.app.inject({
    method: 'POST',
    url: `${otherBase}/entities/Vendor`,
    headers: { ...auth, 'idempotency-key': 'other-vendor' },
    payload: { DisplayName: 'Other Supplies' },
  });
  const expense = other.accounts.find((a) => a.code === '6300')?.id as string;
  const bill = await t.app.inject({
    method: 'POST',
    url: `${otherBase}/transactions`,
    headers: { ...auth, 'idempotency-key': 'other-bill' },
    payload: {
      entityType: 'bill',
      payload: {
        VendorRef: { value: vendor.json().data.Id },
        TxnDate: '2026-04-02',
        Line: [
          {
            Amount: 50000,
            DetailType: 'AccountBasedExpenseLineDetail',
            AccountBasedExpenseLineDetail: { AccountRef: { value: expense } },
          },
        ],
      },
    },
  });
  expect(bill.statusCode, bill.body).toBe(202);
  otherProposalId = bill.json().data.id;
});
afterAll(() => t.close());

const page = (jar: CookieJar | null, url: string) =>
  t.app.inject({ method: 'GET', url, headers: jar ? jar.header() : {} });

const csrfOf = async (jar: CookieJar) => hiddenFields((await page(jar, '/login')).body).csrf_token as string;

/** Posts the decision form of a proposal's page, as the browser would, with these fields over the page's own. */
async function submit(
  jar: CookieJar,
  id: string,
  decision: 'approve' | 'reject',
  fields: Record<string, string | undefined> = {},
) {
  const detail = await page(jar, `/approvals/${id}`);
  return t.app.inject({
    method: 'POST',
    url: `/approvals/${id}/${decision}`,
    headers: { ...FORM, ...jar.header() },
    payload: form({ ...hiddenFields(detail.body), ...fields }),
  });
}

const statusOf = async (id: string) =>
  (
    await t.database.db
      .select({ status: agentProposals.status, note: agentProposals.decisionNote })
      .from(agentProposals)
      .where(eq(agentProposals.id, id))
  )[0];

describe("the approvers' pages", () => {
  it('send a visitor who is not signed in to sign in, and back', async () => {
    const { id } = await held.propose(11000, 'signed-out');
    for (const url of ['/approvals?status=pending', `/approvals/${id}`]) {
      const res = await page(null, url);
      expect(res.statusCode).toBe(302);
      expect(res.headers.location).toBe(`/login?return_to=${encodeURIComponent(url)}`);
    }
    const post = await t.app.inject({
      method: 'POST',
      url: `/approvals/${id}/approve`,
      headers: FORM,
      payload: form({ note: 'no' }),
    });
    expect(post.statusCode).toBe(303);
    expect(post.headers.location).toBe(`/login?return_to=${encodeURIComponent(`/approvals/${id}`)}`);
    expect((await statusOf(id))?.status).toBe('pending');
  });

  it('are linked from the signed-in page', async () => {
    const res = await page(owner, '/login');
    expect(res.body).toContain('href="/approvals"');
  });

  it("list a pending proposal with its client, agent, amount, reason and preview, and not another firm's", async () => {
    const { statusCode, id } = await held.propose(15000, 'listed', 'Quarterly equipment from the supplier');
    expect(statusCode).toBe(202);
    const res = await page(owner, '/approvals');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/html');
    expect(res.headers['content-security-policy']).toContain("form-action 'self'");
    const body = res.body;
    expect(body).toContain(`href="/approvals/${id}"`);
    expect(body).toContain('Create Bill');
    expect(body).toContain(t.demo.organizations[0]?.name as string);
    expect(body).toContain('Bookkeeping Agent');
    expect(body).toContain('15,000.00');
    expect(body).toContain('Quarterly equipment from the supplier');
    expect(body).toContain('the amount 15,000.00 is over 10,000.00');
    expect(body).toMatch(/6300 [^<]+<\/td>/);
    expect(body).toContain('Period:');
    expect(body).not.toContain(otherProposalId);

    const executed = await page(owner, '/approvals?status=executed');
    expect(executed.body).not.toContain(`href="/approvals/${id}"`);
    expect(executed.body).toContain('No executed proposals.');
    expect((await page(owner, `/approvals/${otherProposalId}`)).statusCode).toBe(404);
  });

  it('show a member only the companies they may see', async () => {
    const { id } = await held.propose(12000, 'for-member');
    const list = await page(member, '/approvals');
    expect(list.statusCode).toBe(200);
    expect(list.body).not.toContain(id);
    expect((await page(member, `/approvals/${id}`)).statusCode).toBe(404);
    const before = await held.bills();
    // the member's own session token, from the signed-in page's sign-out form
    const res = await t.app.inject({
      method: 'POST',
      url: `/approvals/${id}/approve`,
      headers: { ...FORM, ...member.header() },
      payload: form({ csrf_token: await csrfOf(member) }),
    });
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toContain('text/html');
    expect(res.body).toContain('Proposal not found');
    expect((await statusOf(id))?.status).toBe('pending');
    expect(await held.bills()).toBe(before);
  });

  it('refuse a form without the session CSRF token, with a wrong one, or from another origin, deciding nothing', async () => {
    const { id } = await held.propose(13000, 'csrf');
    const before = await held.bills();
    const cases: [Record<string, string | undefined>, Record<string, string>][] = [
      [{ csrf_token: undefined }, {}],
      [{ csrf_token: 'not-the-token' }, {}],
      [{}, { origin: 'https://evil.example' }],
    ];
    for (const [fields, headers] of cases) {
      const detail = await page(owner, `/approvals/${id}`);
      const sent = { ...hiddenFields(detail.body), ...fields };
      const res = await t.app.inject({
        method: 'POST',
        url: `/approvals/${id}/approve`,
        headers: { ...FORM, ...owner.header(), ...headers },
        payload: form(sent),
      });
      expect(res.statusCode, JSON.stringify(fields)).toBe(403);
      expect(res.headers['content-type']).toContain('text/html');
    }
    expect((await statusOf(id))?.status).toBe('pending');
    expect(await held.bills()).toBe(before);
  });

  it('approve through the form: 303 to the page saying so, the bill written once', async () => {
    const { id } = await held.propose(14000, 'approve-form');
    const before = await held.bills();
    const res = await submit(owner, id, 'approve', { note: 'matches the quote' });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(`/approvals/${id}?done=executed`);
    expect(await statusOf(id)).toEqual({ status: 'executed', note: 'matches the quote' });
    expect(await held.bills()).toBe(before + 1);
    const after = await page(owner, res.headers.location as string);
    expect(after.body).toContain('Approved: the write ran.');
    expect(after.body).toContain('matches the quote');
    expect(after.body).toContain('approved by');
    expect(after.body).toContain('Demo Owner');
    expect(after.body).not.toContain('name="csrf_token"');

    const retry = await t.app.inject({
      method: 'POST',
      url: `${held.base}/transactions`,
      headers: { ...held.agent, 'idempotency-key': 'approve-form' },
      payload: held.billOf(14000),
    });
    expect(retry.statusCode).toBe(201);
    expect(await held.bills()).toBe(before + 1);
  });

  it('reject with a note: nothing written', async () => {
    const { id } = await held.propose(16000, 'reject-form');
    // a link to the page cannot make it say something the proposal did not do
    expect((await page(owner, `/approvals/${id}?done=executed`)).body).not.toContain('Approved: the write ran.');
    const before = await held.bills();
    const res = await submit(owner, id, 'reject', { note: 'not our vendor' });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(`/approvals/${id}?done=rejected`);
    expect(await statusOf(id)).toEqual({ status: 'rejected', note: 'not our vendor' });
    expect(await held.bills()).toBe(before);
    expect((await page(owner, `/approvals/${id}?done=rejected`)).body).toContain('Rejected: nothing was written.');
  });

  it('say with 409 that a proposal already decided is not decided again', async () => {
    const { id } = await held.propose(17000, 'twice');
    const detail = await page(owner, `/approvals/${id}`);
    const fields = hiddenFields(detail.body);
    const send = (decision: string) =>
      t.app.inject({
        method: 'POST',
        url: `/approvals/${id}/${decision}`,
        headers: { ...FORM, ...owner.header() },
        payload: form({ ...fields, note: 'late' }),
      });
    expect((await send('reject')).statusCode).toBe(303);
    const before = await held.bills();
    const again = await send('approve');
    expect(again.statusCode).toBe(409);
    expect(again.headers['content-type']).toContain('text/html');
    expect(again.body).toContain('this proposal is already rejected');
    expect((await statusOf(id))?.status).toBe('rejected');
    expect(await held.bills()).toBe(before);
  });

  it('say with 409 that an expired proposal is no longer decided', async () => {
    const { id } = await held.propose(17500, 'expired');
    await t.database.db
      .update(agentProposals)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(agentProposals.id, id));
    const before = await held.bills();
    const res = await t.app.inject({
      method: 'POST',
      url: `/approvals/${id}/approve`,
      headers: { ...FORM, ...owner.header() },
      payload: form({ csrf_token: await csrfOf(owner) }),
    });
    expect(res.statusCode).toBe(409);
    expect(res.body).toContain('this proposal is already expired');
    expect(res.body).not.toContain('name="note"');
    expect(await held.bills()).toBe(before);
    expect((await page(owner, '/approvals?status=expired')).body).toContain(`href="/approvals/${id}"`);
  });

  it('answer an unknown proposal with a 404 page', async () => {
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-an-id']) {
      const res = await page(owner, `/approvals/${id}`);
      expect(res.statusCode).toBe(404);
      expect(res.headers['content-type']).toContain('text/html');
      expect(res.body).toContain('Proposal not found');
      const post = await t.app.inject({
        method: 'POST',
        url: `/approvals/${id}/approve`,
        headers: { ...FORM, ...owner.header() },
        payload: form({ csrf_token: await csrfOf(owner) }),
      });
      expect(post.statusCode).toBe(404);
    }
  });

  it("escape the agent's reason", async () => {
    const { id } = await held.propose(18000, 'hostile', '<script>alert("x")</script> & more');
    for (const url of ['/approvals', `/approvals/${id}`]) {
      const res = await page(owner, url);
      expect(res.body).not.toContain('<script>');
      expect(res.body).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; more');
    }
  });

  it('refuse a note over 2,000 characters with a 400 page, deciding nothing', async () => {
    const { id } = await held.propose(19000, 'long-note');
    const res = await submit(owner, id, 'approve', { note: 'x'.repeat(2001) });
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toContain('text/html');
    expect((await statusOf(id))?.status).toBe('pending');
  });

  it('are in the OpenAPI document as public page routes', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/api/openapi.json' })).json();
    expect(doc.paths['/approvals'].get.responses['200'].content).toHaveProperty('text/html');
    expect(doc.paths['/approvals/{id}'].get.security).toEqual([]);
    expect(doc.paths['/approvals/{id}/approve'].post.responses).toHaveProperty('409');
    expect(doc.paths['/approvals/{id}/reject'].post.responses).toHaveProperty('403');
  });
});
