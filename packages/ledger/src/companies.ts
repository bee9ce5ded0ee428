import { DomainError, type EventType } from '@firm/core';
import { accounts, type Executor, journalEntries, organizations, pgErrorOf, type Tx } from '@firm/db';
import { and, asc, eq, gt, inArray, isNotNull, isNull, ne, type SQL } from 'drizzle-orm';
import { STANDARD_CHART } from './chart-template';
import { type LedgerContext, nowOf } from './context';
import { recordEvent } from './events';
import { setFiscalYearStartMonth } from './periods';

/** A client company (an organization: the same record). */
export type Company = typeof organizations.$inferSelect;

export const COMPANY_STATUSES = ['active', 'archived'] as const;
export type CompanyStatus = (typeof COMPANY_STATUSES)[number];

/** The charts a new company can start with: the standard small-business chart, or none at all. */
export const CHART_TEMPLATES = { standard: STANDARD_CHART, empty: [] } as const;
export type ChartTemplate = keyof typeof CHART_TEMPLATES;
export const CHART_TEMPLATE_NAMES = Object.keys(CHART_TEMPLATES) as ChartTemplate[];

export const COMPANY_NAME_MAX = 200;
export const TAX_ID_MAX = 64;

export interface CompanyInput {
  name: string;
  legalName?: string | null | undefined;
  taxId?: string | null | undefined;
  /** ISO 4217; USD when not given. */
  currency?: string | undefined;
  /** 1-12; January when not given. */
  fiscalYearStartMonth?: number | undefined;
  /** `standard` when not given. */
  chartTemplate?: ChartTemplate | undefined;
}

export interface CompanyPatch {
  name?: string | undefined;
  legalName?: string | null | undefined;
  taxId?: string | null | undefined;
  currency?: string | undefined;
  fiscalYearStartMonth?: number | undefined;
}

export const companyStatusOf = (c: Pick<Company, 'archivedAt'>): CompanyStatus =>
  c.archivedAt ? 'archived' : 'active';

/** The company as the API returns it and as its events carry it. */
export const presentCompany = (c: Company) => ({
  id: c.id,
  name: c.name,
  legalName: c.legalName,
  taxId: c.taxId,
  currency: c.currency,
  fiscalYearStartMonth: c.fiscalYearStartMonth,
  booksClosedThrough: c.booksClosedThrough,
  status: companyStatusOf(c),
  archivedAt: c.archivedAt?.toISOString() ?? null,
  createdAt: c.createdAt.toISOString(),
});

/** What every write to an archived company is refused with, wherever it is refused. */
export const companyArchived = () =>
  new DomainError('COMPANY_ARCHIVED', 'the company is archived: its books can be read but not written; unarchive it');

/** The active ISO 4217 codes this runtime knows (its ICU data), for checking a company's currency. */
const CURRENCIES: ReadonlySet<string> = new Set(Intl.supportedValuesOf('currency'));

export const isCurrencyCode = (code: string): boolean => /^[A-Z]{3}$/.test(code) && CURRENCIES.has(code);

const invalid = (field: string, message: string, detail: string) =>
  new DomainError('VALIDATION_ERROR', message, [{ field, message: detail }]);

function checkName(value: string): string {
  const name = value.trim();
  if (!name) throw invalid('name', 'a company needs a name', 'must not be blank');
  if ([...name].length > COMPANY_NAME_MAX) {
    throw invalid('name', `a company name has at most ${COMPANY_NAME_MAX} characters`, 'too long');
  }
  return name;
}

/** Optional text: trimmed, blank is none. */
function optionalText(field: string, value: string | null | undefined, max: number): string | null {
  const text = value?.trim() ?? '';
  if ([...text].length > max) throw invalid(field, `${field} has at most ${max} characters`, 'too long');
  return text || null;
}

function checkCurrency(code: string): string {
  if (!isCurrencyCode(code)) {
    throw invalid('currency', `${code} is not an ISO 4217 currency code`, 'must be an ISO 4217 code such as USD');
  }
  return code;
}

function checkMonth(month: number): number {
  if (!Number.isInteger(month) || month < 1 || month > 12) {
    throw invalid('fiscalYearStartMonth', 'fiscalYearStartMonth must be 1-12', 'not a month number 1-12');
  }
  return month;
}

function rethrowNameTaken(err: unknown, name: string | undefined): never {
  const pgErr = pgErrorOf(err);
  if (pgErr?.code === '23505' && pgErr.constraint === 'organizations_firm_name_key') {
    throw new DomainError('COMPANY_NAME_TAKEN', `the firm already has a company named ${name}`, [
      { field: 'name', message: 'already used by a company of the firm' },
    ]);
  }
  throw err;
}

function companyEvent(tx: Tx, ctx: LedgerContext, action: EventType, company: Company, data: Record<string, unknown>) {
  return recordEvent(tx, ctx, {
    organizationId: company.id,
    action,
    resourceType: 'organization',
    resourceId: company.id,
    data,
    payload: presentCompany(company),
  });
}

/**
 * Creates a client company of the firm (`ctx.firmId`) with the chart of its template. The agent gateway gets the
 * company as a client closed to agents (agent access `none`, by the trigger of migrations/0006_gateway.sql) until a
 * firm owner or admin opens it.
 */
export async function createCompany(tx: Tx, ctx: LedgerContext, input: CompanyInput): Promise<Company> {
  const name = checkName(input.name);
  const values = {
    firmId: ctx.firmId,
    name,
    legalName: optionalText('legalName', input.legalName, COMPANY_NAME_MAX),
    taxId: optionalText('taxId', input.taxId, TAX_ID_MAX),
    currency: checkCurrency(input.currency ?? 'USD'),
    fiscalYearStartMonth: checkMonth(input.fiscalYearStartMonth ?? 1),
    createdAt: nowOf(ctx),
  };
  const template = input.chartTemplate ?? 'standard';
  if (!Object.hasOwn(CHART_TEMPLATES, template)) {
    throw invalid('chartTemplate', `chart template ${template}: one of ${CHART_TEMPLATE_NAMES.join(', ')}`, 'unknown');
  }
  let company: Company;
  try {
    const [row] = await tx.insert(organizations).values(values).returning();
    company = row as Company;
  } catch (err) {
    rethrowNameTaken(err, name);
  }
  const chart = CHART_TEMPLATES[template];
  if (chart.length > 0) {
    await tx.insert(accounts).values(chart.map((a) => ({ ...a, organizationId: company.id })));
  }
  await companyEvent(tx, ctx, 'company.created', company, {
    name: company.name,
    currency: company.currency,
    fiscalYearStartMonth: company.fiscalYearStartMonth,
    chartTemplate: template,
    accounts: chart.length,
  });
  return company;
}

/** The company, locked for a change; ORGANIZATION_NOT_FOUND when it is not one of the firm's. */
async function lockCompany(tx: Tx, ctx: LedgerContext, id: string): Promise<Company> {
  const [row] = await tx
    .select()
    .from(organizations)
    .where(and(eq(organizations.id, id), eq(organizations.firmId, ctx.firmId)))
    .for('update');
  if (!row) throw new DomainError('ORGANIZATION_NOT_FOUND', 'organization not found');
  return row;
}

async function hasPostedEntries(db: Executor, organizationId: string): Promise<boolean> {
  const rows = await db
    .select({ id: journalEntries.id })
    .from(journalEntries)
    .where(and(eq(journalEntries.organizationId, organizationId), ne(journalEntries.status, 'draft')))
    .limit(1);
  return rows.length > 0;
}

/**
 * Changes a company's name, legal name, tax id, currency or fiscal-year start month. An archived company is refused
 * (COMPANY_ARCHIVED), and so is a new currency once the company has posted (or voided) an entry (CURRENCY_LOCKED):
 * its amounts are in the currency they were posted in. A new fiscal-year start month goes through the books' own
 * rule (`setFiscalYearStartMonth`, event `books.fiscal_year_changed`). Nothing changed, nothing written.
 *
 * The row lock waits for postings in flight (they hold the row FOR SHARE), so the check for posted entries sees them.
 */
export async function updateCompany(tx: Tx, ctx: LedgerContext, id: string, patch: CompanyPatch): Promise<Company> {
  const current = await lockCompany(tx, ctx, id);
  if (current.archivedAt) throw companyArchived();
  const next = {
    name: patch.name === undefined ? current.name : checkName(patch.name),
    legalName:
      patch.legalName === undefined ? current.legalName : optionalText('legalName', patch.legalName, COMPANY_NAME_MAX),
    taxId: patch.taxId === undefined ? current.taxId : optionalText('taxId', patch.taxId, TAX_ID_MAX),
    currency: patch.currency === undefined ? current.currency : checkCurrency(patch.currency),
    fiscalYearStartMonth:
      patch.fiscalYearStartMonth === undefined ? current.fiscalYearStartMonth : checkMonth(patch.fiscalYearStartMonth),
  };
  const changes = Object.fromEntries(
    (Object.keys(next) as (keyof typeof next)[])
      .filter((field) => next[field] !== current[field])
      .map((field) => [field, { previous: current[field], value: next[field] }]),
  );
  if (Object.keys(changes).length === 0) return current;
  if (changes.currency && (await hasPostedEntries(tx, id))) {
    throw new DomainError(
      'CURRENCY_LOCKED',
      `the company has posted entries in ${current.currency}; its currency cannot change`,
      [{ field: 'currency', message: 'locked by posted entries' }],
    );
  }
  if (changes.fiscalYearStartMonth) await setFiscalYearStartMonth(tx, ctx, id, next.fiscalYearStartMonth);
  let company: Company;
  try {
    const [row] = await tx
      .update(organizations)
      .set({ name: next.name, legalName: next.legalName, taxId: next.taxId, currency: next.currency })
      .where(and(eq(organizations.id, id), eq(organizations.firmId, ctx.firmId)))
      .returning();
    company = row as Company;
  } catch (err) {
    rethrowNameTaken(err, next.name);
  }
  await companyEvent(tx, ctx, 'company.updated', company, { changes });
  return company;
}

/**
 * Archives (`archived` true) or unarchives a company. Archiving keeps everything: the books, reports, history and
 * settings stay readable, and writes are refused (COMPANY_ARCHIVED) until it is unarchived. Asking for the state the
 * company is in changes nothing and records nothing.
 */
export async function setCompanyArchived(
  tx: Tx,
  ctx: LedgerContext,
  id: string,
  archived: boolean,
): Promise<{ company: Company; changed: boolean }> {
  const current = await lockCompany(tx, ctx, id);
  if (Boolean(current.archivedAt) === archived) return { company: current, changed: false };
  const [row] = await tx
    .update(organizations)
    .set({ archivedAt: archived ? nowOf(ctx) : null })
    .where(and(eq(organizations.id, id), eq(organizations.firmId, ctx.firmId)))
    .returning();
  const company = row as Company;
  await companyEvent(tx, ctx, archived ? 'company.archived' : 'company.unarchived', company, {
    archivedAt: company.archivedAt?.toISOString() ?? null,
  });
  return { company, changed: true };
}

/** Refuses a write to an archived company (COMPANY_ARCHIVED), for writers that do not come through the API. */
export async function assertCompanyWritable(db: Executor, organizationId: string): Promise<void> {
  const [row] = await db
    .select({ archivedAt: organizations.archivedAt })
    .from(organizations)
    .where(eq(organizations.id, organizationId));
  if (row?.archivedAt) throw companyArchived();
}

/** The condition of a list's status: the active companies, the archived ones, or all. */
const withStatus = (status: CompanyStatus | 'all'): SQL | undefined =>
  status === 'all'
    ? undefined
    : status === 'archived'
      ? isNotNull(organizations.archivedAt)
      : isNull(organizations.archivedAt);

/** A firm's companies by name, for operators (the CLI): the active ones, the archived ones, or all. */
export async function listCompanies(
  db: Executor,
  firmId: string,
  status: CompanyStatus | 'all' = 'active',
): Promise<Company[]> {
  return db
    .select()
    .from(organizations)
    .where(and(eq(organizations.firmId, firmId), withStatus(status)))
    .orderBy(asc(organizations.name), asc(organizations.id));
}

/**
 * The questions other packages ask of companies (organizations): identity's tenancy, the gateway, the embedded
 * platform, reports and webhooks read the ledger's table through these.
 */

/** The company by id alone, for callers that know it is theirs (a route's checked organization, a report). */
export async function companyById(db: Executor, organizationId: string): Promise<Company | undefined> {
  const [row] = await db.select().from(organizations).where(eq(organizations.id, organizationId));
  return row;
}

/** The company when it is one of the firm's; undefined otherwise, as for a missing one. */
export async function companyOfFirm(
  db: Executor,
  firmId: string,
  organizationId: string,
): Promise<Company | undefined> {
  const [row] = await db
    .select()
    .from(organizations)
    .where(and(eq(organizations.id, organizationId), eq(organizations.firmId, firmId)))
    .limit(1);
  return row;
}

/** Those of `ids` (well-formed) that are companies of the firm, archived or not. */
export async function firmCompanyIds(db: Executor, firmId: string, ids: readonly string[]): Promise<string[]> {
  const rows = await db
    .select({ id: organizations.id })
    .from(organizations)
    .where(and(eq(organizations.firmId, firmId), inArray(organizations.id, [...ids])));
  return rows.map((o) => o.id);
}

/**
 * A page of the firm's companies in id order (the ids above `afterId`), among `ids` unless it is null, in `status`:
 * the lists of the companies a credential may see.
 */
export async function companiesOfFirm(
  db: Executor,
  firmId: string,
  filter: { ids: readonly string[] | null; status: CompanyStatus | 'all'; afterId?: string | undefined; limit: number },
): Promise<Company[]> {
  return db
    .select()
    .from(organizations)
    .where(
      and(
        eq(organizations.firmId, firmId),
        filter.ids === null ? undefined : inArray(organizations.id, [...filter.ids]),
        withStatus(filter.status),
        filter.afterId === undefined ? undefined : gt(organizations.id, filter.afterId),
      ),
    )
    .orderBy(asc(organizations.id))
    .limit(filter.limit);
}

/** The ids of the firm's active companies, among `ids` unless it is null, at most `limit` of them. */
export async function activeCompanyIds(
  db: Executor,
  firmId: string,
  ids: readonly string[] | null,
  limit: number,
): Promise<string[]> {
  const rows = await db
    .select({ id: organizations.id })
    .from(organizations)
    .where(
      and(
        eq(organizations.firmId, firmId),
        isNull(organizations.archivedAt),
        ids === null ? undefined : inArray(organizations.id, [...ids]),
      ),
    )
    .limit(limit);
  return rows.map((o) => o.id);
}

/** The firm's active companies by name, with their ids: what a person picks a company from. */
export async function activeCompanyNames(db: Executor, firmId: string): Promise<{ id: string; name: string }[]> {
  return db
    .select({ id: organizations.id, name: organizations.name })
    .from(organizations)
    .where(and(eq(organizations.firmId, firmId), isNull(organizations.archivedAt)))
    .orderBy(asc(organizations.name));
}

/** The firm's companies in id order, with their names: what the demo seed reports it made. */
export async function firmCompanyNames(db: Executor, firmId: string): Promise<{ id: string; name: string }[]> {
  return db
    .select({ id: organizations.id, name: organizations.name })
    .from(organizations)
    .where(eq(organizations.firmId, firmId))
    .orderBy(asc(organizations.id));
}
