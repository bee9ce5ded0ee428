import { firms, organizations, userSessions, users } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from './passwords';
import { canManageApps, createSession, findSession, revokeSession, sessionCredential, verifyLogin } from './sessions';

let database: TestDatabase;
let firmId: string;
let ownerId: string;
let memberId: string;

beforeAll(async () => {
  database = await createTestDatabase();
  const db = database.db;
  const [firm] = await db.insert(firms).values({ slug: 'sessions', name: 'Sessions firm' }).returning();
  firmId = firm?.id as string;
  const passwordHash = await hashPassword('right password');
  const rows = await db
    .insert(users)
    .values([
      { firmId, email: 'owner@sessions.test', name: 'Owner', role: 'owner', passwordHash },
      { firmId, email: 'member@sessions.test', name: 'Member', role: 'member', passwordHash },
    ])
    .returning();
  ownerId = rows[0]?.id as string;
  memberId = rows[1]?.id as string;
  await db.insert(organizations).values({ firmId, name: 'Only client' });
});
afterAll(() => database.close());

describe('verifyLogin', () => {
  it('checks the password against the stored hash, and finds the email in any case', async () => {
    expect(await verifyLogin(database.db, 'OWNER@sessions.test', 'right password')).toMatchObject({
      id: ownerId,
      role: 'owner',
    });
    expect(await verifyLogin(database.db, 'owner@sessions.test', 'wrong password')).toBeNull();
    expect(await verifyLogin(database.db, 'nobody@sessions.test', 'right password')).toBeNull();
  });
});

describe('sessions', () => {
  it('store only a hash, live until expiry and end on revocation', async () => {
    const now = new Date();
    const { token, session } = await createSession(database.db, ownerId, 60_000, now);
    expect(token).toMatch(/^ses_/);
    const [row] = await database.db.select().from(userSessions).where(eq(userSessions.id, session.id));
    expect(JSON.stringify(row)).not.toContain(token);
    expect((await findSession(database.db, token, now))?.user.id).toBe(ownerId);
    expect(await findSession(database.db, token, new Date(now.getTime() + 61_000))).toBeNull();
    const altered = `${token.slice(0, -1)}${token.endsWith('x') ? 'y' : 'x'}`;
    expect(await findSession(database.db, altered, now)).toBeNull();
    await revokeSession(database.db, session.id);
    expect(await findSession(database.db, token, now)).toBeNull();
  });

  it('are credentials with every scope for owners, without connections:* for members, and a default organization', async () => {
    const owner = await createSession(database.db, ownerId, 60_000);
    const member = await createSession(database.db, memberId, 60_000);
    const ownerCredential = await sessionCredential(
      database.db,
      (await findSession(database.db, owner.token)) as never,
    );
    const memberCredential = await sessionCredential(
      database.db,
      (await findSession(database.db, member.token)) as never,
    );
    expect(ownerCredential).toMatchObject({ kind: 'session', id: ownerId, firmId, organizationIds: null });
    expect(ownerCredential.scopes.has('connections:write')).toBe(true);
    expect(memberCredential.scopes.has('connections:read')).toBe(false);
    expect(memberCredential.scopes.has('entries:write')).toBe(true);
    expect(ownerCredential.defaultOrganizationId).toEqual(expect.any(String));
  });

  it('canManageApps follows the current role', async () => {
    expect(await canManageApps(database.db, ownerId, firmId)).toBe(true);
    expect(await canManageApps(database.db, memberId, firmId)).toBe(false);
    expect(await canManageApps(database.db, ownerId, '01900000-0000-7000-8000-000000000000')).toBe(false);
  });
});
