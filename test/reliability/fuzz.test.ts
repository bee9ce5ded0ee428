/**
 * Hostile input from the schemas: for every operation of the OpenAPI document, fast-check arbitraries derived from
 * its parameter and body schemas generate requests that follow the schemas (with the firm's own ids where an id is
 * asked for) and requests that break them (a field replaced by any JSON value, a required field dropped, an unknown
 * field, a body or parameter of any shape). Each is sent to the app on a real database. Nothing may answer 5xx,
 * every status must be one the operation documents, every JSON answer must validate against the schema documented
 * for its status, and a batch of refused requests must leave the firm's rows as they were.
 *
 * Bounded and reproducible: a fixed number of requests per operation from a fixed seed (FUZZ_RUNS, FUZZ_SEED).
 */
import { randomUUID } from 'node:crypto';
import { PlaidAggregator } from '@firm/banking';
import { type SandboxAggregatorServer, startSandboxAggregator } from '@firm/banking/sandbox/server';
import { FakeQbo } from '@firm/qbo/testing/fake-qbo';
import { rowsOf } from '@firm/db';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { sql } from 'drizzle-orm';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../apps/api/src/testing';
import { firmChecksum, idsByTable, type Json, type Operation, operationsOf } from './openapi';

const RUNS = Number(process.env.FUZZ_RUNS ?? 40);
const SEED = Number(process.env.FUZZ_SEED ?? 20261124);

/** Tables that record refused requests on purpose (the audit trail, sign-in attempts), and the rate limiter's. */
const RECORDS_REFUSALS = ['agent_audit_events', 'audit_events', 'idempotency_keys'];

let t: TestApp;
/** The bank-data aggregator, a local sandbox: the outside world answers, so a 5xx is the service's own. */
let sandbox: SandboxAggregatorServer;
/** QuickBooks Online, a local QBO-compatible server, for the same reason. */
let qbo: FakeQbo;
let ownIds: Map<string, string[]>;
/** Ids the fuzz must not pass to a destructive route: the key it signs in with. */
let protectedIds: Set<string>;

type Arb = fc.Arbitrary<unknown>;

/** The firm's own ids for a field, by the field's name (or the path segment before it). */
function idsFor(name: string): string[] {
  const n = name.toLowerCase();
  const byName: [RegExp, string][] = [
    [/webhook|subscription/, 'webhook_subscriptions'],
    [/key/, 'api_keys'],
    [/connection|grant/, 'oauth_grants'],
    [/bank-?feed|feed/, 'bank_feed_connections'],
    [/bank-?transaction|transaction/, 'bank_transactions'],
    [/reconciliation/, 'reconciliations'],
    [/bank/, 'bank_accounts'],
    [/account/, 'accounts'],
    [/contact|customer|vendor/, 'contacts'],
    [/invoice|bill|document|estimate|credit|payment|receipt|memo/, 'documents'],
    [/item/, 'items'],
    [/tax/, 'tax_rates'],
    [/entr|journal/, 'journal_entries'],
    [/organization|company|client/, 'organizations'],
  ];
  for (const [re, table] of byName) {
    const ids = (ownIds.get(table) ?? []).filter((id) => !protectedIds.has(id));
    if (re.test(n) && ids.length > 0) return ids;
  }
  return ownIds.get('organizations') ?? [];
}

const isoDate = fc
  .date({ min: new Date('1990-01-01T00:00:00Z'), max: new Date('2040-12-31T00:00:00Z'), noInvalidDate: true })
  .map((d) => d.toISOString().slice(0, 10));

/** An arbitrary of values that follow the schema. */
function validOf(schema: Json, name: string, depth = 0): Arb {
  if (depth > 8) return fc.constant(null);
  for (const key of ['oneOf', 'anyOf'] as const) {
    const options = schema[key] as Json[] | undefined;
    if (options?.length) {
      const { [key]: _, ...rest } = schema;
      return fc.oneof(...options.map((o) => validOf({ ...rest, ...o }, name, depth + 1)));
    }
  }
  if (Array.isArray(schema.allOf)) {
    const { allOf, ...rest } = schema;
    const merged = (allOf as Json[]).reduce<Json>(
      (acc, s) => ({
        ...acc,
        ...s,
        properties: { ...(acc.properties as Json), ...(s.properties as Json) },
        required: [...((acc.required as string[]) ?? []), ...((s.required as string[]) ?? [])],
      }),
      rest,
    );
    return validOf(merged, name, depth + 1);
  }
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  if (Array.isArray(schema.type)) {
    return fc.oneof(...(schema.type as string[]).map((type) => validOf({ ...schema, type }, name, depth + 1)));
  }
  switch (schema.type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
    case 'number': {
      const min =
        typeof schema.exclusiveMinimum === 'number'
          ? schema.exclusiveMinimum + 1
          : typeof schema.minimum === 'number'
            ? schema.minimum
            : -1_000_000;
      const max =
        typeof schema.exclusiveMaximum === 'number'
          ? schema.exclusiveMaximum - 1
          : typeof schema.maximum === 'number'
            ? schema.maximum
            : 1_000_000;
      return fc.integer({ min: Math.max(min, -2_000_000_000), max: Math.min(max, 2_000_000_000) });
    }
    case 'array': {
      const min = typeof schema.minItems === 'number' ? schema.minItems : 0;
      const max = Math.max(min, Math.min(typeof schema.maxItems === 'number' ? schema.maxItems : 3, 3));
      return fc.array(validOf((schema.items as Json | undefined) ?? {}, name, depth + 1), {
        minLength: min,
        maxLength: max,
      });
    }
    case 'object': {
      const props = (schema.properties as Record<string, Json> | undefined) ?? {};
      const required = ((schema.required as string[] | undefined) ?? []).filter((k) => k in props);
      if (Object.keys(props).length === 0) return fc.constant({});
      return fc.record(Object.fromEntries(Object.entries(props).map(([k, v]) => [k, validOf(v, k, depth + 1)])), {
        requiredKeys: required,
      });
    }
    case 'string':
      return stringOf(schema, name);
    default:
      return schema.properties ? validOf({ ...schema, type: 'object' }, name, depth) : fc.jsonValue({ maxDepth: 2 });
  }
}

function stringOf(schema: Json, name: string): Arb {
  switch (schema.format) {
    case 'uuid':
      return fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...idsFor(name)) }, { weight: 1, arbitrary: fc.uuid() });
    case 'date':
      return isoDate;
    case 'date-time':
      return isoDate.map((d) => `${d}T12:00:00.000Z`);
    case 'uri':
    case 'url':
      return fc.constantFrom('https://127.0.0.1/hook', 'https://93.184.215.14/hook', 'http://example.com/cb');
    case 'email':
      return fc.constantFrom('fuzz@example.com', 'owner@demo.example');
  }
  const minLength = typeof schema.minLength === 'number' ? schema.minLength : 0;
  const maxLength = Math.max(minLength, Math.min(typeof schema.maxLength === 'number' ? schema.maxLength : 40, 80));
  const fits = (s: string) => s.length >= minLength && s.length <= maxLength;
  if (typeof schema.pattern === 'string') {
    return fc.stringMatching(new RegExp(schema.pattern)).filter(fits);
  }
  return fc.string({ minLength, maxLength, unit: 'grapheme' });
}

/** An arbitrary of values that break the schema, more or less subtly, derived from a valid one. */
function invalidOf(schema: Json, name: string): Arb {
  const valid = validOf(schema, name);
  const anyJson = fc.jsonValue({ maxDepth: 3 });
  const fieldMutation = valid.chain((value): Arb => {
    if (!value || typeof value !== 'object' || Array.isArray(value) || Object.keys(value).length === 0) {
      return anyJson;
    }
    const keys = Object.keys(value);
    return fc.oneof(
      // A field replaced by any JSON value.
      fc.tuple(fc.constantFrom(...keys), anyJson).map(([k, v]) => ({ ...value, [k]: v })),
      // A field dropped.
      fc.constantFrom(...keys).map((k) => {
        const { [k]: _, ...rest } = value as Json;
        return rest;
      }),
      // An unknown field.
      fc.tuple(fc.string({ minLength: 1, maxLength: 12 }), anyJson).map(([k, v]) => ({ ...value, [`x${k}`]: v })),
    );
  });
  return fc.oneof({ weight: 3, arbitrary: fieldMutation }, { weight: 1, arbitrary: anyJson });
}

interface Request {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string;
  valid: boolean;
  signedIn: boolean;
}

/** Requests for one operation: half follow its schemas, half break them, and two come without credentials. */
function requestsOf(op: Operation, runs: number, seed: number): Request[] {
  const pathParams = op.params.filter((p) => p.in === 'path');
  const queryParams = op.params.filter((p) => p.in === 'query');
  const headerParams = op.params.filter((p) => p.in === 'header');
  const segmentBefore = (name: string) => {
    const parts = op.path.split('/');
    const at = parts.indexOf(`{${name}}`);
    return at > 0 ? (parts[at - 1] as string) : name;
  };
  // An empty, `.` or `..` path segment addresses another route (the collection, a parent), so never those.
  const paramArb = (p: Operation['params'][number], valid: boolean): Arb =>
    p.in === 'path' ? anyParamArb(p, valid).filter((v) => !['', '.', '..'].includes(String(v))) : anyParamArb(p, valid);
  const anyParamArb = (p: Operation['params'][number], valid: boolean) =>
    valid
      ? validOf(p.schema ?? { type: 'string' }, p.in === 'path' ? `${segmentBefore(p.name)} ${p.name}` : p.name)
      : fc.oneof(
          validOf(p.schema ?? { type: 'string' }, p.name),
          fc.string({ maxLength: 30, unit: 'binary' }),
          fc.constantFrom('-1', '0', '1e309', 'null', '2026-02-30', '0000-01-01T00:00:00Z', '%00', '../..'),
        );
  const requestArb = (valid: boolean) =>
    fc.record({
      path: fc.tuple(...pathParams.map((p) => paramArb(p, valid))),
      query: fc.tuple(
        ...queryParams.map((p) =>
          p.required ? paramArb(p, valid).map((v) => [v]) : fc.option(paramArb(p, valid), { nil: undefined }),
        ),
      ),
      body: op.body ? (valid ? validOf(op.body, 'body') : invalidOf(op.body, 'body')) : fc.constant(undefined),
    });
  const toRequest =
    (valid: boolean, signedIn = true) =>
    (r: { path: unknown[]; query: unknown[]; body: unknown }): Request => {
      let i = 0;
      const url = op.path.replace(/\{[^}]+\}/g, () => encodeURIComponent(String(r.path[i++])));
      const qs = queryParams
        .map((p, j) => {
          const raw = r.query[j];
          const v = Array.isArray(raw) ? raw[0] : raw;
          return v === undefined ? null : `${encodeURIComponent(p.name)}=${encodeURIComponent(String(v))}`;
        })
        .filter((x): x is string => x !== null)
        .join('&');
      const headers: Record<string, string> = signedIn ? { ...t.auth } : {};
      for (const h of headerParams) {
        const name = h.name.toLowerCase();
        if (name === 'x-organization-id') headers[name] = t.orgId;
        if (name === 'idempotency-key') headers[name] = randomUUID();
      }
      if (r.body !== undefined) headers['content-type'] = 'application/json';
      return {
        method: op.method,
        url: qs ? `${url}?${qs}` : url,
        headers,
        ...(r.body !== undefined ? { payload: JSON.stringify(r.body) } : {}),
        valid,
        signedIn,
      };
    };
  const half = Math.ceil(runs / 2);
  return [
    ...fc.sample(requestArb(true).map(toRequest(true)), { numRuns: half, seed }),
    ...fc.sample(requestArb(false).map(toRequest(false)), { numRuns: runs - half, seed: seed + 1 }),
    // And without credentials: public routes answer, the others 401, as documented.
    ...fc.sample(requestArb(true).map(toRequest(true, false)), { numRuns: 2, seed: seed + 2 }),
  ];
}

async function collectOwnIds(): Promise<Map<string, string[]>> {
  const ids = await idsByTable(t.database.db, t.demo.firmId, [t.orgId], 20);
  ids.set('organizations', [t.orgId]);
  return ids;
}

const checksum = () =>
  firmChecksum(
    t.database.db,
    t.demo.firmId,
    t.demo.organizations.map((o) => o.id),
    RECORDS_REFUSALS,
  );

beforeAll(async () => {
  const client = { clientId: 'fuzz-client', secret: 'fuzz-secret' };
  sandbox = await startSandboxAggregator({ ...client, start: '2026-10-01' });
  qbo = new FakeQbo();
  await qbo.start();
  t = await createTestApp({
    aggregator: new PlaidAggregator({ ...client, basePath: sandbox.url }),
    config: qbo.env(),
  });
  ownIds = await collectOwnIds();
  const keys = rowsOf<{ id: string }>(await t.database.db.execute(sql`select id::text as id from api_keys`));
  protectedIds = new Set([...keys.map((k) => k.id), ...t.demo.organizations.map((o) => o.id)]);
  protectedIds.delete(t.orgId);
}, 180_000);
afterAll(async () => {
  await t?.close();
  await sandbox?.close();
  await qbo?.stop();
});

describe('hostile input from the OpenAPI document', () => {
  it('answers every generated request with a documented status and schema, never 5xx, and a refusal writes nothing', async () => {
    const doc = t.app.swagger() as unknown as Json;
    const ops = operationsOf(doc);
    const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
    addFormats(ajv);
    const validators = new Map<string, ReturnType<typeof ajv.compile>>();
    const problems: string[] = [];
    const counts = {
      operations: 0,
      requests: 0,
      valid: 0,
      invalid: 0,
      anonymous: 0,
      accepted: 0,
      refused: 0,
      checksums: 0,
    };
    for (const [index, op] of ops.entries()) {
      // Signing out would end the fuzz's own session; revoking every key is covered with a spare key.
      const requests = requestsOf(op, RUNS, SEED + index);
      counts.operations++;
      let before = await checksum();
      let allRefused = true;
      for (const req of requests) {
        const res = await t.app.inject({
          method: req.method as 'GET',
          url: req.url,
          headers: req.headers,
          ...(req.payload !== undefined ? { payload: req.payload } : {}),
        });
        counts.requests++;
        counts[req.signedIn ? (req.valid ? 'valid' : 'invalid') : 'anonymous']++;
        const where = `${req.method} ${req.url} ${req.payload?.slice(0, 160) ?? ''}`;
        const status = String(res.statusCode);
        if (res.statusCode >= 500)
          problems.push(`${op.method} ${op.path}: ${status} ${where} -> ${res.body.slice(0, 200)}`);
        const documented =
          status in op.responses ? status : `${status[0]}XX` in op.responses ? `${status[0]}XX` : 'default';
        if (!(documented in op.responses)) {
          problems.push(`${op.method} ${op.path}: undocumented ${status} (${where}) -> ${res.body.slice(0, 160)}`);
        }
        const schema = op.responses[documented];
        if (schema && String(res.headers['content-type'] ?? '').includes('application/json')) {
          const key = `${op.method} ${op.path} ${documented}`;
          let validate = validators.get(key);
          if (!validate) {
            validate = ajv.compile(schema);
            validators.set(key, validate);
          }
          if (!validate(res.json())) {
            problems.push(
              `${op.method} ${op.path}: ${status} answer does not match its schema: ${ajv.errorsText(validate.errors)} (${where})`,
            );
          }
        }
        if (res.statusCode < 400) {
          counts.accepted++;
          allRefused = false;
        } else counts.refused++;
      }
      if (allRefused) {
        const after = await checksum();
        counts.checksums++;
        for (const [table, sum] of Object.entries(after)) {
          if (before[table] !== sum) problems.push(`${op.method} ${op.path}: refused requests changed ${table}`);
        }
      }
      before = {};
    }
    process.stdout.write(
      `fuzz: ${counts.operations} operations, ${counts.requests} requests (${counts.valid} following the schemas, ` +
        `${counts.invalid} breaking them, ${counts.anonymous} without credentials); ${counts.accepted} accepted, ${counts.refused} refused; ` +
        `${counts.checksums} all-refused batches checksummed (seed ${SEED}, ${RUNS} per operation)\n`,
    );
    expect([...new Set(problems.map((p) => p.replace(/"requestId":"[^"]+"/, '')))]).toEqual([]);
    expect(counts.requests).toBeGreaterThan(1000);
  });
});
