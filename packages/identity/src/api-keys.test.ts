import { apiKeys, firms, organizations } from '@firm/db';
import { eq } from 'drizzle-orm';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiKeyLookup, authenticateApiKey, createApiKey, revokeApiKey } from './api-keys';
import { LookupCache } from './lookup-cache';

let database: TestDatabase;
const firm = async (slug: string) => {
  const [f] = await database.db.insert(firms).values({ slug, name: slug }).returning();
  const [o] = await database.db
    .insert(organizations)
    .values({ firmId: f?.id as string, name: `${slug} client` })
    .returning();
  return { firmId: f?.id as string, orgId: o?.id as string };
};

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

describe('authenticateApiKey', () => {
  it('reads the named organization with the key, only when it is one of the key’s firm', async () => {
    const ours = await firm('keys-ours');
    const theirs = await firm('keys-theirs');
    const { key } = await createApiKey(database.db, { firmId: ours.firmId });

    const own = await authenticateApiKey(database.db, key, { organizationId: ours.orgId });
    expect(own?.prefetchedOrganization).toMatchObject({ id: ours.orgId, row: { id: ours.orgId, firmId: ours.firmId } });

    const foreign = await authenticateApiKey(database.db, key, { organizationId: theirs.orgId });
    expect(foreign?.firmId).toBe(ours.firmId);
    expect(foreign?.prefetchedOrganization).toEqual({ id: theirs.orgId, row: null });

    const plain = await authenticateApiKey(database.db, key);
    expect(plain?.prefetchedOrganization).toBeUndefined();
  });

  it('refuses a revoked key whatever organization it names', async () => {
    const ours = await firm('keys-revoked');
    const { key, record } = await createApiKey(database.db, { firmId: ours.firmId });
    await revokeApiKey(database.db, record.id);
    expect(await authenticateApiKey(database.db, key, { organizationId: ours.orgId })).toBeNull();
  });

  it('with a cache, answers from it until it is cleared or the entry expires', async () => {
    const ours = await firm('keys-cached');
    const { key, record } = await createApiKey(database.db, { firmId: ours.firmId });
    const cache = new LookupCache<ApiKeyLookup>(60_000);
    const now = new Date();
    const at = (ms: number) => ({ organizationId: ours.orgId, cache, now: new Date(now.getTime() + ms) });
    expect((await authenticateApiKey(database.db, key, at(0)))?.id).toBe(record.id);
    await revokeApiKey(database.db, record.id);
    // Revoked behind this cache's back (as from another process): the kept lookup still answers, whatever
    // case the organization id is written in.
    expect((await authenticateApiKey(database.db, key, at(1)))?.id).toBe(record.id);
    expect(
      (await authenticateApiKey(database.db, key, { ...at(1), organizationId: ours.orgId.toUpperCase() }))?.id,
    ).toBe(record.id);
    // Once the entry expires, or the cache is cleared, the key is read again and refused.
    expect(await authenticateApiKey(database.db, key, at(60_001))).toBeNull();
    const { key: other, record: otherRecord } = await createApiKey(database.db, { firmId: ours.firmId });
    expect((await authenticateApiKey(database.db, other, at(0)))?.id).toBe(otherRecord.id);
    await revokeApiKey(database.db, otherRecord.id);
    cache.clear();
    expect(await authenticateApiKey(database.db, other, at(1))).toBeNull();
  });

  it('with a cache, keeps neither an unknown key nor a revoked one', async () => {
    const ours = await firm('keys-cache-misses');
    const { key, record } = await createApiKey(database.db, { firmId: ours.firmId });
    await revokeApiKey(database.db, record.id);
    const cache = new LookupCache<ApiKeyLookup>(60_000);
    expect(await authenticateApiKey(database.db, key, { cache })).toBeNull();
    const [row] = await database.db.select().from(apiKeys).where(eq(apiKeys.id, record.id));
    expect(cache.get(`${row?.keyHash}|`)).toBeUndefined();
  });
});
