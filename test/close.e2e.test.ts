import { createHash, randomUUID } from 'node:crypto';
import { type CookieJar, connect, registerClient, signIn } from '@firm/api/routes/oauth/fixtures';
import { pdfText } from '@firm/api/routes/reports/fixtures';
import { createTestApp, type TestApp } from '@firm/api/testing';
import { CLOSE_EVIDENCE_HASHERS, manifestSha256 } from '@firm/close';
import { agentAuditEvents, closeEvidence } from '@firm/db';
import { verifyAuditChains } from '@firm/gateway';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The month-end close from end to end, on the demo books a year deep: last month's close of the first demo company
 * finds the problems seeded into it, some are fixed through the API and go away, the rest are signed off, the owner
 * finishes, and the period is locked with its evidence proven by the audit trail. An agent through MCP reads and
 * comments but may not sign off or finish.
 */
const NOW = new Date('2026-11-27T10:00:00Z');
const PERIOD_END = '2026-10-31';

interface Item {
  key: string;
  kind: string;
  severity: 'blocking' | 'advisory';
  message: string;
  evidence: { type: string; id: string }[];
  signoff: { note: string; by: { kind: string; id: string }; at: string } | null;
}

let t: TestApp;
let ownerJar: CookieJar;
let owner: Record<string, string>;
let closeId: string;

const base = () => `/api/v1/companies/${t.orgId}/closes`;
const call = async (
  method: 'GET' | 'POST',
  url: string,
  headers: Record<string, string>,
  payload?: object,
  status = 200,
) => {
  const res = await t.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
  expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(status);
  return res;
};
/** The organization's API-key headers with a fresh Idempotency-Key, as a write through the partner API sends. */
const keyed = () => ({ ...t.orgHeaders, 'idempotency-key': randomUUID() });
const items = async (): Promise<Item[]> => (await call('GET', `${base()}/${closeId}`, t.auth)).json().data.items;
const ofKind = (list: Item[], kind: string) => list.filter((i) => i.kind === kind);

beforeAll(async () => {
  t = await createTestApp({ history: { now: NOW } });
  ownerJar = await signIn(t.app, 'owner@demo-firm.test');
  const csrf = (await call('GET', '/api/session', ownerJar.header())).json().csrfToken;
  owner = { ...ownerJar.header(), 'x-csrf-token': csrf };
}, 120_000);
afterAll(() => t?.close());

describe("last month's close of the first demo company", () => {
  it('finds the problems seeded into the month, each naming its records', async () => {
    closeId = (await call('POST', base(), owner, { periodEnd: PERIOD_END }, 201)).json().data.id;
    const list = await items();
    expect(new Set(list.map((i) => i.kind))).toEqual(
      new Set([
        'bank_account_unreconciled',
        'bank_rows_unreviewed',
        'possible_duplicate',
        'expense_spike',
        'receivables_overdue',
      ]),
    );

    const bank = (await call('GET', '/api/v1/bank-accounts', t.orgHeaders)).json().data[0];
    expect(ofKind(list, 'bank_account_unreconciled')).toEqual([
      expect.objectContaining({
        severity: 'blocking',
        message: `Business Checking is reconciled through 2026-09-30, not through ${PERIOD_END}`,
        evidence: [{ type: 'BankAccount', id: bank.id }],
      }),
    ]);

    const unreviewed = (await call('GET', '/api/v1/bank-transactions?status=unreviewed&limit=1000', t.orgHeaders))
      .json()
      .data.filter((r: { date: string }) => r.date <= PERIOD_END);
    const [rowsItem] = ofKind(list, 'bank_rows_unreviewed');
    // The rows, and the bank account they wait in.
    expect(rowsItem?.evidence.map((e) => e.id).sort()).toEqual(
      [bank.id, ...unreviewed.map((r: { id: string }) => r.id)].sort(),
    );

    const bills = (await call('GET', '/api/v1/bills?limit=1000', t.orgHeaders)).json().data as {
      id: string;
      date: string;
      totalCents: number;
    }[];
    const twins = bills
      .filter((b) => b.totalCents === 14_900 && b.date >= '2026-10-01')
      .sort((a, b) => (a.date < b.date ? -1 : 1));
    expect(twins.map((b) => b.date)).toEqual(['2026-10-16', '2026-10-18']);
    const [duplicate] = ofKind(list, 'possible_duplicate');
    expect(duplicate?.message).toBe('Register Cloud: two bills of 149.00 dated 2026-10-16 and 2026-10-18');
    expect(duplicate?.evidence.map((e) => e.id).sort()).toEqual(twins.map((b) => b.id).sort());

    const spikes = ofKind(list, 'expense_spike');
    expect(spikes.map((i) => i.message)).toContainEqual(
      expect.stringMatching(/^6700 Utilities: 2,[0-9]{3}\.[0-9]{2} in/),
    );
    expect(spikes.find((i) => i.message.startsWith('6700'))?.evidence).toContainEqual({
      type: 'Account',
      id: t.account('6700'),
    });

    // The slow payer's invoices, each due more than 90 days before the period end.
    const overdue = ofKind(list, 'receivables_overdue');
    expect(overdue.length).toBeGreaterThan(0);
    for (const item of overdue) {
      const [ref] = item.evidence;
      const invoice = (await call('GET', `/api/v1/invoices/${ref?.id}`, t.orgHeaders)).json().data;
      expect(item.message).toMatch(new RegExp(`^Invoice ${invoice.number} has .* days past due on ${PERIOD_END}$`));
      expect(invoice.dueDate < '2026-08-02').toBe(true);
    }
  });

  it('drops what the books no longer show once fixed: the duplicate voided, the rows reviewed, the register reconciled', async () => {
    const [duplicate] = ofKind(await items(), 'possible_duplicate');
    const bills = await Promise.all(
      (duplicate?.evidence ?? []).map(
        async (e) => (await call('GET', `/api/v1/bills/${e.id}`, t.orgHeaders)).json().data,
      ),
    );
    const second = bills.find((b: { date: string }) => b.date === '2026-10-18');
    await call('POST', `/api/v1/bills/${second.id}/void`, keyed(), { reason: 'Entered twice' });
    expect(ofKind(await items(), 'possible_duplicate')).toEqual([]);

    await reviewOctober();
    await reconcileOctober();
    const after = await items();
    expect(ofKind(after, 'bank_rows_unreviewed')).toEqual([]);
    expect(ofKind(after, 'bank_account_unreconciled')).toEqual([]);
    // The rent, paid through a row that waited for review, is in the month now: only the seeded spike is left.
    expect(ofKind(after, 'expense_spike').map((i) => i.message)).toEqual([expect.stringMatching(/^6700 Utilities: /)]);
  });

  it('signs off everything left, by the owner with a note, shown with who and when', async () => {
    const left = await items();
    expect(left.length).toBeGreaterThan(0);
    const before = Date.now();
    for (const item of left) {
      const note = `Checked: ${item.kind} stays as it is`;
      const url = `${base()}/${closeId}/items/${encodeURIComponent(item.key)}/sign-off`;
      expect((await call('POST', url, owner, { note })).json().data.signoff.note).toBe(note);
    }
    // Who: the owner's session, which also opened the close.
    const { openedBy, items: signed } = (await call('GET', `${base()}/${closeId}`, t.auth)).json().data;
    expect(openedBy.kind).toBe('session');
    for (const item of signed as Item[]) {
      expect(item.signoff).toMatchObject({ note: `Checked: ${item.kind} stays as it is`, by: openedBy });
      expect(Date.parse(item.signoff?.at as string)).toBeGreaterThanOrEqual(before - 1000);
    }
    const close = (await call('GET', `${base()}/${closeId}`, t.auth)).json().data;
    expect(close.open).toMatchObject({ blocking: 0, advisory: 0 });
  });

  it('finishes by the owner; the books are closed through the period end and posting into it is refused', async () => {
    const done = (await call('POST', `${base()}/${closeId}/finish`, owner)).json().data;
    expect(done).toMatchObject({ status: 'finished', finishedBy: { kind: 'session' } });
    expect(done.evidenceSha256).toMatch(/^[0-9a-f]{64}$/);
    const books = (await call('GET', `/api/v1/companies/${t.orgId}/books`, t.auth)).json().data;
    expect(books.booksClosedThrough).toBe(PERIOD_END);

    const posting = await call(
      'POST',
      '/api/v1/journal-entries',
      keyed(),
      {
        txnDate: '2026-10-20',
        lines: [
          { accountId: t.account('6700'), postingType: 'debit', amount: 100 },
          { accountId: t.account('1000'), postingType: 'credit', amount: 100 },
        ],
      },
      422,
    );
    expect(posting.json().error.code).toBe('PERIOD_CLOSED');
  });

  it('keeps the evidence: the packet PDF downloads, its hash is in the audit trail, verified until altered', async () => {
    const listed = (await call('GET', `${base()}/${closeId}/evidence`, t.auth)).json().data as {
      name: string;
      sha256: string;
    }[];
    expect(listed.map((f) => f.name)).toEqual(['financial-packet.pdf', 'checklist.json', 'reconciliation-status.json']);
    const pdf = await call('GET', `${base()}/${closeId}/evidence/financial-packet.pdf`, t.auth);
    expect(pdf.headers['content-type']).toBe('application/pdf');
    expect(pdf.headers['content-disposition']).toBe('attachment; filename="financial-packet.pdf"');
    expect(pdf.rawPayload.subarray(0, 5).toString()).toBe('%PDF-');
    expect((await pdfText(pdf.rawPayload)).join(' ')).toContain('Northwind Bakery LLC');
    const pdfSha256 = createHash('sha256').update(pdf.rawPayload).digest('hex');
    expect(listed[0]?.sha256).toBe(pdfSha256);

    // The trail records the manifest's hash, one line per file with its own hash: the PDF's among them.
    const [event] = await t.database.db
      .select()
      .from(agentAuditEvents)
      .where(and(eq(agentAuditEvents.entityId, closeId), eq(agentAuditEvents.operation, 'closes.finish')));
    const close = (await call('GET', `${base()}/${closeId}`, t.auth)).json().data;
    expect(event?.evidenceSha256).toBe(close.evidenceSha256);
    expect(manifestSha256(listed)).toBe(event?.evidenceSha256);

    const verify = () =>
      verifyAuditChains(t.database.db, t.app.auditTrail, { firmId: t.demo.firmId, evidence: CLOSE_EVIDENCE_HASHERS });
    expect(await verify()).toMatchObject({ ok: true });
    const packet = and(eq(closeEvidence.closeId, closeId), eq(closeEvidence.name, 'financial-packet.pdf'));
    const altered = Buffer.concat([pdf.rawPayload, Buffer.from('\n% appended later\n')]);
    await t.database.db.update(closeEvidence).set({ content: altered }).where(packet);
    const broken = await verify();
    expect(broken.ok).toBe(false);
    expect(broken.breaks).toEqual([
      expect.objectContaining({ kind: 'evidence_altered', problem: expect.stringContaining(`Close ${closeId}`) }),
    ]);
  });
});

describe('an agent through MCP', () => {
  let mcpToken: string;
  /** The same agent's token for the partner API. */
  let apiToken: Record<string, string>;
  let rpcId = 0;
  const tool = async (name: string, args: object) => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: {
        authorization: `Bearer ${mcpToken}`,
        accept: 'application/json, text/event-stream',
        'content-type': 'application/json',
      },
      payload: { jsonrpc: '2.0', id: ++rpcId, method: 'tools/call', params: { name, arguments: args } },
    });
    expect(res.statusCode, res.body).toBe(200);
    const result = res.json().result as { isError?: boolean; structuredContent?: { data: Record<string, unknown> } };
    expect(result.isError, JSON.stringify(result)).toBeFalsy();
    return result.structuredContent?.data;
  };

  beforeAll(async () => {
    const metadata = (await call('GET', '/.well-known/oauth-protected-resource/mcp', {})).json();
    const registered = await registerClient(t.database.db, { isPublic: true, name: 'Close Agent' });
    const scope = 'acct:clients:read acct:closes:read acct:closes:write entries:read entries:write books:close';
    mcpToken = (await connect(t.app, ownerJar, registered, { scope, resource: metadata.resource })).access_token;
    apiToken = { authorization: `Bearer ${(await connect(t.app, ownerJar, registered, { scope })).access_token}` };
  });

  it('reads the checklist and comments, but is refused sign-off and finish', async () => {
    const november = (await call('POST', base(), owner, { periodEnd: '2026-11-30' }, 201)).json().data.id;
    const checklist = await tool('close_checklist', { clientId: t.orgId, closeId: november });
    const list = checklist?.items as Item[];
    expect(list.length).toBeGreaterThan(0);
    const [first] = list;
    await tool('close_comment', {
      clientId: t.orgId,
      closeId: november,
      body: { body: 'The November statement is not in yet', itemKey: first?.key },
    });
    expect((await call('GET', `${base()}/${november}`, t.auth)).json().data.comments).toEqual([
      expect.objectContaining({
        body: 'The November statement is not in yet',
        itemKey: first?.key,
        author: { kind: 'oauth_token', id: expect.any(String) },
      }),
    ]);

    const url = `${base()}/${november}/items/${encodeURIComponent(first?.key as string)}/sign-off`;
    const signOff = await call('POST', url, apiToken, { note: 'fine' }, 403);
    expect(signOff.json().error.code).toBe('FORBIDDEN');
    const finish = await call('POST', `${base()}/${november}/finish`, apiToken, undefined, 403);
    expect(finish.json().error.code).toBe('FORBIDDEN');
    const close = (await call('GET', `${base()}/${november}`, t.auth)).json().data;
    expect(close.status).toBe('open');
    expect(close.items.every((i: Item) => i.signoff === null)).toBe(true);
  });
});

/** The account each kind of October bank row is categorized to, as the demo's earlier months were. */
const CATEGORY: Record<string, string> = {
  Rent: '6400',
  'Register Cloud subscription': '6500',
  'Monthly service fee': '6100',
  Payroll: '2300',
  'Sales tax 2026-Q3': '2200',
};

interface BankRow {
  id: string;
  date: string;
  amountCents: number;
  description: string;
  lines: { accountId: string | null; amountCents: number; description: string | null }[];
}

const bankRows = async (query: string): Promise<BankRow[]> =>
  (await call('GET', `/api/v1/bank-transactions?${query}&limit=1000`, t.orgHeaders)).json().data;

/**
 * Reviews every October row through the banking routes: payments matched to their invoice or bill, the loan payment
 * split as September's was, the rest categorized.
 */
async function reviewOctober() {
  const rows = (await bankRows('status=unreviewed')).filter((r) => r.date <= PERIOD_END);
  const september = (await bankRows('reconciled=true')).find(
    (r) => r.description === 'Loan payment' && r.date === '2026-09-15',
  );
  for (const row of rows) {
    const url = `/api/v1/bank-transactions/${row.id}`;
    const number = /^(?:Payment|Bill) (\S+)$/.exec(row.description)?.[1];
    if (number) {
      const candidates = (await call('GET', `${url}/match-candidates`, t.orgHeaders)).json().data;
      const doc = candidates.find((c: { number: string | null; exact: boolean }) => c.number === number && c.exact);
      await call('POST', `${url}/match`, keyed(), { documents: [{ documentId: doc.documentId }] });
    } else if (row.description === 'Loan payment') {
      const interest = september?.lines.find((l) => l.accountId === t.account('7000'))?.amountCents as number;
      await call('POST', `${url}/split`, keyed(), {
        parts: [
          { accountId: t.account('2700'), amountCents: -row.amountCents - interest, description: 'Principal' },
          { accountId: t.account('7000'), amountCents: interest, description: 'Interest' },
        ],
      });
    } else {
      const code = CATEGORY[row.description] as string;
      await call('POST', `${url}/reclassify`, keyed(), { accountId: t.account(code), reason: 'October review' });
    }
  }
}

/** Reconciles the register through the month end: the statement shows September's balance plus October's rows. */
async function reconcileOctober() {
  const [status] = (
    await call('GET', `/api/v1/reports/bank-reconciliation-status?endDate=${PERIOD_END}`, t.orgHeaders)
  ).json().rows;
  const rows = (await bankRows('reconciled=false')).filter((r) => r.date <= PERIOD_END);
  const session = await call(
    'POST',
    '/api/v1/reconciliations',
    keyed(),
    {
      bankAccountId: status.bankAccountId,
      statementEndDate: PERIOD_END,
      statementEndingBalanceCents: status.lastReconciledBalanceCents + rows.reduce((s, r) => s + r.amountCents, 0),
    },
    201,
  );
  const reconciliationId = session.json().data.id;
  for (const row of rows) {
    await call('POST', `/api/v1/bank-transactions/${row.id}/reconcile`, keyed(), { reconciliationId });
  }
  await call('POST', `/api/v1/reconciliations/${reconciliationId}/finish`, keyed(), {});
}
