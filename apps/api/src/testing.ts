import type { Aggregator } from '@firm/banking';
import { accounts, type Db, firms, organizations } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { type SeedResult, seedDemo } from '@firm/demo';
import { createApiKey } from '@firm/identity';
import { STANDARD_CHART } from '@firm/ledger';
import { dispatchOutbox } from '@firm/webhooks';
import { eq } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app';
import { type Config, testConfig } from './config';

export const DEMO_PASSWORD = 'correct horse battery staple';

export interface TestApp {
  app: FastifyInstance;
  database: TestDatabase;
  demo: SeedResult;
  /** Headers with the demo key. */
  auth: { authorization: string };
  /** Headers with the demo key and the first demo organization. */
  orgHeaders: { authorization: string; 'x-organization-id': string };
  orgId: string;
  /** The id of the first demo organization's account with this chart code ('1000' Business Checking...). */
  account(code: string): string;
  close(): Promise<void>;
}

/**
 * A built app on its own database, seeded with the demo firm, its books empty unless `history` asks for the demo's
 * year of history (ending the month before `history.now`, default now). `prepare` runs before `ready()`, for tests
 * that add a route of their own.
 */
export async function createTestApp(
  options: {
    config?: Partial<Config>;
    prepare?: (app: FastifyInstance) => void;
    aggregator?: Aggregator;
    history?: boolean | { now: Date };
  } = {},
): Promise<TestApp> {
  const database = await createTestDatabase();
  const app = await buildApp({
    config: testConfig(options.config),
    database,
    ...(options.aggregator ? { aggregator: options.aggregator } : {}),
  });
  options.prepare?.(app);
  await app.ready();
  const history = options.history;
  const demo = await seedDemo(database.db, {
    password: DEMO_PASSWORD,
    ...(history ? { history: true } : {}),
    ...(typeof history === 'object' ? { now: history.now } : {}),
  });
  // A served demo's events (its companies created) go out before anyone can subscribe to them, as the webhook
  // worker of a started server sends them: a test's subscriptions see only what the test does.
  while ((await dispatchOutbox(database.db, { now: new Date(), batchSize: 100 })) > 0);
  const orgId = demo.organizations[0]?.id as string;
  const authorization = `Bearer ${demo.apiKey}`;
  const chart = await database.db.select().from(accounts).where(eq(accounts.organizationId, orgId));
  const byCode = new Map(chart.map((a) => [a.code, a.id]));
  return {
    app,
    database,
    demo,
    orgId,
    auth: { authorization },
    orgHeaders: { authorization, 'x-organization-id': orgId },
    account(code) {
      const id = byCode.get(code);
      if (!id) throw new Error(`no account ${code} in the demo chart`);
      return id;
    },
    async close() {
      await app.close();
      await database.close();
    },
  };
}

/** Another firm with one organization (standard chart) and an all-scopes key: the "other tenant". */
export async function createOtherFirm(db: Db, slug = 'other') {
  const [firm] = await db
    .insert(firms)
    .values({ slug, name: `Firm ${slug}` })
    .returning();
  const firmId = firm?.id as string;
  const [org] = await db
    .insert(organizations)
    .values({ firmId, name: `${slug} client` })
    .returning();
  const orgId = org?.id as string;
  const chart = await db
    .insert(accounts)
    .values(STANDARD_CHART.map((a) => ({ ...a, organizationId: orgId })))
    .returning();
  const { key } = await createApiKey(db, { firmId });
  return { firmId, orgId, apiKey: key, accounts: chart, authorization: `Bearer ${key}` };
}
