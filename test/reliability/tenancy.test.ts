/**
 * Tenancy sweep: two firms, the victim with one of every resource, the attacker with a firm-wide key of every
 * scope. Every operation of the OpenAPI document is called with the attacker's credentials and the victim's ids in
 * each position the operation has: path (each of the victim's resources in turn), the organization header, the
 * body's id fields, and the query's id filters. Every call with a victim id in the path or the organization header is
 * answered 404; no answer carries the victim's data (its marker or an id the request did not send); nothing answers
 * 5xx; and the victim's rows are the same before and after (a checksum over every table). The operations come from
 * the document, so a new route joins the sweep by being documented.
 */
import { randomUUID } from 'node:crypto';
import { rowsOf } from '@firm/db';
import { sql } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addUser, type CookieJar, FORM, form, hiddenFields, signIn } from '../../apps/api/src/routes/oauth/fixtures';
import { createOtherFirm, createTestApp, type TestApp } from '../../apps/api/src/testing';
import { multipart, receiptPdf } from '@firm/attachments/testing';
import { firmChecksum, idsByTable, type Json, type Operation, operationsOf } from './openapi';

const MARKER = 'VICTIMDATA';

let t: TestApp;
let attacker: Awaited<ReturnType<typeof createOtherFirm>>;
/** The attacker firm's owner signed in through the sign-in page, and the CSRF token of that session. */
let attackerSession: { jar: CookieJar; csrf: string };

/** A browser page (the approvers' pages, sign-in): reached with a session cookie and forms, never a bearer token. */
const isPage = (op: Operation) => !/^\/(api|agent|mcp)(\/|$)/.test(op.path);
/** An operation authorised by a signature in its own URL (an attachment's download link), not by a credential. */
const isSignedLink = (op: Operation) => op.params.some((p) => p.in === 'query' && p.name === 'signature' && p.required);
/** A well-formed link that no key signed, valid for an hour. */
const FORGED_LINK = `expires=${Math.floor(Date.now() / 1000) + 3600}&signature=${'A'.repeat(43)}`;
/** The victim's ids by table. */
let victimIds: Map<string, string[]>;
let allVictimIds: Set<string>;
let victimOrgs: string[];

const victimChecksum = () => firmChecksum(t.database.db, t.demo.firmId, victimOrgs);

/** The victim's own calls, through the API, so that it holds one of every resource. */
async function seedVictim(app: FastifyInstance) {
  const org = victimOrgs[0] as string;
  const headers = { ...t.orgHeaders, 'idempotency-key': '' };
  const call = async (method: 'POST' | 'PATCH', url: string, payload: Json, expected = [200, 201]) => {
    const res = await app.inject({ method, url, headers: { ...headers, 'idempotency-key': randomUUID() }, payload });
    if (!expected.includes(res.statusCode)) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
    return (res.json() as { data?: Json }).data ?? (res.json() as Json);
  };
  const a = t.account;
  const customer = await call('POST', '/api/v1/contacts', { kind: 'customer', name: `${MARKER} customer` });
  const vendor = await call('POST', '/api/v1/contacts', { kind: 'vendor', name: `${MARKER} vendor` });
  await call('POST', '/api/v1/items', { name: `${MARKER} item`, incomeAccountId: a('4000') }, [201, 400, 422]);
  await call('POST', '/api/v1/tax-rates', { name: `${MARKER} tax`, rateBps: 825, liabilityAccountId: a('2200') });
  const lines = [{ accountId: a('4000'), description: MARKER, quantity: 1, unitPriceCents: 10_000 }];
  const sale = { contactId: customer.id, date: '2026-04-01', memo: MARKER, lines };
  const invoice = await call('POST', '/api/v1/invoices', { ...sale, dueDate: '2026-04-30' });
  await call('POST', '/api/v1/invoices', { ...sale, dueDate: '2026-04-30' });
  await call('POST', '/api/v1/sales-receipts', { ...sale, bankAccountId: a('1000') });
  await call('POST', '/api/v1/refund-receipts', { ...sale, bankAccountId: a('1000') });
  await call('POST', '/api/v1/credit-memos', sale);
  await call('POST', '/api/v1/estimates', sale);
  const purchase = { contactId: vendor.id, date: '2026-04-02', memo: MARKER };
  const bill = await call('POST', '/api/v1/bills', {
    ...purchase,
    lines: [{ accountId: a('6300'), unitPriceCents: 5_000 }],
  });
  await call('POST', '/api/v1/vendor-credits', { ...purchase, lines: [{ accountId: a('6300'), unitPriceCents: 300 }] });
  await call('POST', '/api/v1/customer-payments', {
    contactId: customer.id,
    date: '2026-04-05',
    depositAccountId: a('1000'),
    allocations: [{ invoiceId: invoice.id, amountCents: 2_000 }],
  });
  await call('POST', '/api/v1/bill-payments', {
    txnDate: '2026-04-06',
    sourceAccountId: a('1000'),
    vendorId: vendor.id,
    allocations: [{ billId: bill.id, amountCents: 1_000 }],
  });
  await call('POST', '/api/v1/entries', {
    date: '2026-04-07',
    memo: `${MARKER} draft`,
    lines: [
      { accountId: a('6100'), debitCents: 100 },
      { accountId: a('1000'), creditCents: 100 },
    ],
  });
  await call('POST', `/api/v1/companies/${org}/purchases`, {
    date: '2026-04-08',
    sourceAccountId: a('1000'),
    categoryAccountId: a('6100'),
    amountCents: 1_234,
    description: MARKER,
  });
  await call('POST', '/api/v1/reconciliations', {
    bankAccountId: (
      rowsOf<{ id: string }>(
        await t.database.db.execute(sql`select id from bank_accounts where organization_id = ${org} limit 1`),
      )[0] as { id: string }
    ).id,
    statementEndDate: '2026-04-30',
    statementEndingBalanceCents: 0,
  });
  const receipt = multipart(
    { entityType: 'contact', entityId: vendor.id as string, note: MARKER },
    { filename: `${MARKER}.pdf`, data: await receiptPdf(MARKER) },
  );
  const uploaded = await app.inject({
    method: 'POST',
    url: '/api/v1/attachments',
    headers: { ...t.orgHeaders, ...receipt.headers },
    payload: receipt.payload,
  });
  if (uploaded.statusCode !== 201) throw new Error(`POST /api/v1/attachments: ${uploaded.statusCode} ${uploaded.body}`);
  await call(
    'POST',
    '/api/v1/webhooks',
    { url: 'https://93.184.215.14/victim', eventTypes: ['*'], description: MARKER },
    [201],
  );
  await call('PATCH', '/agent/v1/limits', { readLimit: 5_000 });
  // An agent audit event of the victim's, and a read that leaves one.
  await app.inject({ method: 'GET', url: '/agent/v1/acct/clients', headers: t.auth });
  await t.database.db.execute(sql`update organizations set name = ${`${MARKER} org`} || ' ' || id::text
    where firm_id = ${t.demo.firmId}`);
}

async function collectVictimIds(): Promise<Map<string, string[]>> {
  const ids = await idsByTable(t.database.db, t.demo.firmId, victimOrgs);
  ids.set('organizations', victimOrgs);
  ids.set('firms', [t.demo.firmId]);
  return ids;
}

/** The victim's id for a field, by its name, else one of its organizations. */
function victimIdFor(name: string): string {
  const pick = (table: string) => victimIds.get(table)?.[0];
  const n = name.toLowerCase();
  const byName: [RegExp, string][] = [
    [/attachment/, 'attachments'],
    [/account/, 'accounts'],
    [/contact|customer|vendor/, 'contacts'],
    [/invoice|bill|document|estimate|credit|payment/, 'documents'],
    [/item/, 'items'],
    [/tax/, 'tax_rates'],
    [/reconciliation/, 'reconciliations'],
    [/bank/, 'bank_accounts'],
    [/entry/, 'journal_entries'],
    [/organization|company|client/, 'organizations'],
  ];
  for (const [re, table] of byName) if (re.test(n) && pick(table)) return pick(table) as string;
  return victimOrgs[0] as string;
}

/** A plausible value for a schema, with the victim's ids in every uuid position. */
function valueOf(schema: Json, name: string, depth = 0): unknown {
  if (depth > 6) return null;
  for (const key of ['oneOf', 'anyOf'] as const) {
    const options = schema[key] as Json[] | undefined;
    if (options?.length)
      return valueOf(options.find((o) => o.type !== 'null') ?? (options[0] as Json), name, depth + 1);
  }
  if (Array.isArray(schema.allOf)) return valueOf(Object.assign({}, ...(schema.allOf as Json[])), name, depth + 1);
  if (schema.const !== undefined) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  const type = Array.isArray(schema.type) ? (schema.type as string[]).find((x) => x !== 'null') : schema.type;
  switch (type) {
    case 'object': {
      const props = (schema.properties as Record<string, Json> | undefined) ?? {};
      return Object.fromEntries(Object.entries(props).map(([k, v]) => [k, valueOf(v, k, depth + 1)]));
    }
    case 'array':
      return [valueOf((schema.items as Json | undefined) ?? {}, name, depth + 1)];
    case 'integer':
    case 'number':
      return typeof schema.minimum === 'number' ? Math.max(schema.minimum, 1) : 100;
    case 'boolean':
      return false;
    default:
      if (schema.format === 'uuid') return victimIdFor(name);
      if (schema.format === 'date') return '2026-04-15';
      if (schema.format === 'date-time') return '2026-04-15T00:00:00.000Z';
      if (schema.format === 'uri') return 'https://93.184.215.14/hook';
      if (schema.format === 'email') return 'sweep@example.com';
      return 'sweep';
  }
}

interface Call {
  op: Operation;
  position: 'path' | 'header' | 'body' | 'query';
  url: string;
  headers: Record<string, string>;
  payload?: unknown;
}

/** The calls of one operation: each victim resource in the path, the victim's organization in the header, ids in the body and the query. */
function callsOf(op: Operation, ownOrg: string): Call[] {
  const page = isPage(op);
  const base: Record<string, string> = page ? attackerSession.jar.header() : { authorization: attacker.authorization };
  const pathParams = op.params.filter((p) => p.in === 'path');
  const headerOrg = op.params.some((p) => p.in === 'header' && p.name.toLowerCase() === 'x-organization-id');
  const idempotent = op.params.some((p) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key');
  const headersOf = (org: string) => ({
    ...base,
    ...(headerOrg ? { 'x-organization-id': org } : {}),
    ...(idempotent ? { 'idempotency-key': randomUUID() } : {}),
  });
  // A page's form carries the session's CSRF token, so a refusal can only come from the id.
  const body = page
    ? op.method === 'POST'
      ? { csrf_token: attackerSession.csrf, note: 'sweep' }
      : undefined
    : op.body
      ? valueOf(op.body, 'body')
      : undefined;
  const fill = (values: (p: Operation['params'][number]) => string) =>
    op.path.replace(/\{([^}]+)\}/g, (_, name: string) => {
      const p = pathParams.find((x) => x.name === name);
      return encodeURIComponent(p ? values(p) : 'x');
    });
  const plain = (p: Operation['params'][number]) => {
    const schema = p.schema ?? {};
    if (Array.isArray(schema.enum)) return String(schema.enum[0]);
    return 'x';
  };
  const calls: Call[] = [];
  const uuidParams = pathParams.filter((p) => p.schema?.format === 'uuid' || /id$/i.test(p.name));
  if (uuidParams.length > 0) {
    const samples = [...victimIds.values()].map((ids) => ids[0] as string);
    for (const sample of samples) {
      for (const orgParam of ['own', 'victim'] as const) {
        const url = fill((p) => {
          if (!uuidParams.includes(p)) return plain(p);
          if (/^(companyId|clientId)$/.test(p.name)) return orgParam === 'own' ? ownOrg : (victimOrgs[0] as string);
          return sample;
        });
        // With only an organization in the path, the own organization is no victim id: skip that call.
        if (orgParam === 'own' && uuidParams.every((p) => /^(companyId|clientId)$/.test(p.name))) continue;
        calls.push({
          op,
          position: 'path',
          url: isSignedLink(op) ? `${url}?${FORGED_LINK}` : url,
          headers: headersOf(ownOrg),
          payload: body,
        });
      }
    }
    return calls;
  }
  if (headerOrg) {
    calls.push({
      op,
      position: 'header',
      url: fill(plain),
      headers: headersOf(victimOrgs[0] as string),
      payload: body,
    });
  }
  const query = op.params.filter((p) => p.in === 'query' && p.schema?.format === 'uuid');
  if (query.length > 0) {
    const qs = query.map((p) => `${p.name}=${victimIdFor(p.name)}`).join('&');
    calls.push({ op, position: 'query', url: `${fill(plain)}?${qs}`, headers: headersOf(ownOrg) });
  }
  if (body !== undefined && JSON.stringify(body).match(/[0-9a-f]{8}-[0-9a-f]{4}-/)) {
    calls.push({ op, position: 'body', url: fill(plain), headers: headersOf(ownOrg), payload: body });
  }
  return calls;
}

beforeAll(async () => {
  t = await createTestApp();
  victimOrgs = t.demo.organizations.map((o) => o.id);
  // The victim's bank registers and a feed row, then everything else through its own API calls.
  await t.app.inject({
    method: 'POST',
    url: '/api/v1/bank-accounts',
    headers: t.orgHeaders,
    payload: { accountId: t.account('1000'), institution: MARKER, mask: '0000' },
  });
  await seedVictim(t.app);
  attacker = await createOtherFirm(t.database.db, 'attacker');
  await addUser(t.database.db, attacker.firmId, 'owner', 'owner@attacker.test');
  const jar = await signIn(t.app, 'owner@attacker.test');
  const login = await t.app.inject({ method: 'GET', url: '/login', headers: jar.header() });
  attackerSession = { jar, csrf: hiddenFields(login.body).csrf_token as string };
  victimIds = await collectVictimIds();
  allVictimIds = new Set([...victimIds.values()].flat());
}, 180_000);
afterAll(() => t?.close());

describe('tenancy sweep over the OpenAPI document', () => {
  it('answers 404 to the victim’s ids in the path and header, leaks nothing, and changes none of its rows', async () => {
    const doc = t.app.swagger() as unknown as Json;
    const ops = operationsOf(doc);
    const before = await victimChecksum();
    const problems: string[] = [];
    const counts = { operations: ops.length, calls: 0, path: 0, header: 0, body: 0, query: 0 };
    for (const op of ops) {
      for (const call of callsOf(op, attacker.orgId)) {
        const res = await t.app.inject({
          method: call.op.method as 'GET',
          url: call.url,
          headers: {
            ...call.headers,
            ...(call.payload === undefined ? {} : isPage(call.op) ? FORM : { 'content-type': 'application/json' }),
          },
          ...(call.payload === undefined
            ? {}
            : {
                payload: isPage(call.op) ? form(call.payload as Record<string, string>) : JSON.stringify(call.payload),
              }),
        });
        counts.calls++;
        counts[call.position]++;
        const where = `${call.op.method} ${call.op.path} (${call.position})`;
        if (res.statusCode >= 500) problems.push(`${where}: ${res.statusCode} ${res.body.slice(0, 200)}`);
        // A link authorised by its own signature, forged for the victim's ids: 403, whatever the ids name.
        const refusal = isSignedLink(call.op) ? 403 : 404;
        if ((call.position === 'path' || call.position === 'header') && res.statusCode !== refusal) {
          problems.push(`${where}: ${res.statusCode}, not ${refusal}: ${res.body.slice(0, 200)}`);
        }
        if (call.position === 'body' && res.statusCode < 400) {
          problems.push(`${where}: ${res.statusCode} accepted another firm's ids: ${res.body.slice(0, 200)}`);
        }
        if (res.body.includes(MARKER)) problems.push(`${where}: the answer carries the victim's data`);
        const sent = `${call.url} ${JSON.stringify(call.headers)} ${JSON.stringify(call.payload ?? null)}`;
        for (const id of res.body.match(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g) ?? []) {
          if (allVictimIds.has(id) && !sent.includes(id)) problems.push(`${where}: the answer names victim id ${id}`);
        }
      }
    }
    const after = await victimChecksum();
    process.stdout.write(
      `tenancy sweep: ${counts.operations} operations, ${counts.calls} calls (path ${counts.path}, header ` +
        `${counts.header}, body ${counts.body}, query ${counts.query}); victim ids of ${victimIds.size} tables; ` +
        `${Object.keys(before).length} tables checksummed\n`,
    );
    expect([...new Set(problems.map((p) => p.replace(/"requestId":"[^"]+"/, '')))]).toEqual([]);
    expect(after).toEqual(before);
    expect(counts.path).toBeGreaterThan(1000);
  });
});
