import { randomBytes } from 'node:crypto';
import { ALL_SCOPES, MANAGER_SCOPES } from '@firm/core';
import { type Executor, userSessions, users } from '@firm/db';
import { activeCompanyIds } from '@firm/ledger';
import { and, eq, gt, isNotNull, isNull, sql } from 'drizzle-orm';
import type { Credential } from './credentials';
import { hashPassword, verifyPassword } from './passwords';
import { generateSecret, hashSecret, isWellFormedSecret } from './secrets';

export const SESSION_TOKEN_PREFIX = 'ses_';

export type UserRole = 'owner' | 'admin' | 'member';

export interface SessionUser {
  id: string;
  firmId: string;
  email: string;
  name: string;
  role: UserRole;
  /** Members only: the companies they may see; null for every organization of the firm. */
  organizationIds: string[] | null;
}

export interface Session {
  id: string;
  user: SessionUser;
  /** Forms carry it as their CSRF token; JSON requests made with the session send it as x-csrf-token. */
  csrfToken: string;
  expiresAt: Date;
}

export const canApproveApps = (role: UserRole): boolean => role === 'owner' || role === 'admin';

export const normalizeEmail = (email: string): string => email.trim().toLowerCase();

// A hash to verify against when the email is unknown, so that the answer takes as long either way.
let dummyHash: Promise<string> | null = null;

/**
 * The user whose email and password these are, or null. Takes the same time for unknown emails, invited users (no
 * password yet) and deactivated users.
 */
export async function verifyLogin(db: Executor, email: string, password: string): Promise<SessionUser | null> {
  const [row] = await db
    .select()
    .from(users)
    .where(eq(users.email, normalizeEmail(email)))
    .limit(1);
  if (!row?.passwordHash || row.deactivatedAt) {
    dummyHash ??= hashPassword(randomBytes(16).toString('hex'));
    await verifyPassword(password, await dummyHash);
    return null;
  }
  if (!(await verifyPassword(password, row.passwordHash))) return null;
  return toUser(row);
}

/** Starts a session. The token goes into the cookie; only its hash is stored. */
export async function createSession(
  db: Executor,
  userId: string,
  ttlMs: number,
  now = new Date(),
): Promise<{ token: string; session: Omit<Session, 'user'> }> {
  const token = generateSecret(SESSION_TOKEN_PREFIX);
  const csrfToken = randomBytes(32).toString('base64url');
  const expiresAt = new Date(now.getTime() + ttlMs);
  const [row] = await db
    .insert(userSessions)
    .values({
      firmId: sql`(select firm_id from users where id = ${userId})`,
      userId,
      tokenHash: hashSecret(token),
      csrfToken,
      expiresAt,
      createdAt: now,
    })
    .returning({ id: userSessions.id });
  return { token, session: { id: row?.id as string, csrfToken, expiresAt } };
}

/**
 * The live session of a cookie token, or null when it is malformed, unknown, expired, signed out, or its user was
 * deactivated. The user's role and companies are read with it, so a change applies on the next request.
 */
export async function findSession(db: Executor, token: string, now = new Date()): Promise<Session | null> {
  if (!isWellFormedSecret(SESSION_TOKEN_PREFIX, token)) return null;
  const [row] = await db
    .select({ session: userSessions, user: users })
    .from(userSessions)
    .innerJoin(users, eq(users.id, userSessions.userId))
    .where(
      and(
        eq(userSessions.tokenHash, hashSecret(token)),
        isNull(userSessions.revokedAt),
        gt(userSessions.expiresAt, now),
        isNull(users.deactivatedAt),
        isNotNull(users.passwordHash),
      ),
    )
    .limit(1);
  if (!row) return null;
  return {
    id: row.session.id,
    user: toUser(row.user),
    csrfToken: row.session.csrfToken,
    expiresAt: row.session.expiresAt,
  };
}

export async function revokeSession(db: Executor, sessionId: string): Promise<void> {
  await db
    .update(userSessions)
    .set({ revokedAt: sql`coalesce(${userSessions.revokedAt}, now())` })
    .where(eq(userSessions.id, sessionId));
}

/**
 * A session as a credential on the partner routes: the user's firm, every scope (members lack the scopes that
 * manage the firm: connected apps, agent access, closing books, users and keys), and the organizations the user may
 * see (a member's companies, else the whole firm). When the user sees a single active organization, requests may
 * omit x-organization-id.
 */
export async function sessionCredential(db: Executor, session: Session): Promise<Credential> {
  const visible = session.user.organizationIds;
  const orgs = await activeCompanyIds(db, session.user.firmId, visible ?? null, 2);
  const admin = canApproveApps(session.user.role);
  return {
    kind: 'session',
    id: session.user.id,
    firmId: session.user.firmId,
    scopes: new Set(ALL_SCOPES.filter((s) => admin || !MANAGER_SCOPES.has(s))),
    organizationIds: visible,
    userId: session.user.id,
    defaultOrganizationId: orgs.length === 1 ? (orgs[0] ?? null) : null,
  };
}

function toUser(row: typeof users.$inferSelect): SessionUser {
  return {
    id: row.id,
    firmId: row.firmId,
    email: row.email,
    name: row.name,
    role: row.role,
    organizationIds: row.organizationIds,
  };
}

/** Whether a user is (still) an active owner or admin of the firm: who may approve and disconnect apps. */
export async function canManageApps(db: Executor, userId: string, firmId: string): Promise<boolean> {
  const [row] = await db
    .select({ role: users.role })
    .from(users)
    .where(and(eq(users.id, userId), eq(users.firmId, firmId), isNull(users.deactivatedAt)))
    .limit(1);
  return row ? canApproveApps(row.role) : false;
}
