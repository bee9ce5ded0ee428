import { randomUUID } from 'node:crypto';
import { createBankAccount, insertBankTransaction } from '@firm/banking';
import { contacts, rowsOf } from '@firm/db';
import { createApiKey } from '@firm/identity';
import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../testing';

let t: TestApp;
let bankAccountId: string;
const ctx = () => ({ firmId: t.demo.firmId, actor: { kind: 'test', id: 'tester' } });

beforeAll(async () => {
  t = await createTestApp({ config: { AGENT_WRITE_WINDOW_SECONDS: 3600 } });
  bankAccountId = (
    await t.database.db.transaction((tx) => createBankAccount(tx, ctx(), t.orgId, { accountId: t.account('1000') }))
  ).id;
  const limits = await t.app.inject({
    method: 'PATCH',
    url: '/agent/v1/limits',
    headers: t.auth,
    payload: { writeBudget: 1 },
  });
  expect(limits.statusCode).toBe(200);
});
afterAll(() => t.close());

/** A credential of its own, so each test starts with the whole budget. */
const agentKey = async () => (await createApiKey(t.database.db, { firmId: t.demo.firmId })).key;

let rpcId = 0;
interface ToolAnswer {
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
  content: { text: string }[];
}
async function tool(token: string, name: string, args: object): Promise<ToolAnswer> {
  const res = await t.app.inject({
    method: 'POST',
    url: '/mcp',
    headers: {
      authorization: `Bearer ${token}`,
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
    },
    payload: { jsonrpc: '2.0', id: ++rpcId, method: 'tools/call', params: { name, arguments: args } },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().result as ToolAnswer;
}
const errorOf = (answer: ToolAnswer) => {
  expect(answer.isError, answer.content[0]?.text).toBe(true);
  return JSON.parse(answer.content[0]?.text ?? '{}').error as { code: string; message: string };
};
const succeeded = (answer: ToolAnswer) => expect(answer.isError, answer.content[0]?.text).toBeFalsy();

const journalEntry = (amount: number) => ({
  txnDate: '2026-07-01',
  memo: 'budget',
  lines: [
    { accountId: t.account('6300'), postingType: 'debit', amount },
    { accountId: t.account('1000'), postingType: 'credit', amount },
  ],
});
const postEntry = (token: string, amount: number, extra: object = {}) =>
  tool(token, 'post_journal_entry', {
    clientId: t.orgId,
    idempotencyKey: randomUUID(),
    body: journalEntry(amount),
    ...extra,
  });
const entries = async (amountCents: number) =>
  rowsOf<{ n: number }>(
    await t.database.db.execute(sql`select count(distinct l.entry_id)::int as n from journal_lines l
      where l.organization_id = ${t.orgId} and l.amount_cents = ${amountCents}`),
  )[0]?.n;
const createCustomer = (token: string, name: string) =>
  tool(token, 'create_entity', {
    clientId: t.orgId,
    entity: 'Customer',
    idempotencyKey: randomUUID(),
    body: { DisplayName: name },
  });
const customerNamed = async (name: string) =>
  (await t.database.db.select({ id: contacts.id }).from(contacts).where(eq(contacts.name, name))).length;

/** The gateway's answer to a write over the budget. */
const overBudget = (answer: ToolAnswer) =>
  expect(errorOf(answer)).toMatchObject({
    code: 'RATE_LIMITED',
    message: expect.stringMatching(/^too many requests; retry in \d+ seconds$/),
  });

describe('the agent write budget on MCP tools', () => {
  it('refuses a second post_journal_entry over a budget of 1, posting nothing, and audits the refusal', async () => {
    const token = await agentKey();
    succeeded(await postEntry(token, 701));
    overBudget(await postEntry(token, 702));
    expect([await entries(701), await entries(702)]).toEqual([1, 0]);
    // The trail, read with the firm's own key (reads are not writes).
    const trail = await t.app.inject({
      method: 'GET',
      url: `/agent/v1/audit-events?clientId=${t.orgId}&limit=2`,
      headers: t.auth,
    });
    expect(
      trail.json().data.map((e: Record<string, unknown>) => [e.operation, e.outcome, e.statusCode, e.errorCode]),
    ).toEqual([
      ['mcp.post_journal_entry', 'refused', 429, 'RATE_LIMITED'],
      ['mcp.post_journal_entry', 'succeeded', 201, null],
    ]);
    expect(trail.json().data[1]).toMatchObject({ entityType: 'JournalEntry', entityId: expect.any(String) });
  });

  it('refuses a second bank action over the budget, changing nothing', async () => {
    const token = await agentKey();
    const row = () =>
      t.database.db.transaction((tx) =>
        insertBankTransaction(tx, ctx(), t.orgId, {
          bankAccountId,
          date: '2026-07-02',
          amountCents: -300,
          description: 'BANK FEE',
          counterparty: null,
          sourceType: 'aggregator_bank_feed',
          externalId: randomUUID(),
        }),
      );
    const [a, b] = [await row(), await row()];
    const exclude = (id: string) =>
      tool(token, 'bank_exclude', { clientId: t.orgId, id, idempotencyKey: randomUUID(), body: {} });
    succeeded(await exclude(a));
    overBudget(await exclude(b));
    overBudget(
      await tool(token, 'bank_reclassify', {
        clientId: t.orgId,
        id: b,
        idempotencyKey: randomUUID(),
        body: { accountId: t.account('6300'), reason: 'bank fees' },
      }),
    );
    const statuses = rowsOf<{ id: string; status: string }>(
      await t.database.db.execute(sql`select id, status from bank_transactions where id in (${a}, ${b})`),
    );
    expect(Object.fromEntries(statuses.map((s) => [s.id, s.status]))).toEqual({ [a]: 'excluded', [b]: 'unreviewed' });
  });

  it('shares one budget between the gateway tools and the partner-API tools, either way round', async () => {
    const first = await agentKey();
    succeeded(await createCustomer(first, 'Budget Shared One'));
    overBudget(await postEntry(first, 703));
    expect(await entries(703)).toBe(0);

    const second = await agentKey();
    succeeded(await postEntry(second, 704));
    overBudget(await createCustomer(second, 'Budget Shared Two'));
    expect([await entries(704), await customerNamed('Budget Shared Two')]).toEqual([1, 0]);
  });

  it('counts a dry run as the gateway does, and leaves reads to the read limit', async () => {
    const token = await agentKey();
    const dry = await postEntry(token, 705, { dryRun: true });
    expect(dry.structuredContent).toMatchObject({ dryRun: true });
    overBudget(await postEntry(token, 705));
    expect(await entries(705)).toBe(0);
    succeeded(await tool(token, 'list_bank_transactions', { clientId: t.orgId }));
    // On the gateway's own route, a dry run spends the budget the same way.
    const other = await agentKey();
    const dryCreate = await tool(other, 'create_entity', {
      clientId: t.orgId,
      entity: 'Customer',
      idempotencyKey: randomUUID(),
      dryRun: true,
      body: { DisplayName: 'Budget Dry' },
    });
    succeeded(dryCreate);
    overBudget(await postEntry(other, 706));
  });
});
