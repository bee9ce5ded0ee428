import { firms, organizations } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authenticateApiKey, createApiKey, revokeApiKey } from './api-keys';

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
});
