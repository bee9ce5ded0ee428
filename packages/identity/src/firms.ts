import { DomainError } from '@firm/core';
import { type Executor, firms, pgErrorOf, users } from '@firm/db';
import { asc, eq } from 'drizzle-orm';
import { hashPassword } from './passwords';
import { normalizeEmail, type UserRole } from './sessions';

export type Firm = typeof firms.$inferSelect;
export const USER_ROLES: readonly UserRole[] = ['owner', 'admin', 'member'];
export const MIN_PASSWORD_LENGTH = 12;

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
  const [firm] = await db.insert(firms).values({ name, slug }).onConflictDoNothing({ target: firms.slug }).returning();
  if (!firm) throw new DomainError('CONFLICT', `a firm with slug ${slug} exists`);
  return firm;
}

export async function findFirm(db: Executor, firmId: string): Promise<Firm | null> {
  const [firm] = await db.select().from(firms).where(eq(firms.id, firmId));
  return firm ?? null;
}

export interface FirmUser {
  id: string;
  firmId: string;
  email: string;
  name: string;
  role: UserRole;
  createdAt: Date;
}

const userColumns = {
  id: users.id,
  firmId: users.firmId,
  email: users.email,
  name: users.name,
  role: users.role,
  createdAt: users.createdAt,
};

/** Adds a user who signs in at /login with this email and password. Emails are unique across the deployment. */
export async function createUser(
  db: Executor,
  input: { firmId: string; email: string; name?: string; role: UserRole; password: string },
): Promise<FirmUser> {
  const email = normalizeEmail(input.email);
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) {
    throw new DomainError('VALIDATION_ERROR', `${input.email} is not an email address`);
  }
  if (!USER_ROLES.includes(input.role)) {
    throw new DomainError('VALIDATION_ERROR', `role ${input.role}: one of ${USER_ROLES.join(', ')}`);
  }
  if ([...input.password].length < MIN_PASSWORD_LENGTH) {
    throw new DomainError('VALIDATION_ERROR', `the password needs at least ${MIN_PASSWORD_LENGTH} characters`);
  }
  if (!(await findFirm(db, input.firmId))) throw new DomainError('NOT_FOUND', `no firm ${input.firmId}`);
  const passwordHash = await hashPassword(input.password);
  try {
    const [user] = await db
      .insert(users)
      .values({ firmId: input.firmId, email, name: input.name?.trim() || email, role: input.role, passwordHash })
      .returning(userColumns);
    return user as FirmUser;
  } catch (err) {
    if (pgErrorOf(err)?.code === '23505') throw new DomainError('CONFLICT', `a user with email ${email} exists`);
    throw err;
  }
}

export async function listUsers(db: Executor, firmId: string): Promise<FirmUser[]> {
  if (!(await findFirm(db, firmId))) throw new DomainError('NOT_FOUND', `no firm ${firmId}`);
  return db
    .select(userColumns)
    .from(users)
    .where(eq(users.firmId, firmId))
    .orderBy(asc(users.createdAt), asc(users.id));
}
