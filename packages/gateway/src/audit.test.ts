import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newId } from '@firm/core';
import { agentAuditEvents, type Db, firms, openDatabase } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { and, asc, eq, gt, gte, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AgentAuditEvent,
  type AuditInput,
  type AuditTrail,
  appendAuditEvent,
  GENESIS_HASH,
  hashOf,
  openAuditTrail,
  verifyAuditChains,
} from './audit';
import { LOCAL_AUDIT_KEYS_FILE } from './audit-keys';

const K1 = `k1:${Buffer.alloc(32, 1).toString('base64')}`;
const K2 = `k2:${Buffer.alloc(32, 2).toString('base64')}`;

let database: TestDatabase;
let dir: string;
let trail: AuditTrail;

/** A trail on this file's anchor directory: each one stands for a process of its own (its own anchor store). */
const trailOf = (keys = K1): Promise<AuditTrail> =>
  openAuditTrail({ keys, dataDir: dir, anchorDir: join(dir, 'anchors'), production: false });

beforeAll(async () => {
  database = await createTestDatabase();
  dir = await mkdtemp(join(tmpdir(), 'audit-test-'));
  trail = await trailOf();
});
afterAll(async () => {
  await database.close();
  await rm(dir, { recursive: true, force: true });
});

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

/** Appends n events and waits for their anchor, which follows in the background. */
async function appendMany(firmId: string, n: number, on: AuditTrail = trail, db: Db = database.db) {
  for (let i = 1; i <= n; i++) await appendAuditEvent(db, on, input(firmId, `op.${i}`));
  await on.anchors.settled();
}

const at = (firmId: string, seq: number) => and(eq(agentAuditEvents.firmId, firmId), eq(agentAuditEvents.seq, seq));

async function chainOf(firmId: string): Promise<AgentAuditEvent[]> {
  return database.db
    .select()
    .from(agentAuditEvents)
    .where(eq(agentAuditEvents.firmId, firmId))
    .orderBy(asc(agentAuditEvents.seq));
}

/** What a database writer without the key can do: alter events and recompute a plain SHA-256 chain over them. */
async function rechainWithoutKey(firmId: string, fromSeq: number, keyId: (e: AgentAuditEvent) => string | null) {
  let prevHash = GENESIS_HASH;
  for (const e of await chainOf(firmId)) {
    if (e.seq >= fromSeq) {
      const forged = { ...e, entityId: e.seq === fromSeq ? 'someone-else' : e.entityId, prevHash };
      const hash = hashOf(forged);
      await database.db
        .update(agentAuditEvents)
        .set({ entityId: forged.entityId, prevHash, hash, keyId: keyId(e) })
        .where(at(firmId, e.seq));
      prevHash = hash;
    } else prevHash = e.hash;
  }
}

describe('agent audit chain', () => {
  it('stays one unbroken chain when many appends of one firm run at once in one process', async () => {
    const firmId = await newFirm('audit-concurrent');
    const events = await Promise.all(
      Array.from({ length: 40 }, (_, i) => appendAuditEvent(database.db, trail, input(firmId, `op.${i}`))),
    );
    expect(events.map((e) => e.seq).sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect(await verifyAuditChains(database.db, trail, { firmId })).toMatchObject({ ok: true, events: 40, breaks: [] });
  });

  it('stays one unbroken chain when two processes append to the same firm at once', async () => {
    if (!database.url) return; // two connections to one database need Postgres
    const other = openDatabase({ url: database.url, poolMax: 4, poolMode: database.poolMode });
    const otherTrail = await trailOf();
    try {
      const firmId = await newFirm('audit-two-processes');
      // Each side learns the head, then both append while the other's writes make its head stale.
      await appendAuditEvent(database.db, trail, input(firmId, 'first'));
      await appendAuditEvent(other.db, otherTrail, input(firmId, 'second'));
      const appends = Array.from({ length: 30 }, (_, i) =>
        i % 2
          ? appendAuditEvent(other.db, otherTrail, input(firmId, `op.${i}`))
          : appendAuditEvent(database.db, trail, input(firmId, `op.${i}`)),
      );
      const events = await Promise.all(appends);
      expect(new Set(events.map((e) => e.seq)).size).toBe(30);
      expect(await verifyAuditChains(database.db, trail, { firmId })).toMatchObject({
        ok: true,
        events: 32,
        breaks: [],
      });
    } finally {
      await other.close();
    }
  });

  it('does not let one firm wait for or link to another', async () => {
    const a = await newFirm('audit-firm-a');
    const b = await newFirm('audit-firm-b');
    const [ea, eb] = await Promise.all([
      appendAuditEvent(database.db, trail, input(a, 'a')),
      appendAuditEvent(database.db, trail, input(b, 'b')),
    ]);
    expect(ea?.seq).toBe(1);
    expect(eb?.seq).toBe(1);
    expect((await verifyAuditChains(database.db, trail, { firmId: a })).ok).toBe(true);
  });

  it('signs each event with the current audit key and names the key beside it', async () => {
    const firmId = await newFirm('audit-keyed');
    const event = await appendAuditEvent(database.db, trail, input(firmId, 'clients.list'));
    expect(event).toMatchObject({ seq: 1, keyId: 'k1', prevHash: GENESIS_HASH });
    expect(event.hash).toMatch(/^[0-9a-f]{64}$/);
    // Not the plain hash of the same fields: that is what anyone could recompute.
    expect(event.hash).not.toBe(hashOf(event));
    const [stored] = await chainOf(firmId);
    expect(stored).toMatchObject({ keyId: 'k1', hash: event.hash });
  });
});

describe('tail cuts and the anchor', () => {
  it('reports a cut tail, naming the missing events, after the last five were deleted in SQL', async () => {
    const firmId = await newFirm('audit-tail-cut');
    await appendMany(firmId, 10);
    expect(await verifyAuditChains(database.db, trail, { firmId })).toMatchObject({ ok: true, breaks: [] });

    await database.db.execute(sql`delete from agent_audit_events where firm_id = ${firmId} and seq > 5`);
    const result = await verifyAuditChains(database.db, trail, { firmId });
    expect(result.ok).toBe(false);
    expect(result.breaks).toEqual([
      {
        firmId,
        seq: 6,
        id: null,
        kind: 'tail_cut',
        problem: expect.stringMatching(
          /^tail cut: events 6\.\.10 missing \(the anchor written at .+ records event 10\)$/,
        ),
      },
    ]);
    expect(result.chains).toEqual([
      expect.objectContaining({ firmId, events: 5, head: expect.objectContaining({ seq: 5 }), keyedFrom: 1 }),
    ]);
    expect(result.chains[0]?.anchor).toMatchObject({ seq: 10 });
  });

  it('reports a chain deleted whole, which leaves only its anchor', async () => {
    const firmId = await newFirm('audit-deleted-whole');
    await appendMany(firmId, 3);
    await database.db.delete(agentAuditEvents).where(eq(agentAuditEvents.firmId, firmId));
    const all = await verifyAuditChains(database.db, trail);
    expect(all.ok).toBe(false);
    expect(all.breaks).toContainEqual(
      expect.objectContaining({
        firmId,
        kind: 'tail_cut',
        problem: expect.stringMatching(/^tail cut: events 1\.\.3 missing/),
      }),
    );
  });

  it('goes on after the anchor once events were cut, so the gap stays visible after more events', async () => {
    const firmId = await newFirm('audit-cut-then-append');
    await appendMany(firmId, 10);
    await database.db
      .delete(agentAuditEvents)
      .where(and(eq(agentAuditEvents.firmId, firmId), gt(agentAuditEvents.seq, 5)));
    await appendMany(firmId, 3);
    const result = await verifyAuditChains(database.db, trail, { firmId });
    expect(result.breaks.map((b) => [b.kind, b.problem])).toEqual([['gap', 'gap: events 6..10 missing']]);
    expect(result.chains[0]).toMatchObject({ events: 8, head: { seq: 13 }, anchor: { seq: 13 } });

    if (!database.url) return; // a process that starts afresh needs a connection of its own
    // A process that knows nothing of this chain yet (a restart) reads the anchor as well as the last event: it does
    // not fill the numbers the anchor vouches for with new events.
    await database.db
      .delete(agentAuditEvents)
      .where(and(eq(agentAuditEvents.firmId, firmId), gte(agentAuditEvents.seq, 11)));
    const restarted = openDatabase({ url: database.url, poolMax: 2, poolMode: database.poolMode });
    try {
      const next = await appendAuditEvent(restarted.db, await trailOf(), input(firmId, 'after.restart'));
      expect(next.seq).toBe(14);
    } finally {
      await restarted.close();
    }
    const after = await verifyAuditChains(database.db, trail, { firmId });
    expect(after.breaks.map((b) => b.problem)).toEqual(['gap: events 6..13 missing']);
  });

  it('anchors in the background, and stops appending while anchors cannot be written, until they can', async () => {
    const firmId = await newFirm('audit-anchor-unwritable');
    await appendMany(firmId, 1);
    const firmDir = join(dir, 'anchors', firmId);
    await rm(firmDir, { recursive: true });
    // A file where the firm's directory should be: every anchor write fails.
    await writeFile(firmDir, 'not a directory');
    await appendAuditEvent(database.db, trail, input(firmId, 'op.2'));
    await trail.anchors.settled();
    expect(trail.anchors.failed()).toBeTruthy();
    await expect(appendAuditEvent(database.db, trail, input(firmId, 'op.3'))).rejects.toThrow();
    expect((await chainOf(firmId)).map((e) => e.seq)).toEqual([1, 2]);
    await rm(firmDir);
    await appendMany(firmId, 1);
    expect(trail.anchors.failed()).toBeNull();
    expect(await readdir(firmDir)).toEqual(['0000000000000003.json']);
    expect(await verifyAuditChains(database.db, trail, { firmId })).toMatchObject({ ok: true, breaks: [] });
  });

  it('keeps the anchor monotonic while several connections append at once', async () => {
    const firmId = await newFirm('audit-anchor-monotonic');
    const extra = database.url
      ? [1, 2, 3].map(() => openDatabase({ url: database.url as string, poolMax: 3, poolMode: database.poolMode }))
      : [];
    const writers = await Promise.all(
      [database.db, ...extra.map((d) => d.db)].map(async (db) => ({ db, trail: await trailOf() })),
    );
    const watcher = await trailOf();
    const seen: number[] = [];
    let appending = true;
    const watching = (async () => {
      while (appending) {
        seen.push((await watcher.anchors.latest(firmId))?.seq ?? 0);
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    })();
    try {
      const events = await Promise.all(
        Array.from({ length: 80 }, (_, i) => {
          const w = writers[i % writers.length] as { db: Db; trail: AuditTrail };
          return appendAuditEvent(w.db, w.trail, input(firmId, `op.${i}`));
        }),
      );
      await Promise.all(writers.map((w) => w.trail.anchors.settled()));
      appending = false;
      await watching;
      expect(new Set(events.map((e) => e.seq)).size).toBe(80);
    } finally {
      appending = false;
      await Promise.all(extra.map((d) => d.close()));
    }
    expect(seen.length).toBeGreaterThan(1);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    expect((await watcher.anchors.latest(firmId))?.seq).toBe(80);
    // Superseded anchors are gone, and nothing was left half written.
    expect(await readdir(join(dir, 'anchors', firmId))).toEqual(['0000000000000080.json']);
    expect(await verifyAuditChains(database.db, trail, { firmId })).toMatchObject({ ok: true, breaks: [] });
  });

  it('reports an anchor file that was altered', async () => {
    const firmId = await newFirm('audit-anchor-altered');
    await appendMany(firmId, 2);
    const file = join(dir, 'anchors', firmId, '0000000000000002.json');
    const anchor = JSON.parse(await readFile(file, 'utf8'));
    await writeFile(file, JSON.stringify({ ...anchor, hash: 'f'.repeat(64) }));
    const result = await verifyAuditChains(database.db, trail, { firmId });
    expect(result.breaks).toEqual([
      expect.objectContaining({ kind: 'anchor_invalid', problem: expect.stringMatching(/does not match its HMAC/) }),
    ]);
  });
});

describe('altered and forged events', () => {
  it('names an event whose content was altered', async () => {
    const firmId = await newFirm('audit-altered');
    await appendMany(firmId, 6);
    await database.db.update(agentAuditEvents).set({ outcome: 'refused' }).where(at(firmId, 3));
    const result = await verifyAuditChains(database.db, trail, { firmId });
    expect(result.ok).toBe(false);
    expect(result.breaks).toEqual([
      expect.objectContaining({
        seq: 3,
        kind: 'altered',
        problem: expect.stringMatching(
          /^event 3 \(.+\) does not match its HMAC under audit key k1: it was altered or forged$/,
        ),
      }),
    ]);
  });

  it('refuses a plain SHA-256 chain recomputed over altered events without the key', async () => {
    const firmId = await newFirm('audit-rechained');
    await appendMany(firmId, 6);
    await rechainWithoutKey(firmId, 3, (e) => e.keyId);
    const kept = await verifyAuditChains(database.db, trail, { firmId });
    expect(kept.ok).toBe(false);
    expect(kept.breaks.map((b) => [b.kind, b.seq])).toEqual([
      ['altered', 3],
      ['altered', 4],
      ['altered', 5],
      ['altered', 6],
      ['anchor_mismatch', 6],
    ]);

    // Dropping the key ids to pass as events written before keying does not help.
    await rechainWithoutKey(firmId, 4, () => null);
    const unkeyed = await verifyAuditChains(database.db, trail, { firmId });
    expect(unkeyed.breaks.map((b) => [b.kind, b.seq])).toEqual([
      ['altered', 3],
      ['unkeyed', 4],
      ['unkeyed', 5],
      ['unkeyed', 6],
      ['anchor_mismatch', 6],
    ]);
    expect(unkeyed.breaks[1]?.problem).toMatch(/has no audit key id, though the chain is keyed from event 1/);

    // Nor does rewriting the whole chain as plain SHA-256: it checks in itself, but not against its anchor.
    await rechainWithoutKey(firmId, 1, () => null);
    const whole = await verifyAuditChains(database.db, trail, { firmId });
    expect(whole.breaks).toEqual([
      expect.objectContaining({
        kind: 'anchor_mismatch',
        seq: 6,
        problem: 'event 6 is not the event its anchor records: the chain was rewritten up to it',
      }),
    ]);
  });

  it('reports a gap in the sequence', async () => {
    const firmId = await newFirm('audit-gap');
    await appendMany(firmId, 6);
    await database.db.delete(agentAuditEvents).where(at(firmId, 3));
    expect((await verifyAuditChains(database.db, trail, { firmId })).breaks).toEqual([
      expect.objectContaining({ seq: 3, kind: 'gap', problem: 'gap: event 3 missing' }),
    ]);
    await database.db.delete(agentAuditEvents).where(at(firmId, 4));
    expect((await verifyAuditChains(database.db, trail, { firmId })).breaks).toEqual([
      expect.objectContaining({ seq: 3, kind: 'gap', problem: 'gap: events 3..4 missing' }),
    ]);
  });

  it('reports an event inserted in place of another', async () => {
    const firmId = await newFirm('audit-replaced');
    await appendMany(firmId, 4);
    await database.db.delete(agentAuditEvents).where(at(firmId, 3));
    // A genuine event of another place in the chain, copied here: its HMAC binds its number and link.
    const [second] = await database.db.select().from(agentAuditEvents).where(at(firmId, 2));
    await database.db.insert(agentAuditEvents).values({ ...(second as AgentAuditEvent), id: newId(), seq: 3 });
    const result = await verifyAuditChains(database.db, trail, { firmId });
    expect(result.breaks.map((b) => [b.kind, b.seq])).toEqual([
      ['link', 3],
      ['altered', 3],
      ['link', 4],
    ]);
  });
});

describe('audit keys', () => {
  it('names events whose key id is not configured', async () => {
    const firmId = await newFirm('audit-unknown-key');
    await appendMany(firmId, 3);
    const result = await verifyAuditChains(database.db, await trailOf(K2), { firmId });
    expect(result.ok).toBe(false);
    expect(result.breaks.map((b) => [b.kind, b.seq])).toEqual([
      ['unknown_key', 1],
      ['unknown_key', 2],
      ['unknown_key', 3],
      ['unknown_key', 3],
    ]);
    expect(result.breaks[0]?.problem).toMatch(
      /^event 1 \(.+\) is signed with audit key k1, which is not configured \(AUDIT_HMAC_KEYS\): it cannot be checked$/,
    );
    expect(result.breaks[3]?.problem).toMatch(/^the anchor of event 3 \(.+\) is signed with audit key k1/);
  });

  it('verifies old events under the old key and new ones under the new after a rotation', async () => {
    const firmId = await newFirm('audit-rotation');
    await appendMany(firmId, 3, await trailOf(K1));
    const rotated = await trailOf(`${K2},${K1}`);
    await appendMany(firmId, 3, rotated);
    expect((await chainOf(firmId)).map((e) => e.keyId)).toEqual(['k1', 'k1', 'k1', 'k2', 'k2', 'k2']);
    expect(await verifyAuditChains(database.db, rotated, { firmId })).toMatchObject({ ok: true, breaks: [] });
    // Each event is checked under its own key: without k1 the old ones cannot be, without k2 the new ones.
    const withoutOld = await verifyAuditChains(database.db, await trailOf(K2), { firmId });
    expect(withoutOld.breaks.map((b) => [b.kind, b.seq])).toEqual([
      ['unknown_key', 1],
      ['unknown_key', 2],
      ['unknown_key', 3],
    ]);
    const withoutNew = await verifyAuditChains(database.db, await trailOf(K1), { firmId });
    expect(withoutNew.breaks.map((b) => [b.kind, b.seq])).toEqual([
      ['unknown_key', 4],
      ['unknown_key', 5],
      ['unknown_key', 6],
      ['unknown_key', 6],
    ]);
  });

  it('a fresh development setup works without configuration: a key made once in the data directory', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'audit-fresh-'));
    try {
      // Processes starting together agree on one key.
      const [fresh, alongside] = await Promise.all([
        openAuditTrail({ dataDir, production: false }),
        openAuditTrail({ dataDir, production: false }),
      ]);
      expect(fresh.keys.current).toMatch(/^local-[0-9a-f]{8}$/);
      expect(alongside.keys.current).toBe(fresh.keys.current);
      expect((await stat(join(dataDir, LOCAL_AUDIT_KEYS_FILE))).mode & 0o777).toBe(0o600);
      expect(fresh.anchors.dir).toBe(join(dataDir, 'audit-anchors'));

      const firmId = await newFirm('audit-fresh');
      await appendMany(firmId, 2, fresh);
      const restarted = await openAuditTrail({ dataDir, production: false });
      expect(restarted.keys.current).toBe(fresh.keys.current);
      expect(await verifyAuditChains(database.db, restarted, { firmId })).toMatchObject({ ok: true, breaks: [] });
      expect(await readdir(join(dataDir, 'audit-anchors', firmId))).toEqual(['0000000000000002.json']);

      await expect(openAuditTrail({ dataDir, production: true })).rejects.toThrow(
        /^AUDIT_HMAC_KEYS: required when NODE_ENV=production/,
      );
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe('chains written before keying', () => {
  it('verify as before up to where keyed protection begins, which the result names', async () => {
    const firmId = await newFirm('audit-legacy');
    // Events as they were written before the chain was keyed: a plain SHA-256 chain without key ids.
    let prevHash = GENESIS_HASH;
    for (let seq = 1; seq <= 3; seq++) {
      const event = { ...input(firmId, `legacy.${seq}`), id: newId(), seq, createdAt: new Date(), prevHash };
      prevHash = hashOf(event);
      await database.db.insert(agentAuditEvents).values({ ...event, hash: prevHash, keyId: null });
    }
    expect(await verifyAuditChains(database.db, trail, { firmId })).toMatchObject({
      ok: true,
      chains: [{ keyedFrom: null, events: 3 }],
    });
    await appendMany(firmId, 2);
    const keyed = await verifyAuditChains(database.db, trail, { firmId });
    expect(keyed).toMatchObject({ ok: true, breaks: [], chains: [{ keyedFrom: 4, events: 5, anchor: { seq: 5 } }] });
    expect((await chainOf(firmId))[3]?.prevHash).toBe(prevHash);

    await database.db.update(agentAuditEvents).set({ operation: 'legacy.edited' }).where(at(firmId, 2));
    expect((await verifyAuditChains(database.db, trail, { firmId })).breaks).toEqual([
      expect.objectContaining({
        seq: 2,
        kind: 'altered',
        problem: expect.stringMatching(/^event 2 \(.+\) does not match its SHA-256 hash: it was altered$/),
      }),
    ]);
  });
});
