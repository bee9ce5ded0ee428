import { randomBytes } from 'node:crypto';
import { type Db, users } from '@firm/db';

/** A firm owner for tests of the authorization flow, whose every state is bound to a person. */
export async function addFirmOwner(db: Db, firmId: string): Promise<string> {
  const [row] = await db
    .insert(users)
    .values({
      firmId,
      email: `owner-${randomBytes(6).toString('hex')}@firm.test`,
      name: 'Firm owner',
      role: 'owner',
      passwordHash: 'not used: this owner never signs in',
    })
    .returning({ id: users.id });
  return (row as { id: string }).id;
}
