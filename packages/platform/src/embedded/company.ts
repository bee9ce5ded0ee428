import { type Executor, organizations, recordVersions } from '@firm/db';
import { and, eq } from 'drizzle-orm';
import type { PlatformContext, PlatformRecord } from '../types';
import { envelope, recordNotFound } from './common';

const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

/** The organization as the platform's CompanyInfo; its Id is the company id (QBO's realm id). */
export async function companyInfo(db: Executor, ctx: PlatformContext): Promise<PlatformRecord> {
  const [row] = await db
    .select({ org: organizations, version: recordVersions })
    .from(organizations)
    .leftJoin(
      recordVersions,
      and(eq(recordVersions.organizationId, organizations.id), eq(recordVersions.recordId, organizations.id)),
    )
    .where(and(eq(organizations.id, ctx.organizationId), eq(organizations.firmId, ctx.firmId)));
  if (!row) throw recordNotFound('CompanyInfo');
  const { org, version } = row;
  return {
    ...envelope(ctx.acctCompanyId, org.createdAt, version ?? undefined),
    CompanyName: org.name,
    LegalName: org.legalName ?? org.name,
    FiscalYearStartMonth: MONTHS[org.fiscalYearStartMonth - 1],
    ...(org.booksClosedThrough ? { BooksClosedThrough: org.booksClosedThrough } : {}),
    CurrencyRef: { value: org.currency },
    SupportedLanguages: 'en',
  };
}
