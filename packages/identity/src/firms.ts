import { DomainError } from '@firm/core';
import { type Executor, firms } from '@firm/db';
import { count, eq } from 'drizzle-orm';

export type Firm = typeof firms.$inferSelect;

/** Whether the database holds any firm yet (an empty one is seeded with the demo on the embedded database). */
export async function hasFirms(db: Executor): Promise<boolean> {
  const [row] = await db.select({ n: count() }).from(firms);
  return (row?.n ?? 0) > 0;
}

/** A slug from a name: lower case, runs of anything but letters and digits as one dash. */
export function slugOf(name: string): string {
  return (
    name
      .normalize('NFKD')
      .replace(/[\u0300-\u036f]/g, '')
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '')
      .slice(0, 63) || 'firm'
  );
}

export async function createFirm(db: Executor, input: { name: string; slug?: string }): Promise<Firm> {
  const name = input.name.trim();
  if (!name) throw new DomainError('VALIDATION_ERROR', 'a firm needs a name', [{ field: 'name', message: 'empty' }]);
  const slug = input.slug ?? slugOf(name);
  if (!/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(slug)) {
    throw new DomainError('VALIDATION_ERROR', `slug ${slug}: lower-case letters, digits and inner dashes only`);
  }
  const firm = await createFirmIfNew(db, { name, slug });
  if (!firm) throw new DomainError('CONFLICT', `a firm with slug ${slug} exists`);
  return firm;
}

/**
 * The firm, created unless its slug is taken (then undefined): for a seed that makes its firm once, whoever runs it
 * first. The name and slug are the caller's own, not checked.
 */
export async function createFirmIfNew(db: Executor, input: { name: string; slug: string }): Promise<Firm | undefined> {
  const [firm] = await db.insert(firms).values(input).onConflictDoNothing({ target: firms.slug }).returning();
  return firm;
}

/** The id of the firm with this slug, if there is one. */
export async function firmIdOfSlug(db: Executor, slug: string): Promise<string | undefined> {
  const [firm] = await db.select({ id: firms.id }).from(firms).where(eq(firms.slug, slug));
  return firm?.id;
}

export async function findFirm(db: Executor, firmId: string): Promise<Firm | null> {
  const [firm] = await db.select().from(firms).where(eq(firms.id, firmId));
  return firm ?? null;
}
