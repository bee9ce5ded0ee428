import {
  ALL_SCOPES,
  DomainError,
  decodeCursor,
  isScope,
  MANAGER_SCOPES,
  type Page,
  type Scope,
  toPage,
} from '@firm/core';
import { apiKeys, type Executor, organizations, users } from '@firm/db';
import { and, asc, eq, gt, isNull, lt, or, sql } from 'drizzle-orm';
import type { Credential } from './credentials';
import { type FirmActor, recordFirmEvent } from './firm-audit';
import type { LookupCache } from './lookup-cache';
import { requireOrganizations } from './organizations';
import { canApproveApps, type UserRole } from './sessions';
import { displayPrefixOf, generateSecret, hashSecret, isWellFormedSecret, safeEqual } from './secrets';

export const API_KEY_PREFIX = 'dk_live_';

/** `lastUsedAt` is refreshed at most this often, so that a busy key does not write on every request. */
const LAST_USED_RESOLUTION_MS = 60_000;

export interface CreateApiKeyInput {
  firmId: string;
  name?: string;
  scopes?: readonly string[];
  organizationIds?: readonly string[];
  createdByUserId?: string | null;
}

/** What the maker of a key holds: a key gets no scope and no company its maker does not have. */
export interface Grantor {
  scopes: ReadonlySet<Scope>;
  /** Null: every organization of the firm. */
  organizationIds: readonly string[] | null;
}

export interface ApiKeyRecord {
  id: string;
  firmId: string;
  name: string;
  displayPrefix: string;
  scopes: string[];
  organizationIds: string[] | null;
  createdByUserId: string | null;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

/**
 * Issues a key; the key itself is returned once, only its hash is kept. Without scopes it gets every scope (of the
 * grantor, when one is given); without organizations, the whole firm (the grantor's organizations). With a grantor,
 * asking for more than it holds is SCOPE_NOT_GRANTABLE or INVALID_ORGANIZATION. With an actor, the firm's audit trail
 * records it in the same transaction.
 */
export async function createApiKey(
  db: Executor,
  input: CreateApiKeyInput,
  options: { grantor?: Grantor; actor?: Omit<FirmActor, 'firmId'> } = {},
): Promise<{ key: string; record: ApiKeyRecord }> {
  const { grantor, actor } = options;
  const asked = input.scopes && input.scopes.length > 0 ? [...new Set(input.scopes)] : null;
  const unknown = (asked ?? []).filter((s) => !isScope(s));
  if (unknown.length > 0) {
    throw new DomainError('VALIDATION_ERROR', `unknown scope: ${unknown.join(', ')}`, [
      { field: 'scopes', message: `known scopes: ${ALL_SCOPES.join(', ')}` },
    ]);
  }
  const scopes = (asked as Scope[] | null) ?? (grantor ? ALL_SCOPES.filter((s) => grantor.scopes.has(s)) : ALL_SCOPES);
  const lacking = grantor ? scopes.filter((s) => !grantor.scopes.has(s)) : [];
  if (lacking.length > 0) {
    throw new DomainError(
      'SCOPE_NOT_GRANTABLE',
      `the caller cannot grant scopes it does not hold: ${lacking.join(', ')}`,
      [{ field: 'scopes', message: 'not held by the caller', scopes: lacking }],
    );
  }
  return db.transaction(async (tx) => {
    const organizationIds =
      input.organizationIds && input.organizationIds.length > 0
        ? await requireOrganizations(tx, input.firmId, input.organizationIds, grantor?.organizationIds ?? null)
        : grantor?.organizationIds
          ? [...grantor.organizationIds]
          : null;
    const key = generateSecret(API_KEY_PREFIX);
    const [row] = await tx
      .insert(apiKeys)
      .values({
        firmId: input.firmId,
        name: input.name?.trim() || 'API key',
        displayPrefix: displayPrefixOf(key, API_KEY_PREFIX),
        keyHash: hashSecret(key),
        scopes,
        organizationIds,
        createdByUserId: input.createdByUserId ?? null,
      })
      .returning();
    const record = toRecord(row as typeof apiKeys.$inferSelect);
    if (actor) {
      await recordFirmEvent(
        tx,
        { ...actor, firmId: input.firmId },
        {
          action: 'api_key.created',
          resourceType: 'api_key',
          resourceId: record.id,
          data: { name: record.name, displayPrefix: record.displayPrefix, scopes, organizationIds },
        },
      );
    }
    return { key, record };
  });
}

/**
 * Revokes a key at once (this process's cache aside: clear it). True when the key exists (of `firmId`, when given),
 * revoked now or before; the audit trail records only the revocation that happened.
 */
export async function revokeApiKey(
  db: Executor,
  id: string,
  firmId?: string,
  actor?: Omit<FirmActor, 'firmId'>,
): Promise<boolean> {
  return db.transaction(async (tx) => {
    const where = firmId ? and(eq(apiKeys.id, id), eq(apiKeys.firmId, firmId)) : eq(apiKeys.id, id);
    const [found] = await tx.select().from(apiKeys).where(where).limit(1).for('update');
    if (!found) return false;
    if (found.revokedAt) return true;
    await tx
      .update(apiKeys)
      .set({ revokedAt: sql`now()` })
      .where(eq(apiKeys.id, id));
    if (actor) {
      await recordFirmEvent(
        tx,
        { ...actor, firmId: found.firmId },
        {
          action: 'api_key.revoked',
          resourceType: 'api_key',
          resourceId: id,
          data: { name: found.name, displayPrefix: found.displayPrefix },
        },
      );
    }
    return true;
  });
}

export interface ApiKeyListing extends ApiKeyRecord {
  /** The user who made it; null for keys made with the CLI (firm-level). */
  createdBy: { id: string; email: string; name: string } | null;
}

/** A firm's keys, oldest first; revoked ones only when asked for. */
export async function listApiKeys(
  db: Executor,
  firmId: string,
  page: { limit: number; cursor?: string | undefined; includeRevoked?: boolean | undefined },
): Promise<Page<ApiKeyListing>> {
  const after = page.cursor ? gt(apiKeys.id, String(decodeCursor(page.cursor, ['uuid'])[0])) : undefined;
  const rows = await db
    .select({ key: apiKeys, user: { id: users.id, email: users.email, name: users.name } })
    .from(apiKeys)
    .leftJoin(users, eq(users.id, apiKeys.createdByUserId))
    .where(and(eq(apiKeys.firmId, firmId), page.includeRevoked ? undefined : isNull(apiKeys.revokedAt), after))
    .orderBy(asc(apiKeys.id))
    .limit(page.limit + 1);
  const result = toPage(rows, page.limit, (r) => [r.key.id]);
  return {
    data: result.data.map((r) => ({ ...toRecord(r.key), createdBy: r.user })),
    nextCursor: result.nextCursor,
  };
}

/** One key of the firm (revoked ones too), or API_KEY_NOT_FOUND. */
export async function getApiKey(db: Executor, firmId: string, id: string): Promise<ApiKeyListing> {
  const [row] = await db
    .select({ key: apiKeys, user: { id: users.id, email: users.email, name: users.name } })
    .from(apiKeys)
    .leftJoin(users, eq(users.id, apiKeys.createdByUserId))
    .where(and(eq(apiKeys.id, id), eq(apiKeys.firmId, firmId)))
    .limit(1);
  if (!row) throw new DomainError('API_KEY_NOT_FOUND', 'no such API key of this firm');
  return { ...toRecord(row.key), createdBy: row.user };
}

/**
 * The key by its hash, with the organization named by the request when it is one of the key's firm. Prepared once
 * per database (every request runs it: no query building, and Postgres plans it once per connection).
 */
const lookups = new WeakMap<object, ReturnType<typeof prepareLookup>>();
const prepareLookup = (db: Executor) =>
  db
    .select({
      key: apiKeys,
      organization: organizations,
      maker: { role: users.role, organizationIds: users.organizationIds, deactivatedAt: users.deactivatedAt },
    })
    .from(apiKeys)
    .leftJoin(
      organizations,
      and(eq(organizations.id, sql.placeholder('organizationId')), eq(organizations.firmId, apiKeys.firmId)),
    )
    .leftJoin(users, eq(users.id, apiKeys.createdByUserId))
    .where(eq(apiKeys.keyHash, sql.placeholder('hash')))
    .limit(1)
    .prepare('api_key_by_hash');
function lookupOf(db: Executor) {
  let lookup = lookups.get(db);
  if (!lookup) {
    lookup = prepareLookup(db);
    lookups.set(db, lookup);
  }
  return lookup;
}

/**
 * What the key lookup returns: the key's row, the organization the request names (if the key's firm has it), and the
 * key's maker as they are now (null for keys made with the CLI).
 */
export type ApiKeyLookup = {
  key: typeof apiKeys.$inferSelect;
  organization: typeof organizations.$inferSelect | null;
  maker: { role: UserRole; organizationIds: string[] | null; deactivatedAt: Date | null } | null;
};

/**
 * Resolves a presented key to its credential, or null. Malformed keys and bad checksums are
 * rejected without touching the database. With `options.organizationId` (the organization the request
 * names), that organization is read in the same query, only if it belongs to the key's firm, and kept on the
 * credential, so the request's organization costs no round trip of its own. With `options.cache`, a live key and
 * the organization it found are kept there (never a miss: an unknown key or organization is looked up each time).
 */
export async function authenticateApiKey(
  db: Executor,
  presented: string,
  options: { now?: Date; organizationId?: string | undefined; cache?: LookupCache<ApiKeyLookup> | undefined } = {},
): Promise<Credential | null> {
  if (!isWellFormedSecret(API_KEY_PREFIX, presented)) return null;
  const now = options.now ?? new Date();
  const hint = options.organizationId;
  const hash = hashSecret(presented);
  const cacheKey = `${hash}|${hint?.toLowerCase() ?? ''}`;
  let found = options.cache?.get(cacheKey, now.getTime());
  if (!found) {
    const generation = options.cache?.generation ?? 0;
    [found] = await lookupOf(db).execute({ hash, organizationId: hint ?? null });
    if (found && !found.key.revokedAt && (!hint || found.organization)) {
      options.cache?.set(cacheKey, found, generation, now.getTime());
    }
  }
  const row = found?.key;
  if (!found || !row || !safeEqual(row.keyHash, hash) || row.revokedAt) return null;
  // A key acts for its maker: never once they are deactivated, and no more than a member may when they are one.
  const maker = found.maker;
  if (maker?.deactivatedAt) return null;
  const member = maker !== null && !canApproveApps(maker.role);
  if (!row.lastUsedAt || now.getTime() - row.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
    const staleBefore = new Date(now.getTime() - LAST_USED_RESOLUTION_MS);
    await db
      .update(apiKeys)
      .set({ lastUsedAt: now })
      .where(and(eq(apiKeys.id, row.id), or(isNull(apiKeys.lastUsedAt), lt(apiKeys.lastUsedAt, staleBefore))));
    row.lastUsedAt = now;
  }
  return {
    kind: 'api_key',
    id: row.id,
    firmId: row.firmId,
    scopes: new Set(row.scopes.filter((s): s is Scope => isScope(s) && !(member && MANAGER_SCOPES.has(s)))),
    organizationIds: member ? intersection(row.organizationIds, maker.organizationIds) : row.organizationIds,
    userId: row.createdByUserId,
    ...(hint ? { prefetchedOrganization: { id: hint, row: found.organization } } : {}),
  };
}

/** The organizations both lists allow (null: every organization of the firm). */
function intersection(a: readonly string[] | null, b: readonly string[] | null): string[] | null {
  if (a === null) return b === null ? null : [...b];
  return b === null ? [...a] : a.filter((id) => b.includes(id));
}

function toRecord(row: typeof apiKeys.$inferSelect): ApiKeyRecord {
  return {
    id: row.id,
    firmId: row.firmId,
    name: row.name,
    displayPrefix: row.displayPrefix,
    scopes: row.scopes,
    organizationIds: row.organizationIds,
    createdByUserId: row.createdByUserId,
    createdAt: row.createdAt,
    lastUsedAt: row.lastUsedAt,
    revokedAt: row.revokedAt,
  };
}
