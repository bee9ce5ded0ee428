import { isDomainError } from '@firm/core';
import type { Executor } from '@firm/db';
import type { PlatformAdapter, PlatformRecord } from '@firm/platform';
import { agingReport } from '@firm/documents';
import { accountNetsAsOf, booksClosedThrough, draftEntryCounts, isSuspenseAccountName } from '@firm/ledger';
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
    | 'BOOKS_NOT_CLOSED'
    | 'CLOSE_NOT_FINISHED'
    | 'CLIENT_UNREACHABLE';
  severity: Severity;
  title: string;
  evidence: Record<string, unknown>;
  /** The gateway call that starts the fix, relative to /agent/v1. */
  fix: { method: 'GET' | 'POST'; path: string; body?: Record<string, unknown>; description: string };
}

/** A client's close of a period, as the close package reports it: none, or its status and open item counts. */
export interface CloseStatusOfClient {
  closeId: string | null;
  status: 'open' | 'finished' | 'reopened' | null;
  openBlocking: number;
  openAdvisory: number;
}

/**
 * The closes of these clients for the period ending `periodEnd`, by client id. Given by the caller (the close package
 * owns the closes), so the scan reads no table of another package.
 */
export type ClosesOf = (clientIds: readonly string[], periodEnd: string) => Promise<Map<string, CloseStatusOfClient>>;

export interface HealthScan {
  scannedAt: string;
  asOf: string;
  clients: number;
  findings: Finding[];
}

const addDays = (date: string, days: number) =>
  new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);

const base = (id: string) => `/acct/clients/${id}`;

/**
 * The findings the platform's own API can show for a client on another platform (QuickBooks Online): suspense and
 * negative balances from its accounts, receivables over 90 days from its open invoices.
 */
async function platformFindings(client: Client, platform: PlatformAdapter, asOf: string): Promise<Finding[]> {
  const findings: Finding[] = [];
  const page = (entity: string, where: Parameters<PlatformAdapter['query']>[0]['where']) =>
    platform
      .query({ entity, select: '*', where, orderBy: [], startPosition: 1, maxResults: 1000 })
      .then((r) => (r.QueryResponse[entity] as PlatformRecord[] | undefined) ?? []);
  const of = { clientId: client.id, clientName: client.name };
  for (const a of await page('Account', [{ field: 'Active', op: '=', value: true }])) {
    const balance = Number(a.CurrentBalance ?? 0);
    const accountName = String(a.Name ?? '');
    const evidence = { accountId: a.Id, code: String(a.AcctNum ?? ''), name: accountName, balance };
    const ledger = { method: 'GET' as const, path: `${base(client.id)}/reports/general-ledger?accountId=${a.Id}` };
    if (isSuspenseAccountName(accountName) && balance !== 0) {
      findings.push({
        ...of,
        code: 'SUSPENSE_BALANCE',
        severity: 'medium',
        title: `${accountName} holds ${balance}: uncategorized activity to reclassify`,
        evidence,
        fix: { ...ledger, description: 'Read the lines, then post reclassifying journal entries.' },
      });
    }
    if (balance < 0 && (a.Classification === 'Asset' || a.Classification === 'Liability')) {
      findings.push({
        ...of,
        code: 'NEGATIVE_BALANCE',
        severity: a.AccountType === 'Bank' ? 'high' : 'medium',
        title: `${accountName} has a negative balance of ${balance}`,
        evidence,
        fix: { ...ledger, description: 'Find the misposted lines in the general ledger of the account.' },
      });
    }
  }
  const overdue = await page('Invoice', [
    { field: 'Balance', op: '>', value: '0' },
    { field: 'DueDate', op: '<', value: addDays(asOf, -90) },
  ]);
  if (overdue.length > 0) {
    const customers = new Map<string, { customerId: string; name: string; over90: number }>();
    for (const invoice of overdue) {
      const ref = (invoice.CustomerRef ?? {}) as { value?: string; name?: string };
      const c = customers.get(ref.value ?? '') ?? { customerId: ref.value ?? '', name: ref.name ?? '', over90: 0 };
      c.over90 = Math.round((c.over90 + Number(invoice.Balance ?? 0)) * 100) / 100;
      customers.set(c.customerId, c);
    }
    const over90 = Math.round(overdue.reduce((sum, i) => sum + Number(i.Balance ?? 0), 0) * 100) / 100;
    findings.push({
      ...of,
      code: 'AR_OVER_90_DAYS',
      severity: 'high',
      title: `${over90} of receivables are over 90 days past due`,
      evidence: { over90, customers: [...customers.values()] },
      fix: {
        method: 'POST',
        path: `${base(client.id)}/query`,
        body: { query: `SELECT * FROM Invoice WHERE Balance > '0' AND DueDate < '${addDays(asOf, -90)}'` },
        description: 'List the invoices and follow the collect-overdue-invoices recipe.',
      },
    });
  }
  return findings;
}

/**
 * Reads every client's books for what needs a person's (or an agent's) attention. Read-only: on the embedded
 * platform it runs the same reads the reports do, a handful of statements for all clients together plus one aging
 * report per client; a client on another platform is read through `platformOf` (its accounts and open invoices),
 * and one that cannot be read (its authorization refused, the platform down) is itself a finding.
 */
export async function healthScan(
  db: Executor,
  clients: readonly Client[],
  asOf: string,
  platformOf?: (client: Client) => PlatformAdapter,
  closesOf?: ClosesOf,
): Promise<HealthScan> {
  const findings: Finding[] = [];
  const ids = clients.filter((c) => c.platform === 'embedded').map((c) => c.id);
  const byId = new Map(clients.map((c) => [c.id, c]));
  const name = (id: string) => byId.get(id)?.name ?? '';
  const elsewhere = platformOf ? clients.filter((c) => c.platform !== 'embedded') : [];
  for (const client of elsewhere) {
    try {
      findings.push(...(await platformFindings(client, (platformOf as (c: Client) => PlatformAdapter)(client), asOf)));
    } catch (err) {
      const code = isDomainError(err) ? err.code : 'INTERNAL_ERROR';
      findings.push({
        clientId: client.id,
        clientName: client.name,
        code: 'CLIENT_UNREACHABLE',
        severity: 'high',
        title: `The books on ${client.platform} could not be read (${code})`,
        evidence: { platform: client.platform, status: client.status, error: code },
        fix: {
          method: 'GET',
          path: base(client.id),
          description:
            code === 'CLIENT_NEEDS_REAUTH'
              ? 'A firm owner or admin connects the client again (POST /api/v1/qbo/connection).'
              : 'Retry later; the client shows its status and last successful sync.',
        },
      });
    }
  }
  const scanned = ids.length + elsewhere.length;
  if (ids.length === 0) {
    return { scannedAt: new Date().toISOString(), asOf, clients: scanned, findings: sortFindings(findings) };
  }
  const balances = await accountNetsAsOf(db, ids, asOf);
  for (const a of balances) {
    const net = Number(a.net);
    const normal = a.type === 'asset' || a.type === 'expense' ? net : -net;
    const evidence = { accountId: a.id, code: a.code, name: a.name, balance: normal / 100 };
    const ledger = {
      method: 'GET' as const,
      path: `${base(a.organization_id)}/reports/general-ledger?accountId=${a.id}`,
    };
    if (isSuspenseAccountName(a.name) && net !== 0) {
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

  const drafts = await draftEntryCounts(db, ids);
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

  const closed = await booksClosedThrough(db, ids);
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

  if (closesOf) findings.push(...(await closeFindings(ids, name, asOf, closesOf)));

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

  return { scannedAt: new Date().toISOString(), asOf, clients: scanned, findings: sortFindings(findings) };
}

/** Each client whose close of last month (before asOf's month) is not finished: not opened, open, or reopened. */
async function closeFindings(
  ids: readonly string[],
  name: (id: string) => string,
  asOf: string,
  closesOf: ClosesOf,
): Promise<Finding[]> {
  const periodEnd = addDays(`${asOf.slice(0, 7)}-01`, -1);
  const closes = await closesOf(ids, periodEnd);
  const findings: Finding[] = [];
  for (const id of ids) {
    const close = closes.get(id);
    if (close?.status === 'finished') continue;
    const path = `${base(id)}/closes`;
    findings.push({
      clientId: id,
      clientName: name(id),
      code: 'CLOSE_NOT_FINISHED',
      severity: close?.openBlocking ? 'medium' : 'low',
      title: !close?.closeId
        ? `No close of the period ending ${periodEnd} is open`
        : `The close of the period ending ${periodEnd} is ${close.status}: ${close.openBlocking} blocking and ` +
          `${close.openAdvisory} advisory items open`,
      evidence: { periodEnd, ...(close ?? { closeId: null, status: null }) },
      fix: close?.closeId
        ? {
            method: 'GET',
            path: `${path}/${close.closeId}`,
            description:
              'Read the checklist, resolve what the books can fix and comment; a person signs off and finishes.',
          }
        : { method: 'POST', path, body: { periodEnd }, description: 'Open the close and read its checklist.' },
    });
  }
  return findings;
}

const RANK: Record<Severity, number> = { high: 0, medium: 1, low: 2, info: 3 };
const sortFindings = (findings: Finding[]) =>
  findings.sort((a, b) => RANK[a.severity] - RANK[b.severity] || a.clientName.localeCompare(b.clientName));
