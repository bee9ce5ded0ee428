import { firms, openDatabase } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AuditInput, appendAuditEvent, verifyAuditChains } from './audit';

let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

function input(firmId: string, operation: string): AuditInput {
  return {
    firmId,
    organizationId: null,
    actorKind: 'oauth_token',
    actorId: 'family-1',
    actorName: null,
    operation,
    entityType: null,
    entityId: null,
    outcome: 'succeeded',
    statusCode: 200,
    errorCode: null,
    requestId: null,
    dryRun: false,
    syncTokenBefore: null,
    syncTokenAfter: null,
  };
}

async function newFirm(slug: string): Promise<string> {
  const [firm] = await database.db.insert(firms).values({ slug, name: slug }).returning();
  return firm?.id as string;
}

describe('agent audit chain', () => {
  it('stays one unbroken chain when many appends of one firm run at once in one process', async () => {
    const firmId = await newFirm('audit-concurrent');
    const events = await Promise.all(
      Array.from({ length: 40 }, (_, i) => appendAuditEvent(database.db, input(firmId, `op.${i}`))),
    );
    expect(events.map((e) => e.seq).sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect(await verifyAuditChains(database.db, { firmId })).toMatchObject({ ok: true, events: 40, breaks: [] });
  });

  it('stays one unbroken chain when two processes append to the same firm at once', async () => {
    if (!database.url) return; // two connections to one database need Postgres
    const other = openDatabase({ url: database.url, poolMax: 4 });
    try {
      const firmId = await newFirm('audit-two-processes');
      // Each side learns the head, then both append while the other's writes make its head stale.
      await appendAuditEvent(database.db, input(firmId, 'first'));
      await appendAuditEvent(other.db, input(firmId, 'second'));
      const appends = Array.from({ length: 30 }, (_, i) =>
        appendAuditEvent(i % 2 ? other.db : database.db, input(firmId, `op.${i}`)),
      );
      const events = await Promise.all(appends);
      expect(new Set(events.map((e) => e.seq)).size).toBe(30);
      expect(await verifyAuditChains(database.db, { firmId })).toMatchObject({ ok: true, events: 32, breaks: [] });
    } finally {
      await other.close();
    }
  });

  it('does not let one firm wait for or link to another', async () => {
    const a = await newFirm('audit-firm-a');
    const b = await newFirm('audit-firm-b');
    const [ea, eb] = await Promise.all([
      appendAuditEvent(database.db, input(a, 'a')),
      appendAuditEvent(database.db, input(b, 'b')),
    ]);
    expect(ea?.seq).toBe(1);
    expect(eb?.seq).toBe(1);
    expect((await verifyAuditChains(database.db, { firmId: a })).ok).toBe(true);
  });
});
