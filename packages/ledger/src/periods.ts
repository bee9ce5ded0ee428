import { DomainError } from '@firm/core';
import { type Executor, organizations, type Tx } from '@firm/db';
import { and, eq } from 'drizzle-orm';
import type { LedgerContext } from './context';
import { checkDate } from './dates';
import { recordEvent } from './events';

export interface BooksClosed {
  booksClosedThrough: string | null;
  previous: string | null;
}

/**
 * Closes the books through `date` (nothing dated on or before it can then be posted or voided), or
 * reopens them with null or an earlier date. The organization row is locked for the update, which waits
 * for postings in flight (they hold it FOR SHARE) and makes later postings see the new date.
 */
export async function setBooksClosedThrough(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  date: string | null,
): Promise<BooksClosed> {
  if (date !== null) checkDate(date, 'booksClosedThrough');
  const scope = and(eq(organizations.id, organizationId), eq(organizations.firmId, ctx.firmId));
  const [org] = await tx
    .select({ booksClosedThrough: organizations.booksClosedThrough })
    .from(organizations)
    .where(scope)
    .for('update');
  if (!org) throw new DomainError('ORGANIZATION_NOT_FOUND', 'organization not found');
  const previous = org.booksClosedThrough;
  if (previous === date) return { booksClosedThrough: date, previous };

  await tx.update(organizations).set({ booksClosedThrough: date }).where(scope);
  const closing = date !== null && (previous === null || date > previous);
  const action = closing ? 'books.closed' : 'books.reopened';
  await recordEvent(tx, ctx, {
    organizationId,
    action,
    resourceType: 'organization',
    resourceId: organizationId,
    data: { booksClosedThrough: date, previous },
    payload: { organizationId, booksClosedThrough: date, previous },
  });
  return { booksClosedThrough: date, previous };
}

export interface BookSettings {
  booksClosedThrough: string | null;
  fiscalYearStartMonth: number;
}

/** The organization's closed-books date and fiscal-year start. */
export async function getBookSettings(db: Executor, organizationId: string): Promise<BookSettings> {
  const [org] = await db
    .select({
      booksClosedThrough: organizations.booksClosedThrough,
      fiscalYearStartMonth: organizations.fiscalYearStartMonth,
    })
    .from(organizations)
    .where(eq(organizations.id, organizationId));
  if (!org) throw new DomainError('ORGANIZATION_NOT_FOUND', 'organization not found');
  return org;
}

/**
 * Changes the month the fiscal year starts in, which moves the line between retained and current-year
 * earnings on the balance sheet (no posted amount changes).
 */
export async function setFiscalYearStartMonth(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  month: number,
): Promise<void> {
  if (!Number.isInteger(month) || month < 1 || month > 12) {
    throw new DomainError('VALIDATION_ERROR', 'fiscalYearStartMonth must be 1-12', [
      { field: 'fiscalYearStartMonth', message: 'not a month number 1-12' },
    ]);
  }
  const scope = and(eq(organizations.id, organizationId), eq(organizations.firmId, ctx.firmId));
  const [org] = await tx
    .select({ month: organizations.fiscalYearStartMonth })
    .from(organizations)
    .where(scope)
    .for('update');
  if (!org) throw new DomainError('ORGANIZATION_NOT_FOUND', 'organization not found');
  if (org.month === month) return;
  await tx.update(organizations).set({ fiscalYearStartMonth: month }).where(scope);
  await recordEvent(tx, ctx, {
    organizationId,
    action: 'books.fiscal_year_changed',
    resourceType: 'organization',
    resourceId: organizationId,
    data: { fiscalYearStartMonth: month, previous: org.month },
    payload: { organizationId, fiscalYearStartMonth: month, previous: org.month },
  });
}
