import { randomUUID } from 'node:crypto';
import { receiptPdf } from '@firm/attachments/testing';
import { insertBankTransaction } from '@firm/banking';
import { createContact, createDocument } from '@firm/documents';
import { rowsOf } from '@firm/db';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';

let t: TestApp;
let checkingId: string;
let other: Awaited<ReturnType<typeof createOtherFirm>>;

beforeAll(async () => {
  t = await createTestApp();
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/v1/bank-accounts',
    headers: t.orgHeaders,
    payload: { accountId: t.account('1000'), institution: 'First Platypus Bank', mask: '0000' },
  });
  expect(res.statusCode, res.body).toBe(201);
  checkingId = res.json().data.id;
  other = await createOtherFirm(t.database.db, 'citing-other');
});
afterAll(() => t.close());

const row = (amountCents: number, description: string) =>
  t.database.db.transaction((tx) =>
    insertBankTransaction(tx, { firmId: t.demo.firmId, actor: { kind: 'test', id: 'tester' } }, t.orgId, {
      bankAccountId: checkingId,
      date: '2026-01-15',
      amountCents,
      description,
      counterparty: null,
      sourceType: 'aggregator_bank_feed',
      externalId: randomUUID(),
    }),
  );

const post = (url: string, payload: object, key: string = randomUUID(), headers: object = t.orgHeaders) =>
  t.app.inject({ method: 'POST', url, headers: { ...headers, 'idempotency-key': key }, payload });

async function upload(text: string, headers: Record<string, string> = t.orgHeaders) {
  const pdf = await receiptPdf(text, 3_000);
  const res = await post(
    '/api/v1/attachments/inline',
    { fileName: 'receipt.pdf', contentBase64: pdf.toString('base64') },
    randomUUID(),
    headers,
  );
  expect(res.statusCode, res.body).toBe(201);
  return res.json().data.id as string;
}

const linksOf = async (attachmentId: string) => {
  const res = await t.app.inject({ method: 'GET', url: `/api/v1/attachments/${attachmentId}`, headers: t.orgHeaders });
  expect(res.statusCode, res.body).toBe(200);
  return (res.json().data.links as { entityType: string; entityId: string }[])
    .map((l) => `${l.entityType}:${l.entityId}`)
    .sort();
};

const linkEvents = async (attachmentId: string) =>
  rowsOf<{ n: number }>(
    await t.database.db.execute(sql`select count(*)::int as n from audit_events
      where organization_id = ${t.orgId} and resource_id = ${attachmentId} and action = 'attachment.linked'`),
  )[0]?.n;

const readRow = async (id: string) => {
  const res = await t.app.inject({ method: 'GET', url: `/api/v1/bank-transactions/${id}`, headers: t.orgHeaders });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data as { status: string; attachments: { id: string; sha256: string }[] };
};

describe('categorizing a bank row citing attachments', () => {
  it('attaches the cited files to the row and its entry, shown on both sides, once per Idempotency-Key', async () => {
    const id = await row(-4_250, 'OFFICE DEPOT #123');
    const receipt = await upload('Receipt: toner $42.50');
    const invoice = await upload('Invoice: toner delivery');
    const body = { accountId: t.account('6100'), reason: 'toner', attachmentIds: [receipt, invoice] };
    const key = randomUUID();
    const res = await post(`/api/v1/bank-transactions/${id}/reclassify`, body, key);
    expect(res.statusCode, res.body).toBe(200);
    const answer = res.json().data;
    expect(answer.status).toBe('categorized');
    expect(answer.attachments.map((a: { id: string }) => a.id).sort()).toEqual([receipt, invoice].sort());
    expect(answer.attachments[0]).toMatchObject({ fileName: 'receipt.pdf', contentType: 'application/pdf' });
    const entryId = answer.journalEntryId as string;
    expect(entryId).toBeTruthy();
    for (const a of [receipt, invoice]) {
      expect(await linksOf(a)).toEqual([`bank_transaction:${id}`, `journal_entry:${entryId}`].sort());
    }
    // From the row's side: its read, its list, and the attachments of the row and of the entry.
    expect((await readRow(id)).attachments.map((a) => a.id).sort()).toEqual([receipt, invoice].sort());
    const list = await t.app.inject({
      method: 'GET',
      url: '/api/v1/bank-transactions?q=OFFICE%20DEPOT',
      headers: t.orgHeaders,
    });
    const listed = list.json().data.find((r: { id: string }) => r.id === id);
    expect(listed.attachments).toHaveLength(2);
    const ofEntry = await t.app.inject({
      method: 'GET',
      url: `/api/v1/attachments?entityType=journal_entry&entityId=${entryId}`,
      headers: t.orgHeaders,
    });
    expect(
      ofEntry
        .json()
        .data.map((a: { id: string }) => a.id)
        .sort(),
    ).toEqual([receipt, invoice].sort());
    expect(await linkEvents(receipt)).toBe(2);

    // The same request again: replayed, nothing linked twice.
    const replay = await post(`/api/v1/bank-transactions/${id}/reclassify`, body, key);
    expect(replay.statusCode).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual(res.json());
    expect(await linkEvents(receipt)).toBe(2);
    expect(await linksOf(receipt)).toHaveLength(2);
  });

  it('cites on a split and on a match to an invoice (the payment it records gets the file too)', async () => {
    const split = await row(-10_000, 'SPLIT ME');
    const receipt = await upload('Receipt: split');
    const res = await post(`/api/v1/bank-transactions/${split}/split`, {
      parts: [
        { accountId: t.account('6100'), amountCents: 6_000 },
        { accountId: t.account('6300'), amountCents: 4_000 },
      ],
      attachmentIds: [receipt],
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data.attachments.map((a: { id: string }) => a.id)).toEqual([receipt]);
    expect(await linksOf(receipt)).toEqual(
      [`bank_transaction:${split}`, `journal_entry:${res.json().data.journalEntryId}`].sort(),
    );

    const ctx = { firmId: t.demo.firmId, actor: { kind: 'test', id: 'tester' } };
    const invoiceId = await t.database.db.transaction(async (tx) => {
      const c = await createContact(tx, ctx, t.orgId, {
        kind: 'customer',
        name: `Customer ${randomUUID().slice(0, 6)}`,
      });
      const i = await createDocument(tx, ctx, t.orgId, 'invoice', {
        contactId: c.id,
        date: '2026-01-02',
        lines: [{ accountId: t.account('4100'), unitPriceCents: 20_000 }],
      });
      return i.id;
    });
    const deposit = await row(20_000, 'CUSTOMER DEPOSIT');
    const remittance = await upload('Remittance advice');
    const matched = await post(`/api/v1/bank-transactions/${deposit}/match`, {
      documents: [{ documentId: invoiceId }],
      attachmentIds: [remittance],
    });
    expect(matched.statusCode, matched.body).toBe(200);
    const paymentId = matched.json().data.lines[0].paymentId as string;
    expect(paymentId).toBeTruthy();
    expect(await linksOf(remittance)).toEqual([`bank_transaction:${deposit}`, `payment:${paymentId}`].sort());
  });

  it('refuses an unknown attachment and another firm’s with 404, writing nothing', async () => {
    const id = await row(-1_500, 'PARKING');
    const ours = await upload('Receipt: parking');
    const theirs = await upload('Their receipt', {
      authorization: other.authorization,
      'x-organization-id': other.orgId,
    });
    for (const foreign of [randomUUID(), theirs]) {
      const res = await post(`/api/v1/bank-transactions/${id}/reclassify`, {
        accountId: t.account('6100'),
        reason: 'parking',
        attachmentIds: [ours, foreign],
      });
      expect(res.statusCode).toBe(404);
      expect(res.json().error).toMatchObject({
        code: 'ATTACHMENT_NOT_FOUND',
        details: [{ field: 'attachmentIds[1]', message: 'not found' }],
      });
      expect((await readRow(id)).status).toBe('unreviewed');
      expect(await linksOf(ours)).toEqual([]);
    }
    // An unknown row is the row's 404, whatever attachments are named.
    const noRow = await post(`/api/v1/bank-transactions/${randomUUID()}/reclassify`, {
      accountId: t.account('6100'),
      reason: 'parking',
      attachmentIds: [randomUUID()],
    });
    expect(noRow.statusCode).toBe(404);
    expect(noRow.json().error.code).toBe('BANK_TRANSACTION_NOT_FOUND');
    // Their attachment is untouched as well.
    const theirsRead = await t.app.inject({
      method: 'GET',
      url: `/api/v1/attachments/${theirs}`,
      headers: { authorization: other.authorization, 'x-organization-id': other.orgId },
    });
    expect(theirsRead.json().data.links).toEqual([]);
    // Malformed lists are refused by the schema.
    for (const attachmentIds of [[], [ours, ours], Array.from({ length: 11 }, () => randomUUID()), ['nope']]) {
      const res = await post(`/api/v1/bank-transactions/${id}/reclassify`, {
        accountId: t.account('6100'),
        reason: 'parking',
        attachmentIds,
      });
      expect(res.statusCode, JSON.stringify(attachmentIds)).toBe(400);
      expect(res.json().error.code).toBe('VALIDATION_ERROR');
    }
  });

  it('links nothing when the categorization is refused', async () => {
    const id = await row(-2_000, 'REFUSED');
    const receipt = await upload('Receipt: refused');
    // The bank account's own ledger account: refused after the attachments were checked.
    const res = await post(`/api/v1/bank-transactions/${id}/reclassify`, {
      accountId: t.account('1000'),
      reason: 'wrong',
      attachmentIds: [receipt],
    });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.code).toBe('INVALID_ACCOUNT');
    expect(await linksOf(receipt)).toEqual([]);
    expect(await linkEvents(receipt)).toBe(0);
    expect((await readRow(id)).attachments).toEqual([]);
    const split = await post(`/api/v1/bank-transactions/${id}/split`, {
      parts: [{ accountId: t.account('6100'), amountCents: 1_999 }],
      attachmentIds: [receipt],
    });
    expect(split.statusCode).toBe(422);
    expect(split.json().error.code).toBe('SPLIT_MISMATCH');
    expect(await linksOf(receipt)).toEqual([]);
  });
});
