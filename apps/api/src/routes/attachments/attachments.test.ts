import { createHash, randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { executableBytes, multipart, receiptPdf, startS3Server } from '@firm/attachments/testing';
import { rowsOf } from '@firm/db';
import { createApiKey } from '@firm/identity';
import { postTransaction } from '@firm/ledger';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';
import { contentDisposition } from './index';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

const MAX = 256 * 1024;
let s3: Awaited<ReturnType<typeof startS3Server>>;
const apps: Record<'postgres' | 's3', TestApp> = {} as never;

beforeAll(async () => {
  s3 = await startS3Server();
  apps.postgres = await createTestApp({ config: { ATTACHMENTS_MAX_BYTES: MAX } });
  apps.s3 = await createTestApp({ config: { ATTACHMENTS_MAX_BYTES: MAX, ATTACHMENTS_STORE: 's3', ...s3.config } });
});
afterAll(async () => {
  await apps.postgres?.close();
  await apps.s3?.close();
  await s3.close();
});

async function stored(t: TestApp, orgId = t.orgId) {
  const [row] = rowsOf<{ blobs: number; chunks: number; attachments: number }>(
    await t.database.db.execute(sql`select
      (select count(*)::int from attachment_blobs where organization_id = ${orgId}) as blobs,
      (select count(*)::int from attachment_chunks where organization_id = ${orgId}) as chunks,
      (select count(*)::int from attachments where organization_id = ${orgId}) as attachments`),
  );
  return row;
}

const upload = (
  t: TestApp,
  data: Buffer,
  filename = 'receipt.pdf',
  fields: Record<string, string> = {},
  headers = {},
) => {
  const form = multipart(fields, { filename, type: 'application/pdf', data });
  return t.app.inject({
    method: 'POST',
    url: '/api/v1/attachments',
    headers: { ...t.orgHeaders, ...form.headers, ...headers },
    payload: form.payload,
  });
};

const contact = async (t: TestApp) => {
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/v1/contacts',
    headers: t.orgHeaders,
    payload: { kind: 'vendor', name: `Vendor ${randomUUID().slice(0, 8)}` },
  });
  return res.json().data.id as string;
};

describe.each(['postgres', 's3'] as const)('attachments on the %s store', (kind) => {
  const t = () => apps[kind];

  it('takes a receipt PDF through the partner API, attaches it and gives back the same bytes', async () => {
    const pdf = await receiptPdf(`Receipt ${kind}`, 100_000);
    const vendor = await contact(t());
    const name = 'Quittung Bäckerei März (1).pdf';
    const res = await upload(t(), pdf, name, { entityType: 'contact', entityId: vendor });
    expect(res.statusCode, res.body).toBe(201);
    const data = res.json().data;
    expect(data).toMatchObject({
      companyId: t().orgId,
      fileName: name,
      contentType: 'application/pdf',
      size: pdf.length,
      sha256: sha(pdf),
      links: [{ entityType: 'contact', entityId: vendor }],
    });
    const got = await t().app.inject({
      method: 'GET',
      url: `/api/v1/attachments/${data.id}/content`,
      headers: t().orgHeaders,
    });
    expect(got.statusCode).toBe(200);
    expect(sha(got.rawPayload)).toBe(sha(pdf));
    expect(got.headers['content-type']).toBe('application/pdf');
    expect(got.headers['content-length']).toBe(String(pdf.length));
    expect(got.headers['x-content-type-options']).toBe('nosniff');
    expect(got.headers['content-disposition']).toBe(
      `attachment; filename="Quittung B_ckerei M_rz (1).pdf"; filename*=UTF-8''Quittung%20B%C3%A4ckerei%20M%C3%A4rz%20%281%29.pdf`,
    );
    // The path form sees the same.
    const viaPath = await t().app.inject({
      method: 'GET',
      url: `/api/v1/companies/${t().orgId}/attachments?entityType=contact&entityId=${vendor}`,
      headers: t().auth,
    });
    expect(viaPath.json().data.map((a: { id: string }) => a.id)).toEqual([data.id]);
    const audit = rowsOf<{ action: string }>(
      await t().database.db.execute(sql`select action from audit_events
        where organization_id = ${t().orgId} and resource_id = ${data.id} order by created_at`),
    );
    expect(audit.map((a) => a.action)).toEqual(['attachment.created', 'attachment.downloaded']);
  });

  it('refuses an executable renamed .pdf with 415 naming the type found, storing nothing', async () => {
    const before = await stored(t());
    const res = await upload(t(), executableBytes(100_000), 'invoice.pdf');
    expect(res.statusCode).toBe(415);
    expect(res.json().error.code).toBe('UNSUPPORTED_FILE_TYPE');
    expect(res.json().error.message).toContain('application/x-msdownload');
    expect(await stored(t())).toEqual(before);
  });

  it('refuses a file over the limit with 413, storing nothing', async () => {
    const before = await stored(t());
    // Within the form's slack, so the stream itself is what passes the limit.
    const res = await upload(t(), await receiptPdf('Too big', MAX + 10_000), 'big.pdf');
    expect(res.statusCode).toBe(413);
    expect(res.json().error.code).toBe('PAYLOAD_TOO_LARGE');
    // Refused from its Content-Length before it is read.
    const huge = await upload(t(), await receiptPdf('Huge', MAX * 2), 'huge.pdf');
    expect(huge.statusCode).toBe(413);
    expect(await stored(t())).toEqual(before);
  });

  it('leaves nothing behind when the client cuts the upload off halfway', async () => {
    const before = await stored(t());
    await t()
      .app.listen({ port: 0, host: '127.0.0.1' })
      .catch(() => undefined);
    const { port } = t().app.server.address() as AddressInfo;
    const form = multipart({}, { filename: 'cut.pdf', data: await receiptPdf('Cut off', 200_000) });
    await new Promise<void>((resolve) => {
      const req = httpRequest({
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/api/v1/attachments',
        headers: { ...t().orgHeaders, ...form.headers, 'content-length': String(form.payload.length) },
      });
      req.on('error', () => resolve());
      req.on('close', () => resolve());
      req.write(form.payload.subarray(0, 120_000), () => setTimeout(() => req.destroy(), 200));
    });
    // The server notices the cut and removes what it wrote.
    for (let i = 0; i < 50 && JSON.stringify(await stored(t())) !== JSON.stringify(before); i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(await stored(t())).toEqual(before);
  });

  it('deletes: 404 after, the file gone when nothing posted refers to it', async () => {
    const pdf = await receiptPdf(`Delete me ${kind}`);
    const id = (await upload(t(), pdf)).json().data.id;
    const del = await t().app.inject({ method: 'DELETE', url: `/api/v1/attachments/${id}`, headers: t().orgHeaders });
    expect(del.statusCode, del.body).toBe(200);
    expect(del.json().data).toEqual({ id, deleted: true, fileRetained: false });
    for (const url of [`/api/v1/attachments/${id}`, `/api/v1/attachments/${id}/content`]) {
      const res = await t().app.inject({ method: 'GET', url, headers: t().orgHeaders });
      expect(res.statusCode).toBe(404);
      expect(res.json().error.code).toBe('ATTACHMENT_NOT_FOUND');
    }
    const [events] = rowsOf<{ n: number }>(
      await t().database.db.execute(sql`select count(*)::int as n from outbox_events
        where organization_id = ${t().orgId} and type = 'attachment.deleted' and payload->>'id' = ${id}`),
    );
    expect(events?.n).toBe(1);
  });
});

describe('Content-Disposition', () => {
  it('quotes an ASCII fallback and gives the name as RFC 5987 filename*', () => {
    expect(contentDisposition('a "b"\\c/../d%.pdf')).toBe(
      `attachment; filename="a _b__c_.._d_.pdf"; filename*=UTF-8''a%20%22b%22%5Cc%2F..%2Fd%25.pdf`,
    );
    expect(contentDisposition('收据.pdf')).toBe(
      `attachment; filename="__.pdf"; filename*=UTF-8''%E6%94%B6%E6%8D%AE.pdf`,
    );
  });
});

describe('attachments: access and input', () => {
  const t = () => apps.postgres;

  it('shows another firm’s attachment as 404 on every route, and its company as 404', async () => {
    const other = await createOtherFirm(t().database.db, `att-${randomUUID().slice(0, 6)}`);
    const id = (await upload(t(), await receiptPdf('Mine'))).json().data.id;
    const theirs = { authorization: other.authorization, 'x-organization-id': other.orgId };
    for (const [method, url, payload] of [
      ['GET', `/api/v1/attachments/${id}`],
      ['GET', `/api/v1/attachments/${id}/content`],
      ['DELETE', `/api/v1/attachments/${id}`],
      ['POST', `/api/v1/attachments/${id}/links`, { entityType: 'contact', entityId: randomUUID() }],
      ['DELETE', `/api/v1/attachments/${id}/links/contact/${randomUUID()}`],
    ] as const) {
      const res = await t().app.inject({ method, url, headers: theirs, ...(payload ? { payload } : {}) });
      expect(res.statusCode, `${method} ${url}`).toBe(404);
    }
    const list = await t().app.inject({ method: 'GET', url: '/api/v1/attachments', headers: theirs });
    expect(list.json().data).toEqual([]);
    // The victim's company through the other firm's key.
    const viaPath = await t().app.inject({
      method: 'GET',
      url: `/api/v1/companies/${t().orgId}/attachments/${id}`,
      headers: { authorization: other.authorization },
    });
    expect(viaPath.statusCode).toBe(404);
    const form = multipart({}, { filename: 'x.pdf', data: await receiptPdf('x') });
    const post = await t().app.inject({
      method: 'POST',
      url: `/api/v1/companies/${t().orgId}/attachments`,
      headers: { authorization: other.authorization, ...form.headers },
      payload: form.payload,
    });
    expect(post.statusCode).toBe(404);
    // Linking to the other firm's record is the record's 404.
    const link = await t().app.inject({
      method: 'POST',
      url: `/api/v1/attachments/${id}/links`,
      headers: t().orgHeaders,
      payload: { entityType: 'journal_entry', entityId: randomUUID() },
    });
    expect(link.statusCode).toBe(404);
    expect(link.json().error.code).toBe('ENTRY_NOT_FOUND');
  });

  it('needs attachments scopes', async () => {
    const { key } = await createApiKey(t().database.db, { firmId: t().demo.firmId, scopes: ['contacts:read'] });
    const headers = { authorization: `Bearer ${key}`, 'x-organization-id': t().orgId };
    const list = await t().app.inject({ method: 'GET', url: '/api/v1/attachments', headers });
    expect(list.statusCode).toBe(403);
    const form = multipart({}, { filename: 'r.pdf', data: await receiptPdf('r') });
    const post = await t().app.inject({
      method: 'POST',
      url: '/api/v1/attachments',
      headers: { ...headers, ...form.headers },
      payload: form.payload,
    });
    expect(post.statusCode).toBe(403);
  });

  it('refuses a body that is not a form, a form without a file, and a half-given record', async () => {
    const json = await t().app.inject({
      method: 'POST',
      url: '/api/v1/attachments',
      headers: t().orgHeaders,
      payload: {},
    });
    expect(json.statusCode).toBe(415);
    const empty = multipart({ note: 'x' }, null);
    const noFile = await t().app.inject({
      method: 'POST',
      url: '/api/v1/attachments',
      headers: { ...t().orgHeaders, ...empty.headers },
      payload: empty.payload,
    });
    expect(noFile.statusCode).toBe(400);
    const half = await upload(t(), await receiptPdf('half'), 'r.pdf', { entityType: 'contact' });
    expect(half.statusCode).toBe(400);
    const badType = await upload(t(), await receiptPdf('bad'), 'r.pdf', {
      entityType: 'planet',
      entityId: randomUUID(),
    });
    expect(badType.statusCode).toBe(400);
    const missing = await upload(t(), await receiptPdf('missing'), 'r.pdf', {
      entityType: 'contact',
      entityId: randomUUID(),
    });
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error.code).toBe('CONTACT_NOT_FOUND');
    const notUuid = await t().app.inject({ method: 'GET', url: '/api/v1/attachments/nope', headers: t().orgHeaders });
    expect(notUuid.statusCode).toBe(404);
    const emptyFile = await upload(t(), Buffer.alloc(0), 'empty.pdf');
    expect(emptyFile.statusCode).toBe(415);
  });

  it('replays a keyed upload and stores its bytes once', async () => {
    const before = await stored(t());
    const pdf = await receiptPdf('Keyed');
    const key = randomUUID();
    const first = await upload(t(), pdf, 'k.pdf', {}, { 'idempotency-key': key });
    const again = await upload(t(), pdf, 'k.pdf', {}, { 'idempotency-key': key });
    expect(first.statusCode).toBe(201);
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toEqual(first.json());
    const other = await upload(t(), await receiptPdf('Other'), 'k.pdf', {}, { 'idempotency-key': key });
    expect(other.statusCode).toBe(422);
    const after = await stored(t());
    expect(after?.attachments).toBe((before?.attachments ?? 0) + 1);
    expect(after?.blobs).toBe((before?.blobs ?? 0) + 1);
  });

  it('links to several records and keeps the file of a deleted attachment a posted entry refers to', async () => {
    const id = (await upload(t(), await receiptPdf('Statement'))).json().data.id;
    const { journalEntryId: entryId } = await t().database.db.transaction((tx) =>
      postTransaction(tx, { firmId: t().demo.firmId, actor: { kind: 'cli', id: 'test' } }, t().orgId, {
        kind: 'journal_entry',
        date: '2026-03-02',
        lines: [
          { accountId: t().account('6300'), debitCents: 4250 },
          { accountId: t().account('1000'), creditCents: 4250 },
        ],
      }),
    );
    const vendor = await contact(t());
    for (const ref of [
      { entityType: 'journal_entry', entityId: entryId },
      { entityType: 'contact', entityId: vendor },
      { entityType: 'contact', entityId: vendor },
    ]) {
      const res = await t().app.inject({
        method: 'POST',
        url: `/api/v1/attachments/${id}/links`,
        headers: t().orgHeaders,
        payload: ref,
      });
      expect(res.statusCode, res.body).toBe(200);
    }
    const one = await t().app.inject({ method: 'GET', url: `/api/v1/attachments/${id}`, headers: t().orgHeaders });
    expect(one.json().data.links).toHaveLength(2);
    const unlink = await t().app.inject({
      method: 'DELETE',
      url: `/api/v1/attachments/${id}/links/contact/${vendor}`,
      headers: t().orgHeaders,
    });
    expect(unlink.json().data.links.map((l: { entityType: string }) => l.entityType)).toEqual(['journal_entry']);
    const posted = await t().app.inject({
      method: 'DELETE',
      url: `/api/v1/attachments/${id}/links/journal_entry/${entryId}`,
      headers: t().orgHeaders,
    });
    expect(posted.statusCode).toBe(409);
    const del = await t().app.inject({ method: 'DELETE', url: `/api/v1/attachments/${id}`, headers: t().orgHeaders });
    expect(del.json().data).toEqual({ id, deleted: true, fileRetained: true });
  });
});
