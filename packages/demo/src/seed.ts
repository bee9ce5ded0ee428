import { Readable } from 'node:stream';
import {
  createAttachment,
  type EntityRef,
  linkAttachment,
  PostgresBlobStore,
  receiptPdf,
  receiveFile,
} from '@firm/attachments';
import { connectBankFeed, largeRowsInPeriod, syncFeed, type TokenKeys } from '@firm/banking';
import { InProcessSandboxAggregator } from '@firm/banking/sandbox/in-process';
import type { Db } from '@firm/db';
import { setFirmAgentAccess } from '@firm/gateway';
import {
  createApiKey,
  createFirmIfNew,
  createFirmOwner,
  firmIdOfSlug,
  firmUserByEmail,
  generatePassword,
} from '@firm/identity';
import { accountCodes, createCompany, createScheduledEntry, firmCompanyNames } from '@firm/ledger';
import { DEMO_PROFILES, type HistorySummary, seedHistory } from './history';

export const DEMO_FIRM_SLUG = 'demo';
export const DEMO_OWNER_EMAIL = 'owner@demo-firm.test';
const DEMO_ORGANIZATIONS = ['Northwind Bakery LLC', 'Bluebird Design Studio'];

export interface SeedResult {
  /** False when the demo firm already existed and only a new API key was made. */
  created: boolean;
  firmId: string;
  apiKey: string;
  apiKeyId: string;
  organizations: { id: string; name: string }[];
  /** The password is only known on the run that created the user. */
  user: { email: string; password: string | null };
  /** Each company's year of history, by organization id; empty unless this run created the firm with history. */
  history: Record<string, HistorySummary>;
}

export interface SeedOptions {
  password?: string;
  bankTokenKeys?: TokenKeys;
  /** The clock the demo is seeded against: history ends with the month before this one. Default: now. */
  now?: Date;
  /**
   * Twelve months of books for each company, ending last month (see history.ts). Default false, so that tests
   * start from empty books; `npm start` and `cli seed` ask for it.
   */
  history?: boolean;
}

/**
 * Seeds a demo firm: an owner, two client organizations with a standard chart, open to agents (read and write
 * through the agent gateway), and an API key; with `history`, a year of books for each company, written in the same
 * transaction as the firm, so a demo firm has either all of its history or none.
 * Idempotent: on a seeded database it only issues a fresh API key (keys are shown once).
 */
export async function seedDemo(db: Db, options: SeedOptions = {}): Promise<SeedResult> {
  const now = options.now ?? new Date();
  const seeded = await db.transaction(async (tx) => {
    const inserted = await createFirmIfNew(tx, { slug: DEMO_FIRM_SLUG, name: 'Demo Accounting Firm' });
    let password: string | null = null;
    let firmId: string;
    let ownerId: string | null = null;
    const history: Record<string, HistorySummary> = {};
    if (inserted) {
      firmId = inserted.id;
      password = options.password ?? generatePassword();
      ownerId = await createFirmOwner(tx, { firmId, email: DEMO_OWNER_EMAIL, name: 'Demo Owner', password });
      const ctx = { firmId, actor: { kind: 'system', id: 'demo-seed' } };
      for (const name of DEMO_ORGANIZATIONS) {
        const company = await createCompany(tx, ctx, { name, chartTemplate: 'standard' });
        const profile = DEMO_PROFILES[name];
        // The first company's register gets last month's rows from the sandbox feed seeded below, not twice.
        const lastMonthFromFeed = name === DEMO_ORGANIZATIONS[0] && Boolean(options.bankTokenKeys);
        if (options.history && profile) {
          history[company.id] = await seedHistory(tx, firmId, company.id, profile, now, { lastMonthFromFeed });
        }
      }
      // The demo firm opens its clients to agents, so the agent gateway has books to show on a fresh clone.
      await setFirmAgentAccess(tx, firmId, 'read_write');
    } else {
      firmId = (await firmIdOfSlug(tx, DEMO_FIRM_SLUG)) as string;
      ownerId = (await firmUserByEmail(tx, firmId, DEMO_OWNER_EMAIL))?.id ?? null;
    }
    const orgs = await firmCompanyNames(tx, firmId);
    const { key, record } = await createApiKey(tx, {
      firmId,
      name: 'Demo key',
      ...(ownerId ? { createdByUserId: ownerId } : {}),
    });
    return {
      created: Boolean(inserted),
      firmId,
      apiKey: key,
      apiKeyId: record.id,
      organizations: orgs,
      user: { email: DEMO_OWNER_EMAIL, password },
      history,
    };
  });
  const first = seeded.organizations.find((o) => o.name === DEMO_ORGANIZATIONS[0]);
  if (seeded.created && first) await seedScheduledEntry(db, seeded.firmId, first.id, now);
  if (seeded.created && first && options.history) await seedAttachments(db, seeded.firmId, first.id);
  if (seeded.created && first && options.bankTokenKeys)
    await seedBankFeed(db, seeded.firmId, first.id, options.bankTokenKeys, now);
  return seeded;
}

/** The first demo company's monthly rent, accrued to accounts payable on the 1st from next month on. */
async function seedScheduledEntry(db: Db, firmId: string, organizationId: string, today: Date): Promise<void> {
  const chart = await accountCodes(db, organizationId);
  const id = (code: string) => chart.find((a) => a.code === code)?.id as string;
  const nextMonth = new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth() + 1, 1)).toISOString().slice(0, 10);
  await createScheduledEntry(db, { firmId, actor: { kind: 'system', id: 'demo-seed' } }, organizationId, {
    name: 'Office rent',
    memo: 'Monthly office rent',
    lines: [
      { accountId: id('6400'), debitCents: 250_000, description: 'Office rent' },
      { accountId: id('2000'), creditCents: 250_000, description: 'Due to the landlord' },
    ],
    schedule: { frequency: 'monthly', dayOfMonth: 1, weekendRule: 'none', startDate: nextMonth },
  });
}

/**
 * The first demo company's checking and card accounts connected to a sandbox feed, with last month's activity
 * synced through the feed sync itself and waiting for review. The activity is the sandbox aggregator's, read in
 * process, so the seed needs no server running.
 */
async function seedBankFeed(db: Db, firmId: string, organizationId: string, keys: TokenKeys, now: Date): Promise<void> {
  const ctx = { firmId, actor: { kind: 'system', id: 'demo-seed' } };
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1)).toISOString().slice(0, 10);
  const aggregator = new InProcessSandboxAggregator(start);
  const chart = await accountCodes(db, organizationId);
  const code = (c: string) => chart.find((a) => a.code === c)?.id as string;
  const feed = await connectBankFeed(db, ctx, aggregator, keys, organizationId, {
    publicToken: 'public-sandbox-demo',
    institutionName: 'First Platypus Bank (sandbox)',
    accounts: [
      { mask: '0000', accountId: code('1000') },
      { mask: '3333', accountId: code('2100') },
    ],
  });
  await syncFeed(db, ctx, aggregator, keys, organizationId, feed.id);
}

/**
 * A few source documents in the first company: a receipt on each of its three latest large card or bank rows, and a
 * statement on all three (none with empty books: the files wait unattached). Small PDFs, in the Postgres store.
 */
async function seedAttachments(db: Db, firmId: string, organizationId: string): Promise<void> {
  const ctx = { firmId, actor: { kind: 'system', id: 'demo-seed' } };
  const store = new PostgresBlobStore(db);
  const stores = { current: store, byKind: { postgres: store } };
  const rows = (await largeRowsInPeriod(db, organizationId, '2000-01-01', '2999-12-31', 20_000)).slice(-3);
  const attach = async (fileName: string, text: string, links: EntityRef[]) => {
    const file = await receiveFile(db, stores, organizationId, Readable.from([await receiptPdf(text)]), {
      maxBytes: 1 << 20,
    });
    return db.transaction((tx) => createAttachment(tx, ctx, file, { fileName, links: links.slice(0, 1) }));
  };
  for (const row of rows) {
    const amount = (Math.abs(row.amountCents) / 100).toFixed(2);
    await attach(`receipt-${row.date}.pdf`, `Receipt\n${row.date}\nTotal $${amount}`, [
      { entityType: 'bank_transaction', entityId: row.id },
    ]);
  }
  const refs = rows.map((r): EntityRef => ({ entityType: 'bank_transaction', entityId: r.id }));
  const statement = await attach('bank-statement.pdf', 'Bank statement\nFirst Platypus Bank', refs);
  for (const ref of refs.slice(1)) {
    await db.transaction((tx) => linkAttachment(tx, ctx, organizationId, statement.id, ref));
  }
}
