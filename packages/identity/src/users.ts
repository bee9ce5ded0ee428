import { DomainError, decodeCursor, type Page, toPage } from '@firm/core';
import {
  apiKeys,
  type Executor,
  firms,
  oauthGrants,
  oauthTokens,
  pgErrorOf,
  userInvitations,
  userSessions,
  users,
} from '@firm/db';
import { and, asc, eq, gt, inArray, isNotNull, isNull, ne, sql } from 'drizzle-orm';
import { type FirmActor, recordFirmEvent } from './firm-audit';
import { findFirm } from './firms';
import { requireOrganizations } from './organizations';
import { hashPassword } from './passwords';
import { generateSecret, hashSecret, isWellFormedSecret } from './secrets';
import { canApproveApps, normalizeEmail, type SessionUser, type UserRole } from './sessions';

export const USER_ROLES: readonly UserRole[] = ['owner', 'admin', 'member'];
export const MIN_PASSWORD_LENGTH = 12;
export const INVITATION_TOKEN_PREFIX = 'inv_';

/** `invited`: no password yet (the invitation link sets one); `deactivated`: taken off the firm. */
export type UserStatus = 'invited' | 'active' | 'deactivated';

export interface FirmUser {
  id: string;
  firmId: string;
  email: string;
  name: string;
  role: UserRole;
  status: UserStatus;
  /** Members only: the companies they may see; null for every organization of the firm. */
  organizationIds: string[] | null;
  createdAt: Date;
  deactivatedAt: Date | null;
}

/** Who manages people: an owner or admin (by their current role), or the operator (the CLI, a key made by it). */
export interface Manager extends FirmActor {
  role: UserRole;
  userId: string | null;
}

type UserRow = typeof users.$inferSelect;

const statusOf = (row: Pick<UserRow, 'passwordHash' | 'deactivatedAt'>): UserStatus =>
  row.deactivatedAt ? 'deactivated' : row.passwordHash ? 'active' : 'invited';

const isActiveOwner = (row: UserRow) => row.role === 'owner' && statusOf(row) === 'active';

function toFirmUser(row: UserRow): FirmUser {
  return {
    id: row.id,
    firmId: row.firmId,
    email: row.email,
    name: row.name,
    role: row.role,
    status: statusOf(row),
    organizationIds: row.organizationIds,
    createdAt: row.createdAt,
    deactivatedAt: row.deactivatedAt,
  };
}

function checkEmail(given: string): string {
  const email = normalizeEmail(given);
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) || email.length > 320) {
    throw new DomainError('VALIDATION_ERROR', `${given} is not an email address`, [
      { field: 'email', message: 'must be an email address' },
    ]);
  }
  return email;
}

function checkRole(role: string): UserRole {
  if (!USER_ROLES.includes(role as UserRole)) {
    throw new DomainError('VALIDATION_ERROR', `role ${role}: one of ${USER_ROLES.join(', ')}`, [
      { field: 'role', message: `one of ${USER_ROLES.join(', ')}` },
    ]);
  }
  return role as UserRole;
}

export function checkPassword(password: string): void {
  if ([...password].length < MIN_PASSWORD_LENGTH) {
    throw new DomainError('VALIDATION_ERROR', `the password needs at least ${MIN_PASSWORD_LENGTH} characters`, [
      { field: 'password', message: `at least ${MIN_PASSWORD_LENGTH} characters` },
    ]);
  }
}

/** The companies of a user of this role: members may be limited to some; owners and admins see the whole firm. */
async function organizationsFor(
  db: Executor,
  firmId: string,
  role: UserRole,
  organizationIds: readonly string[] | null | undefined,
): Promise<string[] | null> {
  if (organizationIds === null || organizationIds === undefined) return null;
  if (role !== 'member') {
    throw new DomainError('VALIDATION_ERROR', 'only members are limited to some companies; owners and admins see all', [
      { field: 'organizationIds', message: 'only for role member' },
    ]);
  }
  if (organizationIds.length === 0) {
    throw new DomainError('VALIDATION_ERROR', 'a member needs at least one company, or null for all of them', [
      { field: 'organizationIds', message: 'at least one' },
    ]);
  }
  return requireOrganizations(db, firmId, organizationIds);
}

function refuseOwnerChangeBy(manager: Manager, what: string): void {
  if (manager.role !== 'owner') throw new DomainError('FORBIDDEN', `only owners ${what}`);
}

const insertConflict = (err: unknown, email: string): never => {
  if (pgErrorOf(err)?.code === '23505' && pgErrorOf(err)?.message.includes('users_email_key')) {
    throw new DomainError('EMAIL_TAKEN', `a user with email ${email} exists`);
  }
  throw err;
};

/** The firm's row, locked for the transaction: changes to its users' roles and status take turns. */
async function lockFirm(tx: Executor, firmId: string): Promise<void> {
  const [firm] = await tx.select({ id: firms.id }).from(firms).where(eq(firms.id, firmId)).for('update');
  if (!firm) throw new DomainError('NOT_FOUND', `no firm ${firmId}`);
}

async function userOfFirm(tx: Executor, firmId: string, userId: string): Promise<UserRow> {
  const [row] = await tx
    .select()
    .from(users)
    .where(and(eq(users.id, userId), eq(users.firmId, firmId)))
    .limit(1);
  if (!row) throw new DomainError('USER_NOT_FOUND', 'no such user of this firm');
  return row;
}

async function requireAnotherOwner(tx: Executor, firmId: string, userId: string): Promise<void> {
  const [other] = await tx
    .select({ id: users.id })
    .from(users)
    .where(
      and(
        eq(users.firmId, firmId),
        ne(users.id, userId),
        eq(users.role, 'owner'),
        isNull(users.deactivatedAt),
        isNotNull(users.passwordHash),
      ),
    )
    .limit(1);
  if (!other) {
    throw new DomainError('LAST_OWNER', 'the firm must keep an active owner; make another user owner first');
  }
}

/**
 * The role of a user who may manage the firm's people and keys (an active owner or admin), or null. No user (an
 * operator's key, the CLI) manages as an owner.
 */
export async function managerRoleOf(db: Executor, firmId: string, userId: string | null): Promise<UserRole | null> {
  if (!userId) return 'owner';
  const [row] = await db
    .select({ role: users.role })
    .from(users)
    .where(
      and(eq(users.id, userId), eq(users.firmId, firmId), isNull(users.deactivatedAt), isNotNull(users.passwordHash)),
    )
    .limit(1);
  return row && canApproveApps(row.role) ? row.role : null;
}

/** Adds a user who signs in at /login with this email and password (the CLI). Emails are unique across the deployment. */
export async function createUser(
  db: Executor,
  input: { firmId: string; email: string; name?: string; role: UserRole; password: string },
  actor?: Omit<FirmActor, 'firmId'>,
): Promise<FirmUser> {
  const email = checkEmail(input.email);
  const role = checkRole(input.role);
  checkPassword(input.password);
  if (!(await findFirm(db, input.firmId))) throw new DomainError('NOT_FOUND', `no firm ${input.firmId}`);
  const passwordHash = await hashPassword(input.password);
  try {
    return await db.transaction(async (tx) => {
      const [row] = await tx
        .insert(users)
        .values({ firmId: input.firmId, email, name: input.name?.trim() || email, role, passwordHash })
        .returning();
      const user = toFirmUser(row as UserRow);
      if (actor) {
        await recordFirmEvent(
          tx,
          { ...actor, firmId: input.firmId },
          {
            action: 'user.created',
            resourceType: 'user',
            resourceId: user.id,
            data: { email, role },
          },
        );
      }
      return user;
    });
  } catch (err) {
    return insertConflict(err, email);
  }
}

/**
 * A new firm's first owner, written in the transaction that creates the firm (the demo seed): the caller's own input,
 * so no checks, and no audit row, as for the firm itself. Returns the user's id.
 */
export async function createFirmOwner(
  tx: Executor,
  input: { firmId: string; email: string; name: string; password: string },
): Promise<string> {
  const [owner] = await tx
    .insert(users)
    .values({
      firmId: input.firmId,
      email: input.email,
      name: input.name,
      role: 'owner',
      passwordHash: await hashPassword(input.password),
    })
    .returning({ id: users.id });
  return (owner as { id: string }).id;
}

/** The firm of a user, for an operator who names the user alone (the CLI); undefined for an unknown user. */
export async function firmOfUser(db: Executor, userId: string): Promise<string | undefined> {
  const [row] = await db.select({ firmId: users.firmId }).from(users).where(eq(users.id, userId)).limit(1);
  return row?.firmId;
}

/** The firm's user with this email (trimmed, lower-cased), with their role, if there is one. */
export async function firmUserByEmail(
  db: Executor,
  firmId: string,
  email: string,
): Promise<{ id: string; role: UserRole } | undefined> {
  const [user] = await db
    .select({ id: users.id, role: users.role })
    .from(users)
    .where(and(eq(users.firmId, firmId), eq(users.email, email.trim().toLowerCase())))
    .limit(1);
  return user;
}

export interface Invitation {
  /** The secret of the link `/invite/{token}`; shown once, only its hash is kept. */
  token: string;
  expiresAt: Date;
}

async function issueInvitation(
  tx: Executor,
  userId: string,
  createdByUserId: string | null,
  ttlMs: number,
  now: Date,
): Promise<Invitation & { id: string }> {
  const token = generateSecret(INVITATION_TOKEN_PREFIX);
  const expiresAt = new Date(now.getTime() + ttlMs);
  const [row] = await tx
    .insert(userInvitations)
    .values({
      firmId: sql`(select firm_id from users where id = ${userId})`,
      userId,
      tokenHash: hashSecret(token),
      createdByUserId,
      createdAt: now,
      expiresAt,
    })
    .returning({ id: userInvitations.id });
  return { id: row?.id as string, token, expiresAt };
}

export interface InviteInput {
  firmId: string;
  email: string;
  name?: string | undefined;
  role: UserRole;
  /** Members only; null or absent: every organization of the firm. */
  organizationIds?: readonly string[] | null | undefined;
  /** How long the link works. */
  ttlMs: number;
  now?: Date;
}

/**
 * Invites a user: the user exists at once, without a password, and the returned link (shown once) lets them choose
 * one and signs them in. No mail is sent: the inviter passes the link on. Admins cannot invite owners.
 */
export async function inviteUser(
  db: Executor,
  manager: Manager,
  input: InviteInput,
): Promise<{ user: FirmUser; invitation: Invitation }> {
  const email = checkEmail(input.email);
  const role = checkRole(input.role);
  if (role === 'owner') refuseOwnerChangeBy(manager, 'can invite owners');
  const now = input.now ?? new Date();
  try {
    return await db.transaction(async (tx) => {
      const organizationIds = await organizationsFor(tx, input.firmId, role, input.organizationIds);
      const [row] = await tx
        .insert(users)
        .values({ firmId: input.firmId, email, name: input.name?.trim() || email, role, organizationIds })
        .returning();
      const user = toFirmUser(row as UserRow);
      const invitation = await issueInvitation(tx, user.id, manager.userId, input.ttlMs, now);
      await recordFirmEvent(tx, manager, {
        action: 'user.invited',
        resourceType: 'user',
        resourceId: user.id,
        data: {
          email,
          name: user.name,
          role,
          organizationIds,
          invitationExpiresAt: invitation.expiresAt.toISOString(),
        },
      });
      return { user, invitation: { token: invitation.token, expiresAt: invitation.expiresAt } };
    });
  } catch (err) {
    return insertConflict(err, email);
  }
}

/** A new link for a user who has not taken their invitation yet; earlier links stop working. */
export async function reissueInvitation(
  db: Executor,
  manager: Manager,
  userId: string,
  ttlMs: number,
  now = new Date(),
): Promise<{ user: FirmUser; invitation: Invitation }> {
  return db.transaction(async (tx) => {
    const row = await userOfFirm(tx, manager.firmId, userId);
    if (row.role === 'owner') refuseOwnerChangeBy(manager, "can send an owner's invitation");
    if (statusOf(row) !== 'invited') {
      throw new DomainError('INVALID_STATE', `the user is ${statusOf(row)}: only invited users get a new link`);
    }
    await tx
      .update(userInvitations)
      .set({ revokedAt: now })
      .where(
        and(eq(userInvitations.userId, userId), isNull(userInvitations.usedAt), isNull(userInvitations.revokedAt)),
      );
    const invitation = await issueInvitation(tx, userId, manager.userId, ttlMs, now);
    await recordFirmEvent(tx, manager, {
      action: 'user.invitation_reissued',
      resourceType: 'user',
      resourceId: userId,
      data: { email: row.email, invitationExpiresAt: invitation.expiresAt.toISOString() },
    });
    return { user: toFirmUser(row), invitation: { token: invitation.token, expiresAt: invitation.expiresAt } };
  });
}

/** Why an invitation link does not work, or `valid`. */
export type InvitationState = 'valid' | 'unknown' | 'used' | 'expired' | 'revoked';

export interface InvitationLookup {
  state: InvitationState;
  /** Set when valid: whom the link signs in, for the page. */
  user?: { email: string; name: string; firmName: string };
}

/** What the invitation page shows for a token. Never changes anything. */
export async function findInvitation(db: Executor, token: string, now = new Date()): Promise<InvitationLookup> {
  if (!isWellFormedSecret(INVITATION_TOKEN_PREFIX, token)) return { state: 'unknown' };
  const [row] = await db
    .select({ invitation: userInvitations, user: users, firmName: firms.name })
    .from(userInvitations)
    .innerJoin(users, eq(users.id, userInvitations.userId))
    .innerJoin(firms, eq(firms.id, users.firmId))
    .where(eq(userInvitations.tokenHash, hashSecret(token)))
    .limit(1);
  if (!row) return { state: 'unknown' };
  if (row.invitation.usedAt || row.user.passwordHash) return { state: 'used' };
  if (row.invitation.revokedAt || row.user.deactivatedAt) return { state: 'revoked' };
  if (row.invitation.expiresAt <= now) return { state: 'expired' };
  return { state: 'valid', user: { email: row.user.email, name: row.user.name, firmName: row.firmName } };
}

/**
 * Takes an invitation: sets the user's password and spends the link, in one transaction that only one request can
 * win. Returns the user to start a session for, or why the link does not work.
 */
export async function acceptInvitation(
  db: Executor,
  token: string,
  password: string,
  now = new Date(),
): Promise<{ state: 'accepted'; user: SessionUser } | { state: Exclude<InvitationState, 'valid'> }> {
  const found = await findInvitation(db, token, now);
  if (found.state !== 'valid') return { state: found.state };
  checkPassword(password);
  const passwordHash = await hashPassword(password);
  const accepted = await db.transaction(async (tx) => {
    const [invitation] = await tx
      .update(userInvitations)
      .set({ usedAt: now })
      .where(
        and(
          eq(userInvitations.tokenHash, hashSecret(token)),
          isNull(userInvitations.usedAt),
          isNull(userInvitations.revokedAt),
          gt(userInvitations.expiresAt, now),
        ),
      )
      .returning({ id: userInvitations.id, userId: userInvitations.userId });
    if (!invitation) return null;
    const [row] = await tx
      .update(users)
      .set({ passwordHash })
      .where(and(eq(users.id, invitation.userId), isNull(users.passwordHash), isNull(users.deactivatedAt)))
      .returning();
    if (!row) return null;
    await tx
      .update(userInvitations)
      .set({ revokedAt: now })
      .where(
        and(eq(userInvitations.userId, row.id), isNull(userInvitations.usedAt), isNull(userInvitations.revokedAt)),
      );
    await recordFirmEvent(
      tx,
      { firmId: row.firmId, kind: 'invitation', id: invitation.id },
      { action: 'user.joined', resourceType: 'user', resourceId: row.id, data: { email: row.email } },
    );
    return row;
  });
  if (!accepted) {
    // Another request took the link between the check and the update (or the user was deactivated meanwhile).
    const again = await findInvitation(db, token, now);
    return { state: again.state === 'valid' ? 'used' : again.state };
  }
  return {
    state: 'accepted',
    user: {
      id: accepted.id,
      firmId: accepted.firmId,
      email: accepted.email,
      name: accepted.name,
      role: accepted.role,
      organizationIds: accepted.organizationIds,
    },
  };
}

export async function listUsers(
  db: Executor,
  firmId: string,
  page: { limit: number; cursor?: string | undefined } = { limit: 1000 },
): Promise<Page<FirmUser>> {
  if (!(await findFirm(db, firmId))) throw new DomainError('NOT_FOUND', `no firm ${firmId}`);
  const after = page.cursor ? gt(users.id, String(decodeCursor(page.cursor, ['uuid'])[0])) : undefined;
  const rows = await db
    .select()
    .from(users)
    .where(and(eq(users.firmId, firmId), after))
    .orderBy(asc(users.id))
    .limit(page.limit + 1);
  const result = toPage(rows, page.limit, (u) => [u.id]);
  return { data: result.data.map(toFirmUser), nextCursor: result.nextCursor };
}

export async function getUser(db: Executor, firmId: string, userId: string): Promise<FirmUser> {
  return toFirmUser(await userOfFirm(db, firmId, userId));
}

export interface UserPatch {
  name?: string | undefined;
  role?: UserRole | undefined;
  /** Members only; null: every organization of the firm. Left out: kept (and dropped when the role is no longer member). */
  organizationIds?: readonly string[] | null | undefined;
}

/**
 * Changes a user's name, role or companies. Admins cannot change owners or make one; the firm's last active owner
 * keeps the role. Every credential acting for the user follows the change on its next request.
 */
export async function updateUser(db: Executor, manager: Manager, userId: string, patch: UserPatch): Promise<FirmUser> {
  return db.transaction(async (tx) => {
    await lockFirm(tx, manager.firmId);
    const row = await userOfFirm(tx, manager.firmId, userId);
    if (row.deactivatedAt) throw new DomainError('INVALID_STATE', 'the user is deactivated and cannot be changed');
    if (row.role === 'owner') refuseOwnerChangeBy(manager, 'can change an owner');
    const role = patch.role === undefined ? row.role : checkRole(patch.role);
    if (role === 'owner' && row.role !== 'owner') refuseOwnerChangeBy(manager, 'can make an owner');
    const organizationIds =
      patch.organizationIds !== undefined
        ? await organizationsFor(tx, manager.firmId, role, patch.organizationIds)
        : role === 'member'
          ? row.organizationIds
          : null;
    const name = patch.name === undefined ? row.name : patch.name.trim();
    if (!name) {
      throw new DomainError('VALIDATION_ERROR', 'a user needs a name', [{ field: 'name', message: 'empty' }]);
    }
    if (isActiveOwner(row) && role !== 'owner') await requireAnotherOwner(tx, manager.firmId, userId);
    const before = { name: row.name, role: row.role, organizationIds: row.organizationIds };
    const after = { name, role, organizationIds };
    if (JSON.stringify(before) === JSON.stringify(after)) return toFirmUser(row);
    const [updated] = await tx.update(users).set(after).where(eq(users.id, userId)).returning();
    await recordFirmEvent(tx, manager, {
      action: 'user.updated',
      resourceType: 'user',
      resourceId: userId,
      data: { email: row.email, before, after },
    });
    return toFirmUser(updated as UserRow);
  });
}

export interface Deactivation {
  user: FirmUser;
  /** False when the user was already deactivated: nothing changed. */
  changed: boolean;
}

/**
 * Takes a user off the firm, at once: they cannot sign in; their sessions end, the OAuth approvals they gave are
 * revoked with every token issued from them, their open invitations and the API keys they made are revoked. The row
 * stays (the audit trail names it). Admins cannot deactivate owners; the last active owner cannot be deactivated.
 */
export async function deactivateUser(
  db: Executor,
  manager: Manager,
  userId: string,
  now = new Date(),
): Promise<Deactivation> {
  return db.transaction(async (tx) => {
    await lockFirm(tx, manager.firmId);
    const row = await userOfFirm(tx, manager.firmId, userId);
    if (row.deactivatedAt) return { user: toFirmUser(row), changed: false };
    if (row.role === 'owner') refuseOwnerChangeBy(manager, 'can deactivate an owner');
    if (isActiveOwner(row)) await requireAnotherOwner(tx, manager.firmId, userId);
    const [updated] = await tx.update(users).set({ deactivatedAt: now }).where(eq(users.id, userId)).returning();
    const sessions = await tx
      .update(userSessions)
      .set({ revokedAt: now })
      .where(and(eq(userSessions.userId, userId), isNull(userSessions.revokedAt)))
      .returning({ id: userSessions.id });
    const grants = await tx
      .update(oauthGrants)
      .set({ revokedAt: now, revokedReason: 'user_deactivated' })
      .where(and(eq(oauthGrants.userId, userId), isNull(oauthGrants.revokedAt)))
      .returning({ id: oauthGrants.id });
    if (grants.length > 0) {
      await tx
        .update(oauthTokens)
        .set({ revokedAt: now })
        .where(
          and(
            inArray(
              oauthTokens.grantId,
              grants.map((g) => g.id),
            ),
            isNull(oauthTokens.revokedAt),
          ),
        );
    }
    const keys = await tx
      .update(apiKeys)
      .set({ revokedAt: now })
      .where(and(eq(apiKeys.createdByUserId, userId), isNull(apiKeys.revokedAt)))
      .returning({ id: apiKeys.id });
    const invitations = await tx
      .update(userInvitations)
      .set({ revokedAt: now })
      .where(and(eq(userInvitations.userId, userId), isNull(userInvitations.usedAt), isNull(userInvitations.revokedAt)))
      .returning({ id: userInvitations.id });
    await recordFirmEvent(tx, manager, {
      action: 'user.deactivated',
      resourceType: 'user',
      resourceId: userId,
      data: {
        email: row.email,
        role: row.role,
        sessionsEnded: sessions.length,
        oauthGrantsRevoked: grants.map((g) => g.id),
        apiKeysRevoked: keys.map((k) => k.id),
        invitationsRevoked: invitations.length,
      },
    });
    return { user: toFirmUser(updated as UserRow), changed: true };
  });
}
