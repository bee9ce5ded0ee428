import { type Executor, rowsOf } from '@firm/db';
import { agingReport } from '@firm/documents';
import { sql } from 'drizzle-orm';
import type { Client } from './clients';

export type Severity = 'high' | 'medium' | 'low' | 'info';

export interface Finding {
  clientId: string;
  clientName: string;
  code:
    | 'STALE_BANK_ACCOUNT'
    | 'SUSPENSE_BALANCE'
    | 'NEGATIVE_BALANCE'
    | 'AR_OVER_90_DAYS'
    | 'DRAFT_ENTRIES_OPEN'
    | 'BOOKS_NOT_CLOSED';
  severity: Severity;
  title: string;
  evidence: Record<string, unknown>;
  /** The gateway call that starts the fix, relative to /agent/v1. */
  fix: { method: 'GET' | 'POST'; path: string; body?: Record<string, unknown>; description: string };
}

export interface HealthScan {
  scannedAt: string;
  asOf: string;
  clients: number;
  findings: Finding[];
}

const SUSPENSE = ['%suspense%', '%uncategori%', '%ask my accountant%'];

const addDays = (date: string, days: number) =>
  new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);

/**
 * Reads every client's books for what needs a person's (or an agent's) attention. Read-only: it runs the same
 * reads the reports do, a handful of statements for all clients together plus one aging report per client.
 */
export async function healthScan(db: Executor, clients: readonly Client[], asOf: string): Promise<HealthScan> {
  const findings: Finding[] = [];
  const ids = clients.filter((c) => c.platform === 'embedded').map((c) => c.id);
  const byId = new Map(clients.map((c) => [c.id, c]));
  const name = (id: string) => byId.get(id)?.name ?? '';
  const base = (id: string) => `/acct/clients/${id}`;
  if (ids.length === 0) return { scannedAt: new Date().toISOString(), asOf, clients: 0, findings };
  const orgs = sql`(${sql.join(
    ids.map((id) => sql`${id}::uuid`),
    sql`, `,
  )})`;

  const balances = rowsOf<{
    organization_id: string;
    id: string;
    code: string;
    name: string;
    type: string;
    subtype: string;
    net: string;
    last_day: string | null;
  }>(
    await db.execute(sql`
      select a.organization_id, a.id, a.code, a.name, a.type::text as type, a.subtype::text as subtype,
             coalesce(sum(b.amount_cents), 0)::text as net, max(b.day)::text as last_day
      from accounts a
      left join account_daily_balances b
        on b.organization_id = a.organization_id and b.account_id = a.id and b.day <= ${asOf}::date
      where a.organization_id in ${orgs} and not a.archived
      group by a.organization_id, a.id, a.code, a.name, a.type, a.subtype`),
  );
  for (const a of balances) {
    const net = Number(a.net);
    const normal = a.type === 'asset' || a.type === 'expense' ? net : -net;
    const evidence = { accountId: a.id, code: a.code, name: a.name, balance: normal / 100 };
    const ledger = {
      method: 'GET' as const,
      path: `${base(a.organization_id)}/reports/general-ledger?accountId=${a.id}`,
    };
    if (SUSPENSE.some((p) => new RegExp(p.replaceAll('%', '.*'), 'i').test(a.name)) && net !== 0) {
      findings.push({
        clientId: a.organization_id,
        clientName: name(a.organization_id),
        code: 'SUSPENSE_BALANCE',
        severity: 'medium',
        title: `${a.name} holds ${normal / 100}: uncategorized activity to reclassify`,
        evidence,
        fix: {
          ...ledger,
          description:
            'Read the lines, then post reclassifying journal entries (recipe categorize-uncategorized-expenses).',
        },
      });
    }
    if (normal < 0 && (a.type === 'asset' || a.type === 'liability')) {
      findings.push({
        clientId: a.organization_id,
        clientName: name(a.organization_id),
        code: 'NEGATIVE_BALANCE',
        severity: a.subtype === 'bank' ? 'high' : 'medium',
        title: `${a.name} has a negative balance of ${normal / 100}`,
        evidence,
        fix: { ...ledger, description: 'Find the misposted lines in the general ledger of the account.' },
      });
    }
    if (a.subtype === 'bank' && (a.last_day === null || a.last_day < addDays(asOf, -30))) {
      findings.push({
        clientId: a.organization_id,
        clientName: name(a.organization_id),
        code: 'STALE_BANK_ACCOUNT',
        severity: 'low',
        title: `${a.name} has no activity in the last 30 days`,
        evidence: { ...evidence, lastActivity: a.last_day },
        fix: { ...ledger, description: 'Check that the bank feed or the statements are up to date.' },
      });
    }
  }

  const drafts = rowsOf<{ organization_id: string; n: number; oldest: string }>(
    await db.execute(sql`
      select organization_id, count(*)::int as n, min(entry_date)::text as oldest from journal_entries
      where organization_id in ${orgs} and status = 'draft' group by organization_id`),
  );
  for (const d of drafts) {
    findings.push({
      clientId: d.organization_id,
      clientName: name(d.organization_id),
      code: 'DRAFT_ENTRIES_OPEN',
      severity: 'medium',
      title: `${d.n} draft journal entr${d.n === 1 ? 'y' : 'ies'} left open, the oldest dated ${d.oldest}`,
      evidence: { drafts: d.n, oldest: d.oldest },
      fix: {
        method: 'GET',
        path: `${base(d.organization_id)}/transactions?entityType=journal-entry`,
        description: 'Post or delete each draft through the partner API (/api/v1/entries?status=draft).',
      },
    });
  }

  const closed = rowsOf<{ id: string; closed: string | null }>(
    await db.execute(sql`select id, books_closed_through::text as closed from organizations where id in ${orgs}`),
  );
  const shouldBeClosed = addDays(`${asOf.slice(0, 7)}-01`, -32).slice(0, 7);
  for (const o of closed) {
    if (o.closed && o.closed.slice(0, 7) >= shouldBeClosed) continue;
    findings.push({
      clientId: o.id,
      clientName: name(o.id),
      code: 'BOOKS_NOT_CLOSED',
      severity: 'info',
      title: o.closed ? `Books closed only through ${o.closed}` : 'The books have never been closed',
      evidence: { booksClosedThrough: o.closed, expectedThrough: `end of ${shouldBeClosed}` },
      fix: {
        method: 'GET',
        path: `/skills/month-end-close`,
        description: 'Follow the month-end close recipe; a firm owner or admin closes the period.',
      },
    });
  }

  for (const id of ids) {
    const aging = await agingReport(db, id, 'receivable', asOf);
    if (aging.totals.over90Cents <= 0) continue;
    findings.push({
      clientId: id,
      clientName: name(id),
      code: 'AR_OVER_90_DAYS',
      severity: 'high',
      title: `${aging.totals.over90Cents / 100} of receivables are over 90 days past due`,
      evidence: {
        over90: aging.totals.over90Cents / 100,
        customers: aging.contacts
          .filter((c) => c.over90Cents > 0)
          .map((c) => ({ customerId: c.contactId, name: c.contactName, over90: c.over90Cents / 100 })),
      },
      fix: {
        method: 'POST',
        path: `${base(id)}/query`,
        body: { query: `SELECT * FROM Invoice WHERE Balance > '0' AND DueDate < '${addDays(asOf, -90)}'` },
        description: 'List the invoices and follow the collect-overdue-invoices recipe.',
      },
    });
  }

  const rank: Record<Severity, number> = { high: 0, medium: 1, low: 2, info: 3 };
  findings.sort((a, b) => rank[a.severity] - rank[b.severity] || a.clientName.localeCompare(b.clientName));
  return { scannedAt: new Date().toISOString(), asOf, clients: ids.length, findings };
}
