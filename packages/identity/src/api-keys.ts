import { ALL_SCOPES, DomainError, isScope, type Scope } from '@firm/core';
import { apiKeys, type Executor, organizations } from '@firm/db';
import { and, eq, inArray, isNull, lt, or, sql } from 'drizzle-orm';
import type { Credential } from './credentials';
import type { LookupCache } from './lookup-cache';
import { displayPrefixOf, generateSecret, hashSecret, isWellFormedSecret, safeEqual } from './secrets';

export const API_KEY_PREFIX = 'dk_live_';

/** `lastUsedAt` is refreshed at most this often, so that a busy key does not write on every request. */
const LAST_USED_RESOLUTION_MS = 60_000;

export interface CreateApiKeyInput {
  firmId: string;
  name?: string;
  scopes?: readonly string[];
  organizationIds?: readonly string[];
  createdByUserId?: string;
}

export interface ApiKeyRecord {
  id: string;
  firmId: string;
  name: string;
  displayPrefix: string;
  scopes: string[];
  organizationIds: string[] | null;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

export async function createApiKey(
  db: Executor,
  input: CreateApiKeyInput,
): Promise<{ key: string; record: ApiKeyRecord }> {
  const scopes = input.scopes && input.scopes.length > 0 ? [...new Set(input.scopes)] : ALL_SCOPES;
  const unknown = scopes.filter((s) => !isScope(s));
  if (unknown.length > 0) {
    throw new DomainError('VALIDATION_ERROR', `unknown scope: ${unknown.join(', ')}`, [
      { field: 'scopes', message: `known scopes: ${ALL_SCOPES.join(', ')}` },
    ]);
  }
  const organizationIds =
    input.organizationIds && input.organizationIds.length > 0 ? [...new Set(input.organizationIds)] : null;
  if (organizationIds) {
    const found = await db
      .select({ id: organizations.id })
      .from(organizations)
      .where(and(eq(organizations.firmId, input.firmId), inArray(organizations.id, organizationIds)));
    if (found.length !== organizationIds.length) {
      throw new DomainError('ORGANIZATION_NOT_FOUND', 'an organization is not managed by this firm');
    }
  }
  const key = generateSecret(API_KEY_PREFIX);
  const [record] = await db
    .insert(apiKeys)
    .values({
      firmId: input.firmId,
      name: input.name ?? 'API key',
      displayPrefix: displayPrefixOf(key, API_KEY_PREFIX),
      keyHash: hashSecret(key),
      scopes,
      organizationIds,
      createdByUserId: input.createdByUserId ?? null,
    })
    .returning();
  return { key, record: toRecord(record as typeof apiKeys.$inferSelect) };
}

export async function revokeApiKey(db: Executor, id: string, firmId?: string): Promise<boolean> {
  const where = firmId ? and(eq(apiKeys.id, id), eq(apiKeys.firmId, firmId)) : eq(apiKeys.id, id);
  const rows = await db
    .update(apiKeys)
    .set({ revokedAt: sql`coalesce(${apiKeys.revokedAt}, now())` })
    .where(where)
    .returning({ id: apiKeys.id });
  return rows.length > 0;
}

/**
 * The key by its hash, with the organization named by the request when it is one of the key's firm. Prepared once
 * per database (every request runs it: no query building, and Postgres plans it once per connection).
 */
const lookups = new WeakMap<object, ReturnType<typeof prepareLookup>>();
const prepareLookup = (db: Executor) =>
  db
    .select({ key: apiKeys, organization: organizations })
    .from(apiKeys)
    .leftJoin(
      organizations,
      and(eq(organizations.id, sql.placeholder('organizationId')), eq(organizations.firmId, apiKeys.firmId)),
    )
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

/** What the key lookup returns: the key's row and the organization the request names, if the key's firm has it. */
export type ApiKeyLookup = { key: typeof apiKeys.$inferSelect; organization: typeof organizations.$inferSelect | null };

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
    scopes: new Set(row.scopes.filter(isScope) as Scope[]),
    organizationIds: row.organizationIds,
    userId: row.createdByUserId,
    ...(hint ? { prefetchedOrganization: { id: hint, row: found.organization } } : {}),
  };
}

function toRecord(row: typeof apiKeys.$inferSelect): ApiKeyRecord {
  return {
    id: row.id,
    firmId: row.firmId,
    name: row.name,
    displayPrefix: row.displayPrefix,
    scopes: row.scopes,
    organizationIds: row.organizationIds,
    createdAt: row.createdAt,
    lastUsedAt: row.lastUsedAt,
    revokedAt: row.revokedAt,
  };
}
