/**
 * npm run bench (gateway part): the agent gateway's read of one invoice against the partner API's read of the same
 * record, a 1,000-row query page, and the client health scan over 50 clients, measured in one run on a fresh
 * database with the service built in process (requests through Fastify's inject: the whole request path, no sockets).
 * Needs DATABASE_URL (a Postgres server; a fresh database is created beside it and dropped after).
 */
import { performance } from 'node:perf_hooks';
import { acctClients, accounts, openDatabase, organizations, rowsOf } from '@firm/db';
import { adminQuery, withDatabase } from '@firm/db/testing';
import { seedDemo } from '@firm/demo';
import { STANDARD_CHART } from '@firm/ledger';
import { eq, sql } from 'drizzle-orm';
import { buildApp } from '../apps/api/src/app';
import { testConfig } from '../apps/api/src/config';

const CLIENTS = 50;
const ROWS = 1000;
const baseUrl = process.env.DATABASE_URL;
if (!baseUrl) {
  process.stderr.write('the gateway bench needs DATABASE_URL (a Postgres server)\n');
  process.exit(2);
}

const percentile = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] ?? 0;

async function timings(n: number, work: () => Promise<unknown>): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await work();
    times.push(performance.now() - t0);
  }
  return times;
}

async function main() {
  const name = `bench_gateway_${Date.now()}`;
  await adminQuery(baseUrl as string, `create database ${name}`);
  const database = openDatabase({ url: withDatabase(baseUrl as string, name), poolMax: 10 });
  const app = await buildApp({ config: testConfig(), database });
  try {
    await database.migrate();
    await app.ready();
    const db = database.db;
    const demo = await seedDemo(db);
    const orgId = (demo.organizations[0] as { id: string }).id;
    const auth = { authorization: `Bearer ${demo.apiKey}` };
    const ok = async (url: string, headers: Record<string, string> = auth) => {
      const res = await app.inject({ method: 'GET', url, headers });
      if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
      return res;
    };

    // One invoice, made through the partner API and read both ways.
    const partnerHeaders = { ...auth, 'x-organization-id': orgId };
    const create = async (url: string, payload: object) => {
      const res = await app.inject({ method: 'POST', url, headers: partnerHeaders, payload });
      if (res.statusCode !== 201) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
      return res.json().data.id as string;
    };
    const [sales] = rowsOf<{ id: string }>(
      await db.execute(sql`select id from accounts where organization_id = ${orgId} and code = '4000'`),
    );
    const customer = await create('/api/v1/contacts', { kind: 'customer', name: 'Bench Customer' });
    const invoice = await create('/api/v1/invoices', {
      contactId: customer,
      date: '2026-06-15',
      lines: [
        { accountId: sales?.id, description: 'Consulting', quantity: 3, unitPriceCents: 12_500 },
        { accountId: sales?.id, description: 'Travel', unitPriceCents: 4_200 },
      ],
    });
    const partnerUrl = `/api/v1/invoices/${invoice}`;
    const gatewayUrl = `/agent/v1/acct/clients/${orgId}/transactions/${invoice}?entityType=invoice`;
    for (let i = 0; i < 50; i++) {
      await ok(partnerUrl, partnerHeaders);
      await ok(gatewayUrl);
    }
    // Interleaved, so that both see the same machine.
    const partner: number[] = [];
    const gateway: number[] = [];
    for (let i = 0; i < 10; i++) {
      partner.push(...(await timings(30, () => ok(partnerUrl, partnerHeaders))));
      gateway.push(...(await timings(30, () => ok(gatewayUrl))));
    }

    // A query page of 1,000 customers.
    await db.execute(sql`
      insert into contacts (id, organization_id, kind, name)
      select gen_random_uuid(), ${orgId}, 'customer', 'Bench customer ' || g from generate_series(1, ${ROWS}) g`);
    await db.execute(sql`analyze`);
    const query = async (text = `SELECT * FROM Customer MAXRESULTS ${ROWS}`) => {
      const res = await app.inject({
        method: 'POST',
        url: `/agent/v1/acct/clients/${orgId}/query`,
        headers: auth,
        payload: { query: text },
      });
      if (res.statusCode !== 200) throw new Error(`query: ${res.statusCode} ${res.body}`);
      return res;
    };
    const page = (await query()).json().data.QueryResponse.Customer.length as number;
    const queryMs = await timings(20, () => query());

    // The health scan over 50 clients of the firm, each open to agents, each with the standard chart.
    for (let i = (demo.organizations as unknown[]).length; i < CLIENTS; i++) {
      const [org] = await db
        .insert(organizations)
        .values({ firmId: demo.firmId, name: `Bench client ${i}` })
        .returning();
      await db.insert(accounts).values(STANDARD_CHART.map((a) => ({ ...a, organizationId: org?.id as string })));
    }
    await db.update(acctClients).set({ agentAccess: 'read_write' }).where(eq(acctClients.firmId, demo.firmId));
    const clients = (await ok('/agent/v1/acct/clients')).json().data.length as number;
    const scanMs = await timings(10, () => ok('/agent/v1/skills/client-health-scan'));

    const p50 = (xs: number[]) => percentile(xs, 50);
    const lines = [
      `gateway read of one invoice: p50 ${p50(gateway).toFixed(2)} ms | partner API read of the same record: p50 ` +
        `${p50(partner).toFixed(2)} ms | overhead ${(p50(gateway) - p50(partner)).toFixed(2)} ms ` +
        `(under 5 ms wanted), ratio ${(p50(gateway) / p50(partner)).toFixed(2)}`,
      `gateway query page of ${page} customers: p50 ${p50(queryMs).toFixed(1)} ms`,
      `client health scan over ${clients} clients: p50 ${p50(scanMs).toFixed(1)} ms`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await app.close();
    await database.close();
    await adminQuery(baseUrl as string, `drop database if exists ${name} with (force)`);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
